"""A snapshot of the machine a run measured on, read from /proc and /sys only.

Every run stores this snapshot so a result can later be explained ("boost was on",
"the load was 3.5"). Everything is read below ``root`` so tests can replay a captured
machine from a fixture directory; a file that is missing, unreadable or malformed
gives ``None`` for its value, because a half-known machine is still worth recording.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import perflab

T = TypeVar("T")

_CPU = "sys/devices/system/cpu"

# /proc/cpuinfo names the CPU differently on each architecture; first match wins.
_MODEL_KEYS = ("model name", "Processor", "cpu model", "cpu", "uarch", "Hardware")


# -- pure parsers ---------------------------------------------------------------

def parse_cpu_list(text: str) -> list[int]:
    """Expand the kernel's cpulist syntax ("0-3,5,7-8"); an empty list is "".

    Raises ValueError on anything else, so a corrupt file is not mistaken for "no CPUs".
    """
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        start, end = int(first), int(last) if dash else int(first)
        if end < start:
            raise ValueError(f"descending range in cpu list: {part!r}")
        cpus.extend(range(start, end + 1))
    return cpus


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as bytes per field (the kernel prints kB, meaning KiB)."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        words = rest.split()
        if not sep or not words:
            continue
        try:
            number = int(words[0])
        except ValueError:
            continue
        fields[key.strip()] = number * 1024 if words[1:] == ["kB"] else number
    return fields


def parse_loadavg(text: str) -> list[float]:
    """The 1, 5 and 15 minute load averages from /proc/loadavg."""
    words = text.split()
    if len(words) < 3:
        raise ValueError(f"too few fields in loadavg: {text!r}")
    return [float(w) for w in words[:3]]


def parse_cpuinfo_model(text: str) -> str | None:
    """The CPU's name from /proc/cpuinfo, whatever the architecture calls it."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if sep and value and key not in fields:
            fields[key] = value
    for key in _MODEL_KEYS:
        if key in fields:
            return fields[key]
    if "CPU implementer" in fields and "CPU part" in fields:  # arm64 names no model
        return f"implementer {fields['CPU implementer']} part {fields['CPU part']}"
    return None


# -- reading files ----------------------------------------------------------------

def _read(root: Path, rel: str) -> str | None:
    """The stripped text of ``root/rel``, or None if it cannot be read."""
    try:
        return (root / rel).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _parsed(text: str | None, parse: Callable[[str], T]) -> T | None:
    """``parse(text)``, or None when the text is missing or does not parse."""
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError:
        return None


def _flag(text: str | None) -> bool | None:
    """A sysfs boolean ("0"/"1")."""
    return {"1": True, "0": False}.get(text) if text is not None else None


def read_loadavg(root: Path = Path("/")) -> list[float] | None:
    """The load averages now; the runner records them again at the end of a run."""
    return _parsed(_read(root, "proc/loadavg"), parse_loadavg)


def _cpufreq(root: Path, online: list[int]) -> dict[str, Any]:
    """Driver, governors and boost state; all unknown inside most VMs."""
    drivers = (_read(root, f"{_CPU}/cpu{n}/cpufreq/scaling_driver") for n in online)
    governors = {_read(root, f"{_CPU}/cpu{n}/cpufreq/scaling_governor") for n in online}
    boost = _flag(_read(root, f"{_CPU}/cpufreq/boost"))
    if boost is None:  # intel_pstate says the opposite: no_turbo=1 means boost off
        no_turbo = _flag(_read(root, f"{_CPU}/intel_pstate/no_turbo"))
        boost = None if no_turbo is None else not no_turbo
    if boost is None and online:  # amd-pstate exposes boost per policy
        boost = _flag(_read(root, f"{_CPU}/cpu{online[0]}/cpufreq/boost"))
    return {
        "driver": next((d for d in drivers if d), None),
        "governors": sorted(g for g in governors if g),
        "boost": boost,
    }


def capture(root: Path = Path("/")) -> dict[str, Any]:
    """A JSON-serialisable snapshot of the machine below ``root``; never raises."""
    online_text = _read(root, f"{_CPU}/online")
    online = _parsed(online_text, parse_cpu_list)
    meminfo = _parsed(_read(root, "proc/meminfo"), parse_meminfo) or {}
    return {
        "hostname": _read(root, "proc/sys/kernel/hostname"),
        "kernel": {
            "release": _read(root, "proc/sys/kernel/osrelease"),
            "version": _read(root, "proc/sys/kernel/version"),
            "cmdline": _read(root, "proc/cmdline"),
        },
        "cpu": {
            "model": _parsed(_read(root, "proc/cpuinfo"), parse_cpuinfo_model),
            "online": online_text,
            "online_count": len(online) if online is not None else None,
            "smt": {
                "control": _read(root, f"{_CPU}/smt/control"),
                "active": _flag(_read(root, f"{_CPU}/smt/active")),
            },
        },
        "numa_nodes": _parsed(_read(root, "sys/devices/system/node/online"), parse_cpu_list),
        "cpufreq": _cpufreq(root, online or []),
        "aslr": _parsed(_read(root, "proc/sys/kernel/randomize_va_space"), int),
        "perf_event_paranoid": _parsed(_read(root, "proc/sys/kernel/perf_event_paranoid"), int),
        "nmi_watchdog": _parsed(_read(root, "proc/sys/kernel/nmi_watchdog"), int),
        "loadavg": read_loadavg(root),
        "memory": {
            "total_bytes": meminfo.get("MemTotal"),
            "available_bytes": meminfo.get("MemAvailable"),
        },
        "perflab_version": perflab.__version__,
        "python_version": platform.python_version(),
    }
