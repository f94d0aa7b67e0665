"""perf stat CSV parsing on output captured on the development VM, and live probes.

The captured files come from ``perf stat -x, -e ... -- true`` (perf 6.1) in a VM that
exposes software events but no hardware PMU, so hardware counters print
``<not supported>``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perflab.execute import probe
from perflab.execute.probe import (
    NOT_COUNTED,
    NOT_SUPPORTED,
    PERF_MISSING,
    TOOLS,
    EventProbe,
    find_tools,
    parse_perf_stat_csv,
    perf_error_reason,
    perf_events,
)

DATA = Path(__file__).parent / "data"

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_parse_default_events_on_vm() -> None:
    rows = parse_perf_stat_csv(read("perf_stat_csv_vm_default_events.txt"))
    assert list(rows) == list(probe.DEFAULT_EVENTS)
    for hardware in ("cycles", "instructions", "cache-misses", "branch-misses"):
        assert rows[hardware] == (None, NOT_SUPPORTED)
    assert rows["task-clock"] == (0.46, None)
    assert rows["cpu-clock"] == (0.45, None)
    assert rows["context-switches"] == (0.0, None)
    assert rows["page-faults"] == (48.0, None)


def test_parse_not_counted() -> None:
    rows = parse_perf_stat_csv(read("perf_stat_csv_vm_group_not_counted.txt"))
    assert rows == {"task-clock": (None, NOT_COUNTED), "cycles": (None, NOT_SUPPORTED)}


def test_parse_unprivileged_modifiers_are_kept() -> None:
    rows = parse_perf_stat_csv(read("perf_stat_csv_vm_user_only.txt"))
    assert rows == {"cycles:u": (None, NOT_SUPPORTED), "task-clock:u": (0.43, None),
                    "context-switches:u": (0.0, None)}


def test_parse_event_names_with_commas_in_pmu_terms() -> None:
    rows = parse_perf_stat_csv(read("perf_stat_csv_vm_pmu_terms.txt"))
    assert rows == {
        "software/config=0,period=100000/": (447693.0, None),
        "software/config=2,config1=0/u": (45.0, None),
        "msr/tsc/": (894514.0, None),
    }


def test_parse_ignores_error_text_and_comments() -> None:
    assert parse_perf_stat_csv(read("perf_stat_err_vm_bogus_event.txt")) == {}
    assert parse_perf_stat_csv("# started on Mon\n\n1,,page-faults,5,100.00,,\n") == {
        "page-faults": (1.0, None)}
    assert parse_perf_stat_csv("<not available>,,foo,0,100.00,,\n") == {
        "foo": (None, "not available")}


def test_perf_error_reason() -> None:
    assert (perf_error_reason(read("perf_stat_err_vm_bogus_event.txt"))
            == "event syntax error: 'bogus-event': parser error")
    assert (perf_error_reason(read("perf_stat_err_vm_no_cpu_pmu.txt"))
            == "event syntax error: 'cpu/event=0x3c,umask=0x0/': "
               "Cannot find PMU `cpu'. Missing kernel support?")
    assert perf_error_reason("") is None


@needs_perf
def test_live_software_event_works() -> None:
    assert perf_events(["task-clock"]) == {"task-clock": EventProbe(True, None)}


@needs_perf
def test_live_bad_event_gives_perf_reason() -> None:
    result = perf_events(["no-such-event"])["no-such-event"]
    assert not result.supported
    assert result.reason is not None and "no-such-event" in result.reason


@needs_perf
def test_live_default_events_all_probed() -> None:
    results = perf_events()
    assert list(results) == list(probe.DEFAULT_EVENTS)
    assert results["task-clock"].supported
    assert all(r.reason for r in results.values() if not r.supported)


def test_missing_perf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert perf_events(["cycles", "task-clock"]) == {
        "cycles": EventProbe(False, PERF_MISSING),
        "task-clock": EventProbe(False, PERF_MISSING),
    }
    assert PERF_MISSING == "perf not found (install linux-perf)"


def test_find_tools_with_empty_path() -> None:
    found = find_tools("/nonexistent")
    assert list(found) == list(TOOLS)
    assert set(found.values()) == {None}


def test_find_tools_on_a_fake_path(tmp_path: Path) -> None:
    fake = tmp_path / "hackbench"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    found = find_tools(str(tmp_path))
    assert found["hackbench"] == str(fake)
    assert found["perf"] is None


def test_tool_catalog() -> None:
    assert TOOLS["perf"].package == "linux-perf"
    assert TOOLS["tbench_srv"].package == "dbench"
    assert TOOLS["cc"].package == "gcc"
    assert {"hackbench", "cyclictest", "iperf3", "hyperfine", "stress-ng", "git"} <= set(TOOLS)
