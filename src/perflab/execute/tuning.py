"""What about this machine will make benchmark results noisy, and how to fix it.

Checks read an ``environment.capture()`` snapshot (possibly an old one from the
store), so they judge the machine a run measured on, not the one reading the results.
Each check that passes says so with an "ok" finding, so ``perflab doctor`` can show
the whole checklist rather than only what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from perflab.model.records import ASLR_MODES

Level = Literal["warning", "info", "ok"]

LOAD_PER_CPU_LIMIT = 0.1
"""Above this 1-minute load per online CPU, other work is competing with the benchmark."""



@dataclass(frozen=True)
class Finding:
    """One verdict about the machine; ``fix`` is a command a user can paste."""

    level: Level
    topic: str
    message: str
    fix: str | None = None


def check(env: dict[str, Any], *, is_root: bool) -> list[Finding]:
    """All tuning findings for one snapshot, in a stable order."""
    return [
        *_frequency(env),
        *_load(env),
        *_smt(env),
        *_aslr(env),
        *_nmi_watchdog(env),
        *_perf_paranoid(env, is_root),
    ]


def _frequency(env: dict[str, Any]) -> list[Finding]:
    """Boost and governor: the largest source of run-to-run drift on bare metal."""
    freq = env.get("cpufreq") or {}
    driver, governors, boost = freq.get("driver"), freq.get("governors") or [], freq.get("boost")
    if driver is None and not governors and boost is None:
        return [Finding("info", "cpufreq",
                        "cpufreq is not exposed: frequency is controlled by the host or "
                        "firmware (e.g. a VM), so perflab cannot check boost or the governor")]
    findings: list[Finding] = []
    if boost is True:
        fix = ("echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo" if driver == "intel_pstate"
               else "echo 0 > /sys/devices/system/cpu/cpufreq/boost")
        findings.append(Finding("warning", "boost",
                                "turbo/boost is on: the clock follows temperature and load "
                                "of the other cores", fix))
    elif boost is False:
        findings.append(Finding("ok", "boost", "turbo/boost is off"))
    else:
        findings.append(Finding("info", "boost",
                                f"cpufreq driver {driver or 'unknown'} does not say whether "
                                "turbo/boost is on"))
    slow = [g for g in governors if g != "performance"]
    if slow:
        findings.append(Finding("warning", "governor",
                                f"cpufreq governor is {', '.join(governors)}, not performance: "
                                "the clock ramps up during each sample",
                                "cpupower frequency-set -g performance"))
    elif governors:
        findings.append(Finding("ok", "governor", "cpufreq governor is performance"))
    return findings


def _load(env: dict[str, Any]) -> list[Finding]:
    """Other runnable work at capture time; an unknown CPU count is taken as one CPU."""
    loadavg = env.get("loadavg")
    if not loadavg:
        return []
    load = loadavg[0]
    cpus = (env.get("cpu") or {}).get("online_count") or 1
    text = f"load average {load:.2f} on {cpus} online CPU{'s' if cpus != 1 else ''}"
    if load > LOAD_PER_CPU_LIMIT * cpus:
        return [Finding("warning", "load",
                        f"{text} is above {LOAD_PER_CPU_LIMIT} per CPU: other work is "
                        "competing with the benchmark",
                        "stop other work on this machine (top shows what runs) and retry")]
    return [Finding("ok", "load", f"{text} is low")]


def _smt(env: dict[str, Any]) -> list[Finding]:
    """SMT siblings share one core's execution units, caches and frequency."""
    smt = (env.get("cpu") or {}).get("smt") or {}
    control, active = smt.get("control"), smt.get("active")
    if active is None and control is None:
        return []
    on = active if active is not None else control == "on"
    if on:
        return [Finding("info", "smt",
                        "SMT (hyper-threading) is on: siblings share a core, so a "
                        "neighbour's work changes the result",
                        "echo off > /sys/devices/system/cpu/smt/control")]
    return [Finding("ok", "smt", f"SMT is not active ({control or 'off'})")]


def _aslr(env: dict[str, Any]) -> list[Finding]:
    """Address randomisation moves code and stacks, which shifts cache and TLB behaviour."""
    aslr = env.get("aslr")
    if aslr is None:
        return []
    if aslr:
        mode = ASLR_MODES.get(aslr, f"mode {aslr}")
        return [Finding("info", "aslr",
                        f"ASLR is on ({mode}): layouts differ from run to run",
                        "sysctl kernel.randomize_va_space=0")]
    return [Finding("ok", "aslr", "ASLR is off")]


def _nmi_watchdog(env: dict[str, Any]) -> list[Finding]:
    """The NMI watchdog keeps one hardware counter busy, so perf must multiplex."""
    watchdog = env.get("nmi_watchdog")
    if watchdog is None:
        return []
    if watchdog:
        return [Finding("info", "nmi_watchdog",
                        "the NMI watchdog is on: it holds a hardware counter that perf "
                        "could use", "sysctl kernel.nmi_watchdog=0")]
    return [Finding("ok", "nmi_watchdog", "the NMI watchdog is off")]


def _perf_paranoid(env: dict[str, Any], is_root: bool) -> list[Finding]:
    """Above 1, an unprivileged perf counts only user space and cannot profile the kernel."""
    paranoid = env.get("perf_event_paranoid")
    if paranoid is None:
        return []
    if paranoid > 1 and not is_root:
        cannot = ("cannot open any event (Debian's level 3)" if paranoid > 2
                  else "cannot count or profile the kernel")
        return [Finding("warning", "perf_event_paranoid",
                        f"perf_event_paranoid is {paranoid} and perflab is not root: perf "
                        f"{cannot}", "sysctl kernel.perf_event_paranoid=-1")]
    who = "running as root" if is_root else "unprivileged"
    return [Finding("ok", "perf_event_paranoid",
                    f"perf_event_paranoid is {paranoid} ({who}): perf can see the kernel")]
