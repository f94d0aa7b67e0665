"""The machine a run ran on, as aligned text (shared by doctor and show)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from perflab.model.records import ASLR_MODES

UNKNOWN = "unknown"


def table(rows: Sequence[tuple[str, ...]], indent: str = "  ", width: int | None = None) -> list[str]:
    """Aligned columns, each but the last padded to its widest cell; the last column
    wraps at ``width`` (at spaces) onto lines aligned under it."""
    widths = [max(len(cell) for cell in column) for column in zip(*rows)]
    out = []
    for row in rows:
        lead = indent + "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths)) + "  "
        room = (width or 0) - len(lead)
        parts = textwrap.wrap(row[-1], room, break_long_words=False) if width and room > 20 else [row[-1]]
        out += [((lead if i == 0 else " " * len(lead)) + part).rstrip() for i, part in enumerate(parts or [""])]
    return out


def text(value: Any) -> str:
    return UNKNOWN if value is None or value == "" else str(value)


def _gib(n: int | None) -> str:
    return UNKNOWN if n is None else f"{n / 2**30:.1f} GiB"


def render_machine(env: Mapping[str, Any], width: int | None = None) -> str:
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
    if env.get("settle_s") is not None:   # runs recorded before perflab settled have none
        rows.append(("settle", f"{env['settle_s']:g} s idle before the first sample"))
    return "\n".join(["Machine", *table(rows, width=width)])
