"""Monitors around each sample: parsers on real captures, and real runs with real perf."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.execute import monitors, perf_profile
from perflab.execute.monitors import perf as perf_monitors
from perflab.execute.monitors import procfs
from perflab.model.errors import UsageError
from perflab.model.records import Direction, ProcessResult, is_monitor_metric
from perflab.model.run_request import RunOptions
from perflab.store import Store

from conftest import DATA, run_cli

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

PROG = r"""
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long hot_function(unsigned long n) {
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + i;
    return x;
}
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) void spin(double seconds) {
    double end = now() + seconds;
    while (now() < end) sink += hot_function(1000);
}
__attribute__((noinline)) void early_phase(double s) { spin(s); }
__attribute__((noinline)) void late_phase(double s) { spin(s); }
static void *worker(void *arg) { sink += hot_function((unsigned long)arg); return 0; }
int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "phases")) {   /* prog phases EARLY_S LATE_S */
        early_phase(atof(argv[2]));
        late_phase(atof(argv[3]));
        return 0;
    }
    int threads = atoi(argv[1]);                       /* prog THREADS ITERATIONS */
    unsigned long n = strtoul(argv[2], 0, 10);
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++) pthread_create(&t[i], 0, worker, (void *)n);
    for (int i = 0; i < threads && i < 64; i++) pthread_join(t[i], 0);
    return 0;
}
"""


@pytest.fixture(scope="module")
def prog(tmp_path_factory) -> str:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    directory = tmp_path_factory.mktemp("prog")
    (directory / "prog.c").write_text(PROG)
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", "prog", "prog.c"],
                   cwd=directory, check=True)
    return str(directory / "prog")


def read(name: str) -> str:
    return (DATA / name).read_text()


# -- choosing monitors -------------------------------------------------------------------
def test_monitor_names_are_checked_and_the_known_ones_listed():
    assert monitors.parse_names("perf-stat, vmstat,perf-stat") == ("perf-stat", "vmstat")
    with pytest.raises(UsageError) as error:
        monitors.parse_names("vmstat,perf-stats")
    assert "unknown monitor 'perf-stats'" in str(error.value)
    assert "perf-profile" in error.value.hint and "rusage" in error.value.hint


def test_bad_monitor_options_are_usage_errors(sqlite_db):
    result = run_cli("run", "--monitor", "bogus", "--", "true", db=sqlite_db)
    assert result.returncode == 2
    assert "unknown monitor 'bogus'" in result.stderr and "perf-stat" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("run", "--events", "task-clock", "--", "true", db=sqlite_db)
    assert result.returncode == 2 and "--monitor perf-stat" in result.stderr
    result = run_cli("run", "--monitor", "perf-profile", "--profile-freq", "0", "--", "true",
                     db=sqlite_db)
    assert result.returncode == 2 and "--profile-freq" in result.stderr


def test_monitor_choices_survive_the_run_spec_for_resume():
    from perflab.model.run_request import PlanRecord, RunRequest
    options = RunOptions(monitors=["perf-stat"], events=["task-clock"], profile_freq=99)
    stored = RunRequest(plans=(PlanRecord(workload={"workload": "command"}, sweep={}, options=options),)).to_json()
    again = RunRequest.from_json(stored).plans[0].options
    assert again == options and monitors.alike(again, options)
    older = RunRequest.from_json({"plans": [{"workload": {}, "sweep": {}, "options": {"repetitions": 3}}]})
    assert older.plans[0].options.monitors is None and monitors.build(older.plans[0].options) == []


def test_the_monitor_options_have_one_home():
    """MonitorOptions (model) holds the defaults and choices: `perflab run`'s options show
    them, a RunOptions is one (no copy), and a request made without the CLI meets its checks."""
    from perflab.cli.record import run
    from perflab.model.run_request import CALL_GRAPHS, PROFILE_SCOPES, MonitorOptions
    cli = {p.name: p for p in run.params}
    defaults = MonitorOptions()
    for name in ("profile_freq", "call_graph", "profile_scope"):
        assert cli[name].default == getattr(defaults, name) == getattr(RunOptions(), name)
    assert list(cli["call_graph"].type.choices) == list(CALL_GRAPHS)
    assert list(cli["profile_scope"].type.choices) == list(PROFILE_SCOPES)
    assert isinstance(RunOptions(), MonitorOptions)
    for bad, said in (({"call_graph": "lbr"}, "--call-graph 'lbr': choose fp or dwarf"),
                      ({"profile_scope": "cpu"}, "--profile-scope 'cpu': choose system or process"),
                      ({"profile_freq": 0}, "--profile-freq must be from 1 to 1,000,000, got 0")):
        with pytest.raises(UsageError, match=said):
            RunOptions(**bad)
    # plans alike in their monitors share them, whatever else differs (a suite's entries)
    assert monitors.alike(RunOptions(monitors=["vmstat"], repetitions=3), RunOptions(monitors=["vmstat"]))
    assert not monitors.alike(RunOptions(monitors=["vmstat"]), RunOptions(monitors=["vmstat"], cpus=[0]))


# -- parsers on real captures ---------------------------------------------------------------
def test_perf_stat_system_wide_capture_becomes_metrics():
    # perf stat -x, -a -o FILE --control fd:.. -D -1 on this VM: cycles/instructions unsupported
    rows = perf_monitors.measurements_from_csv(read("perf_stat_csv_vm_system_wide_control.txt"))
    values = {m.metric: (m.value, m.unit) for m in rows}
    assert values == {"perf-stat.task-clock": (pytest.approx(0.41055), "s"),
                      "perf-stat.context-switches": (623.0, "count"),
                      "perf-stat.cpu-migrations": (6.0, "count"),
                      "perf-stat.page-faults": (111.0, "count")}
    assert all(is_monitor_metric(m) for m in values)


def test_perf_stat_not_supported_and_not_counted_rows_are_left_out():
    rows = perf_monitors.measurements_from_csv(read("perf_stat_csv_vm_default_events.txt"))
    names = [m.metric for m in rows]
    assert "perf-stat.cycles" not in names and "perf-stat.branch-misses" not in names
    assert names == ["perf-stat.task-clock", "perf-stat.cpu-clock", "perf-stat.context-switches",
                     "perf-stat.cpu-migrations", "perf-stat.page-faults"]
    assert perf_monitors.measurements_from_csv(read("perf_stat_csv_vm_group_not_counted.txt")) == []
    assert perf_monitors.measurements_from_csv(read("perf_stat_err_vm_bogus_event.txt")) == []


def test_process_scope_keeps_the_benchmark_tree_from_fork_events():
    # perf record -a -g of `sh -c '/tmp/hot 1 N; true'` (sh is pid 4566, hot 4568 and its
    # thread 4569), perf script -F +pid --show-task-events
    lines = read("perf_script_pid_task_events_sh_hot.txt").splitlines(keepends=True)
    kept = list(perf_monitors.only_process_tree(lines, 4566))
    headers = [line for line in kept if line.strip() and not line.startswith("\t")]
    assert headers and all(line.split()[0] in ("sh", "hot") for line in headers)
    assert not any("PERF_RECORD" in line for line in kept)
    mine = perf_profile.aggregate(kept)
    everything = perf_profile.aggregate(
        line for line in lines if "PERF_RECORD" not in line)
    assert mine.top_self(1)[0][0] == "hot_function"
    assert mine.self_percent["hot_function"] > everything.self_percent["hot_function"]
    assert mine.total_samples < everything.total_samples
    assert list(perf_monitors.only_process_tree(lines, 999999)) == []


def test_system_scope_drops_perflabs_own_samples():
    # the same capture; 4568 plays perflab here: all its threads (4568, 4569) go
    lines = [line for line in read("perf_script_pid_task_events_sh_hot.txt").splitlines(keepends=True)
             if "PERF_RECORD" not in line]
    kept = list(perf_monitors.without_process(lines, 4568))
    headers = [line for line in kept if line.strip() and not line.startswith("\t")]
    pids = {line.split()[1].split("/")[0] for line in headers}
    assert headers and "4568" not in pids
    everything = perf_profile.aggregate(lines)
    rest = perf_profile.aggregate(kept)
    assert "hot_function" in everything.self_percent and "hot_function" not in rest.self_percent
    assert rest.total_samples < everything.total_samples
    assert list(perf_monitors.without_process(lines, 999999)) == lines


def test_show_states_the_monitors_overhead(sqlite_db):
    run_cli("run", "-n", "1", "--monitor", "perf-profile,vmstat", "--", "true", db=sqlite_db,
            check=True)
    shown = run_cli("show", "1", db=sqlite_db, check=True).stdout
    assert "monitors perf-profile,vmstat" in shown
    assert ("    monitor perf-profile: sampling every CPU at 800 Hz with call graphs: its "
            "interrupts are inside these numbers") in shown


def test_proc_parsers_on_this_machine():
    vmstat = procfs.VmstatMonitor.parse(Path("/proc/vmstat").read_text())
    assert "pgfault" in vmstat and not any(k.startswith("nr_") for k in vmstat)
    stat = procfs.ProcStatMonitor.parse(Path("/proc/stat").read_text())
    assert {"ctxt", "processes", "intr", "cpu.user", "softirq.timer"} <= set(stat)
    interrupts = procfs.InterruptsMonitor.parse(Path("/proc/interrupts").read_text())
    assert interrupts["LOC"] > 0
    assert all(":" in k for k in interrupts if k[0].isdigit())   # "24:virtio0-input.0"


def test_schedstat_parser_sums_cpus():
    text = ("version 15\ntimestamp 4295\n"
            "cpu0 0 0 100 40 70 30 2000000000 500000000 60\n"
            "domain0 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            "cpu1 0 0 10 4 7 3 1000000000 500000000 6\n")
    parsed = procfs.SchedstatMonitor.parse(text)
    assert parsed == {"sched_count": 110, "sched_goidle": 44, "ttwu_count": 77, "ttwu_local": 33,
                      "run_time": 3.0, "run_delay": 1.0, "timeslices": 66}


def test_a_field_is_stored_from_the_sample_it_first_moved_in(tmp_path):
    counters = tmp_path / "counters"

    class Fake(procfs.VmstatMonitor):
        path = str(counters)

    monitor = Fake(monitors.MonitorOptions(monitors=["vmstat"]))
    sample = monitors.SampleInfo("bench", 0, None)
    result = ProcessResult(0.1, 0, 0, None, 0, None, False)

    def one(before: str, after: str) -> dict[str, float]:
        counters.write_text(before)
        monitor.begin(sample)
        counters.write_text(after)
        monitor.end(sample)
        return {m.metric: m.value for m in monitor.stop(sample, result).measurements}

    assert one("a 1\nb 5\nnr_free 9\n", "a 3\nb 5\nnr_free 2\n") == {"vmstat.a": 2}
    assert one("a 3\nb 5\n", "a 3\nb 6\n") == {"vmstat.a": 0, "vmstat.b": 1}
    info = monitor.metric_info("vmstat.a")
    assert info.direction is Direction.LOWER and info.noise_floor == 0.05


# -- real runs ---------------------------------------------------------------------------
def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("perflab: warning:")]


@needs_perf
def test_counters_of_every_cheap_monitor_are_stored_with_their_meaning(sqlite_db):
    result = run_cli("run", "-q", "-n", "2", "--warmup", "1", "--monitor",
                     "perf-stat,vmstat,proc-stat,schedstat,interrupts,rusage",
                     "--", "sh", "-c", "ls / >/dev/null", db=sqlite_db, check=True)
    warnings = _warnings(result.stderr)
    with Store(sqlite_db) as store:
        rows = store.samples.rows(1)
        metrics = set(rows.metric)
        infos = store.metrics.infos(rows.benchmark[0])
    monitor_metrics = {m for m in metrics if is_monitor_metric(m)}
    assert {"time", "rusage.minflt", "rusage.nvcsw", "proc-stat.ctxt",
            "proc-stat.processes"} <= metrics
    assert {m for m in monitor_metrics if m.startswith("perf-stat.")}, warnings
    assert len(rows.metric) == len(set(zip(rows.metric, rows.repetition)))   # no warm-up rows
    assert set(rows.repetition) == {0, 1}
    for name in monitor_metrics:
        assert infos[name].direction is Direction.LOWER and infos[name].noise_floor == 0.05
    forks = [v for m, v in zip(rows.metric, rows.value) if m == "proc-stat.processes"]
    assert all(v >= 2 for v in forks)   # sh and ls at least
    # this VM: software events, said once; a missing /proc/schedstat is one warning too
    if "perf-stat.cycles" not in metrics:
        assert sum("<not supported>" in w and "task-clock" in w for w in warnings) == 1
        assert "perf-stat.task-clock" in metrics
    if not os.path.exists("/proc/schedstat"):
        assert sum("monitor schedstat is off" in w for w in warnings) == 1


@needs_perf
def test_an_event_perf_rejects_is_one_warning_and_the_benchmark_still_counts(sqlite_db):
    result = run_cli("run", "-q", "-n", "3", "--monitor", "perf-stat,rusage",
                     "--events", "task-clock,bogus-event", "--", "true", db=sqlite_db, check=True)
    warnings = _warnings(result.stderr)
    assert len(warnings) == 1 and "perf-stat is off" in warnings[0] and "bogus-event" in warnings[0]
    with Store(sqlite_db) as store:
        metrics = list(store.samples.rows(1).metric)
    assert metrics.count("time") == 3 and metrics.count("rusage.minflt") == 3
    assert not any(m.startswith("perf-stat.") for m in metrics)


def _outside_cpu_share(sqlite_db: str) -> float:
    """The share of the machine's CPUs another load took during run 1, as `show` reads it
    (analysis.contention); 0 where not recorded."""
    from perflab.analysis.contention import outside_loads
    with Store(sqlite_db) as store:
        found = outside_loads(store, [store.runs.resolve("1")])
    return found[0].cpu if found else 0.0


def _profile(sqlite_db: str, repetition: int = 0) -> dict[str, tuple[float, float]]:
    with Store(sqlite_db) as store:
        return {s.symbol: (s.self_pct, s.children_pct)
                for s in store.profiles.symbols(1) if s.repetition == repetition}


@needs_perf
@pytest.mark.exclusive   # a system-wide profile: another test's processes would top it
def test_the_hot_function_is_the_top_self_symbol_of_the_stored_profile(sqlite_db, prog):
    # system-wide as lkp: one thread per CPU so the machine's idle time does not lead
    threads = str(len(os.sched_getaffinity(0)))
    run_cli("run", "-q", "-n", "2", "--monitor", "perf-profile", "--", prog, threads, "150000000",
            db=sqlite_db, check=True)
    # another load's processes are in a system-wide profile too, their symbols perf's
    # "[unknown]" (stress-ng beside the suite: 36% of the samples); where the run measured
    # one (its outside CPU share), the hot function tops the benchmark's own symbols
    others = ("[unknown]",) if _outside_cpu_share(sqlite_db) > 0.1 else ()
    for repetition in (0, 1):
        profile = _profile(sqlite_db, repetition)
        top = max((s for s in profile if s not in others), key=lambda s: profile[s][0])
        assert top == "hot_function", sorted(profile.items(), key=lambda kv: -kv[1][0])[:5]
    with Store(sqlite_db) as store:
        artifacts = store.artifacts.of_run(1)
        calltraces = store.profiles.traces(1, "calltrace")
        stacks = store.profiles.traces(1, "stack")
    assert [(a.kind, a.repetition) for a in artifacts] == [("perf.data", 0), ("perf.data", 1)]
    assert all(a.path.read_bytes()[:8] == b"PERFILE2" for a in artifacts)
    assert all(len(t.frames.split(";")) <= 5 for t in calltraces)
    assert any(t.frames.startswith("hot_function;") for t in calltraces)
    assert any(t.frames.endswith(";hot_function") for t in stacks)   # root first, leaf last


@needs_perf
def test_process_scope_records_the_middle_of_a_sample_of_known_length(sqlite_db, prog):
    # 0.4 s early_phase then 1.2 s late_phase; the warm-up tells the length (1.6 s), so
    # the window is 0.4 s .. 1.2 s: late_phase only
    run_cli("run", "-q", "-n", "1", "--warmup", "1", "--monitor", "perf-profile",
            "--profile-scope", "process", "--", prog, "phases", "0.4", "1.2",
            db=sqlite_db, check=True)
    profile = _profile(sqlite_db)
    assert profile["late_phase"][1] > 90, profile
    assert profile.get("early_phase", (0, 0))[1] < 5, profile
    assert max(profile, key=lambda s: profile[s][0]) == "hot_function"
