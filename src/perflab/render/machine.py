"""The machine a run ran on, as aligned text (shared by doctor and show)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perflab.model.records import ASLR_MODES

UNKNOWN = "unknown"


def table(rows: Sequence[tuple[str, ...]], indent: str = "  ") -> list[str]:
    """Aligned columns, each but the last padded to its widest cell."""
    widths = [max(len(cell) for cell in column) for column in zip(*rows)]
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths))
             + "  " + row[-1]).rstrip() for row in rows]


def text(value: Any) -> str:
    return UNKNOWN if value is None or value == "" else str(value)


def _gib(n: int | None) -> str:
    return UNKNOWN if n is None else f"{n / 2**30:.1f} GiB"


def render_machine(env: Mapping[str, Any]) -> str:
    """The facts a reader needs to judge whether results from this machine are comparable."""
    kernel = env.get("kernel") or {}
    cpu = env.get("cpu") or {}
    smt: Any = cpu.get("smt") or {}  # JSON values: they key the bool lookups below
    freq: Any = env.get("cpufreq") or {}
    memory = env.get("memory") or {}

    online = text(cpu.get("online"))
    if cpu.get("online_count") is not None:
        online += f" ({cpu['online_count']})"
    active = {True: "active", False: "inactive"}.get(smt.get("active"))
    smt_text = text(smt.get("control")) + (f", {active}" if active else "")
    nodes = env.get("numa_nodes")
    if freq.get("driver") is None and not freq.get("governors") and freq.get("boost") is None:
        freq_text = "not exposed (frequency is controlled by the host or firmware)"
    else:
        boost = {True: "on", False: "off"}.get(freq.get("boost"), UNKNOWN)
        governors = ", ".join(freq.get("governors") or []) or UNKNOWN
        freq_text = (f"driver {text(freq.get('driver'))}, governor {governors}, "
                     f"boost {boost}")
    aslr = env.get("aslr")
    aslr_text = text(aslr) + (f" ({ASLR_MODES[aslr]})" if aslr in ASLR_MODES else "")
    load = env.get("loadavg")
    load_text = " ".join(f"{x:.2f}" for x in load) + " (1, 5, 15 min)" if load else UNKNOWN
    if env.get("loadavg_end"):
        load_text += " at the start; " + " ".join(f"{x:.2f}" for x in env["loadavg_end"]) + " at the end"
    rows = [
        ("host", text(env.get("hostname"))),
        ("kernel", " ".join(filter(None, (kernel.get("release"), kernel.get("version"))))
         or UNKNOWN),
        ("cmdline", text(kernel.get("cmdline"))),
        ("cpu", text(cpu.get("model"))),
        ("online cpus", online),
        ("smt", smt_text),
        ("numa nodes", UNKNOWN if nodes is None else ", ".join(map(str, nodes)) or "none"),
        ("cpufreq", freq_text),
        ("aslr", aslr_text),
        ("nmi watchdog", text(env.get("nmi_watchdog"))),
        ("perf_event_paranoid", text(env.get("perf_event_paranoid"))),
        ("load", load_text),
        ("memory", f"{_gib(memory.get('total_bytes'))} total, "
                   f"{_gib(memory.get('available_bytes'))} available"),
        ("perflab", f"{text(env.get('perflab_version'))} "
                    f"(Python {text(env.get('python_version'))})"),
    ]
    return "\n".join(["Machine", *table(rows)])
