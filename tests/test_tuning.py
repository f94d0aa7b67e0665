"""Tuning checks on the two captured machines and on single-fact snapshots."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perflab.execute.environment import capture
from perflab.execute.tuning import Finding, check

DATA = Path(__file__).parent / "data"


def by_topic(findings: list[Finding]) -> dict[str, Finding]:
    topics = [f.topic for f in findings]
    assert len(topics) == len(set(topics)), topics
    return {f.topic: f for f in findings}


def test_untuned_baremetal_fires_every_check() -> None:
    found = by_topic(check(capture(DATA / "machine_tuned_baremetal"), is_root=False))
    assert {t: f.level for t, f in found.items()} == {
        "boost": "warning",
        "governor": "warning",
        "load": "warning",
        "smt": "info",
        "aslr": "info",
        "nmi_watchdog": "info",
        "perf_event_paranoid": "warning",
    }
    assert found["boost"].fix == "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
    assert "powersave" in found["governor"].message
    assert found["governor"].fix == "cpupower frequency-set -g performance"
    assert "3.50" in found["load"].message and "4 online CPUs" in found["load"].message
    assert found["smt"].fix == "echo off > /sys/devices/system/cpu/smt/control"
    assert found["aslr"].fix == "sysctl kernel.randomize_va_space=0"
    assert found["nmi_watchdog"].fix == "sysctl kernel.nmi_watchdog=0"
    assert found["perf_event_paranoid"].fix == "sysctl kernel.perf_event_paranoid=-1"
    assert all(f.fix for f in found.values())


def test_vm_reports_what_it_can() -> None:
    found = by_topic(check(capture(DATA / "machine_vm"), is_root=True))
    assert {t: f.level for t, f in found.items()} == {
        "cpufreq": "info",
        "load": "ok",
        "smt": "ok",
        "aslr": "info",
        "nmi_watchdog": "ok",
        "perf_event_paranoid": "ok",
    }
    assert "host or firmware" in found["cpufreq"].message
    assert found["cpufreq"].fix is None


def test_root_is_not_limited_by_paranoid() -> None:
    env = {"perf_event_paranoid": 2}
    assert [f.level for f in check(env, is_root=True)] == ["info", "ok"]  # cpufreq, paranoid
    assert [f.level for f in check(env, is_root=False)] == ["info", "warning"]
    assert [f.level for f in check({"perf_event_paranoid": 1}, is_root=False)] == ["info", "ok"]


def test_tuned_machine_is_all_ok() -> None:
    env = {
        "cpu": {"online_count": 8, "smt": {"control": "off", "active": False}},
        "cpufreq": {"driver": "acpi-cpufreq", "governors": ["performance"], "boost": False},
        "aslr": 0, "nmi_watchdog": 0, "perf_event_paranoid": -1, "loadavg": [0.5, 0.4, 0.3],
    }
    findings = check(env, is_root=False)
    assert {f.level for f in findings} == {"ok"}
    assert len(findings) == 7


def test_boost_fix_follows_the_driver() -> None:
    env = {"cpufreq": {"driver": "acpi-cpufreq", "governors": ["performance"], "boost": True}}
    boost = by_topic(check(env, is_root=True))["boost"]
    assert boost.fix == "echo 0 > /sys/devices/system/cpu/cpufreq/boost"


def test_unknown_boost_with_cpufreq_is_info() -> None:
    env = {"cpufreq": {"driver": "cppc_cpufreq", "governors": ["performance"], "boost": None}}
    found = by_topic(check(env, is_root=True))
    assert found["boost"].level == "info" and "cppc_cpufreq" in found["boost"].message
    assert found["governor"].level == "ok"


@pytest.mark.parametrize(("load", "cpus", "level"), [
    (0.2, 2, "ok"), (0.21, 2, "warning"), (0.05, None, "ok"), (0.15, None, "warning"),
])
def test_load_threshold_per_cpu(load: float, cpus: int | None, level: str) -> None:
    env = {"loadavg": [load, 0.0, 0.0], "cpu": {"online_count": cpus}}
    assert by_topic(check(env, is_root=True))["load"].level == level


def test_smt_falls_back_to_control() -> None:
    env = {"cpu": {"smt": {"control": "on", "active": None}}}
    assert by_topic(check(env, is_root=True))["smt"].level == "info"


def test_old_or_empty_snapshot_does_not_crash() -> None:
    assert [f.topic for f in check({}, is_root=False)] == ["cpufreq"]


def test_finding_is_frozen() -> None:
    finding = Finding("ok", "aslr", "ASLR is off")
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.level = "warning"  # type: ignore[misc]
