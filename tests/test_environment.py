"""environment.capture() on captured machines, and its parsers on edge cases."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import perflab
from perflab.execute.environment import (
    capture,
    parse_cpu_list,
    parse_cpuinfo_model,
    parse_loadavg,
    parse_meminfo,
    read_loadavg,
)

DATA = Path(__file__).parent / "data"
VM = DATA / "machine_vm"
BAREMETAL = DATA / "machine_tuned_baremetal"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_vm_fixture() -> None:
    env = capture(VM)
    assert env["hostname"] == "vm"
    assert env["kernel"]["release"] == "6.18.44-fc-v669"
    assert env["kernel"]["version"] == "#1 SMP PREEMPT_DYNAMIC @0"
    assert env["kernel"]["cmdline"].startswith("mitigations=auto")
    assert env["cpu"] == {
        "model": "Intel(R) Xeon(R) Processor",
        "online": "0-1",
        "online_count": 2,
        "smt": {"control": "notsupported", "active": False},
    }
    assert env["numa_nodes"] == [0]
    assert env["cpufreq"] == {"driver": None, "governors": [], "boost": None}
    assert (env["aslr"], env["perf_event_paranoid"], env["nmi_watchdog"]) == (2, 2, 0)
    assert env["loadavg"] == [0.0, 0.05, 0.02]
    assert env["memory"] == {"total_bytes": 24684084 * 1024,
                             "available_bytes": 24326784 * 1024}
    assert env["perflab_version"] == perflab.__version__


def test_baremetal_fixture() -> None:
    env = capture(BAREMETAL)
    assert env["hostname"] == "bench-box"
    assert env["cpu"]["model"] == "Intel(R) Core(TM) i5-7200U CPU @ 2.50GHz"
    assert env["cpu"]["online_count"] == 4
    assert env["cpu"]["smt"] == {"control": "on", "active": True}
    assert env["cpufreq"] == {"driver": "intel_pstate", "governors": ["powersave"],
                              "boost": True}
    assert env["loadavg"] == [3.5, 2.1, 1.2]
    assert (env["aslr"], env["nmi_watchdog"]) == (2, 1)


def test_snapshot_is_json() -> None:
    env = capture(BAREMETAL)
    assert json.loads(json.dumps(env)) == env


def test_empty_root_gives_none_not_errors(tmp_path: Path) -> None:
    env = capture(tmp_path)
    assert env["hostname"] is None
    assert env["kernel"] == {"release": None, "version": None, "cmdline": None}
    assert env["cpu"] == {"model": None, "online": None, "online_count": None,
                          "smt": {"control": None, "active": None}}
    assert env["numa_nodes"] is None
    assert env["cpufreq"] == {"driver": None, "governors": [], "boost": None}
    assert env["aslr"] is env["perf_event_paranoid"] is env["nmi_watchdog"] is None
    assert env["loadavg"] is None
    assert env["memory"] == {"total_bytes": None, "available_bytes": None}
    assert read_loadavg(tmp_path) is None


def test_malformed_files_give_none(tmp_path: Path) -> None:
    write(tmp_path, "proc/sys/kernel/randomize_va_space", "two\n")
    write(tmp_path, "sys/devices/system/cpu/online", "0-x\n")
    write(tmp_path, "sys/devices/system/cpu/smt/active", "maybe\n")
    write(tmp_path, "proc/loadavg", "0.5\n")
    (tmp_path / "proc/cpuinfo").mkdir(parents=True)  # a directory, not a file
    (tmp_path / "proc/sys/kernel/osrelease").write_bytes(b"\xff\xfe")
    env = capture(tmp_path)
    assert env["aslr"] is None
    assert env["cpu"]["online"] == "0-x"
    assert env["cpu"]["online_count"] is None
    assert env["cpu"]["smt"]["active"] is None
    assert env["cpu"]["model"] is None
    assert env["loadavg"] is None
    assert env["kernel"]["release"] is None


def test_boost_sources(tmp_path: Path) -> None:
    """Global boost file first, then intel_pstate's inverted no_turbo, then per policy."""
    cpu = "sys/devices/system/cpu"
    write(tmp_path, f"{cpu}/online", "0-1\n")
    write(tmp_path, f"{cpu}/cpu0/cpufreq/boost", "0\n")
    assert capture(tmp_path)["cpufreq"]["boost"] is False
    write(tmp_path, f"{cpu}/intel_pstate/no_turbo", "1\n")
    assert capture(tmp_path)["cpufreq"]["boost"] is False
    write(tmp_path, f"{cpu}/intel_pstate/no_turbo", "0\n")
    assert capture(tmp_path)["cpufreq"]["boost"] is True
    write(tmp_path, f"{cpu}/cpufreq/boost", "0\n")
    assert capture(tmp_path)["cpufreq"]["boost"] is False


def test_governors_only_over_online_cpus(tmp_path: Path) -> None:
    cpu = "sys/devices/system/cpu"
    write(tmp_path, f"{cpu}/online", "1,3\n")
    for n, gov in [(0, "ondemand"), (1, "schedutil"), (2, "powersave"), (3, "performance")]:
        write(tmp_path, f"{cpu}/cpu{n}/cpufreq/scaling_governor", f"{gov}\n")
    write(tmp_path, f"{cpu}/cpu3/cpufreq/scaling_driver", "acpi-cpufreq\n")
    freq = capture(tmp_path)["cpufreq"]
    assert freq["governors"] == ["performance", "schedutil"]
    assert freq["driver"] == "acpi-cpufreq"


def test_live_machine_matches_kernel() -> None:
    env = capture()
    assert env["kernel"]["release"] == os.uname().release
    assert env["cpu"]["online_count"] == os.cpu_count()
    loadavg = read_loadavg()
    assert loadavg is not None and len(loadavg) == 3


@pytest.mark.parametrize(("text", "cpus"), [
    ("0", [0]),
    ("0-1\n", [0, 1]),
    ("0-3,5,7-8", [0, 1, 2, 3, 5, 7, 8]),
    ("\n", []),
])
def test_parse_cpu_list(text: str, cpus: list[int]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("text", ["a", "3-1", "0-", "1;2"])
def test_parse_cpu_list_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(text)


def test_parse_meminfo() -> None:
    info = parse_meminfo((VM / "proc/meminfo").read_text())
    assert info["MemTotal"] == 24684084 * 1024
    assert parse_meminfo("HugePages_Total:       0\nBogus line\n") == {"HugePages_Total": 0}


def test_parse_loadavg() -> None:
    assert parse_loadavg("3.50 2.10 1.20 5/312 12345\n") == [3.5, 2.1, 1.2]
    with pytest.raises(ValueError):
        parse_loadavg("")


@pytest.mark.parametrize(("text", "model"), [
    ("processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\n",
     "AMD EPYC 7763 64-Core Processor"),
    ("processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\n",
     "POWER9 (raw), altivec supported"),
    ("processor\t: 0\nisa\t\t: rv64imafdc\nuarch\t\t: sifive,u74-mc\n", "sifive,u74-mc"),
    ("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
     "implementer 0x41 part 0xd0c"),
    ("processor\t: 0\n", None),
])
def test_parse_cpuinfo_model(text: str, model: str | None) -> None:
    assert parse_cpuinfo_model(text) == model

