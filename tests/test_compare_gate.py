"""`compare --fail-on regression`: failed (1), passed (0) and undecided (125) on generated runs.

The runs are written to a real database as `perflab run` would have recorded them (each
sample a value drawn around the run's level), so the decisions judged here do not depend
on the load of the machine the tests run on.
"""

from __future__ import annotations

import shlex

import numpy as np

from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store

from conftest import run_cli

KERNEL = {"kernel": {"release": "6.1", "version": "#1"}}


def record(store: Store, label: str, levels: dict[str, float], rng: np.random.Generator, *,
           n: int = 25, spread: float = 0.01, run_spread: float = 0.01, drift: float = 0.0) -> int:
    """A run of the commands ``levels`` (command line -> seconds a sample), interleaved
    round by round when there are several; each run's level off by ``run_spread`` (its
    run-to-run variance), each sample by ``spread``, and rising by ``drift`` along the run."""
    names = list(levels)
    plans = [{"workload": {"workload": "command", "argv": shlex.split(name), "benchmark": name},
              "sweep": {}, "options": {}} for name in names]
    line = ["perflab", "run", "-n", str(n), "--label", label, *(["--", *shlex.split(names[0])]
                                                                if len(names) == 1 else names)]
    request = RunRequest.from_json({"plans": plans, "interleaved": len(names) > 1,
                                    "identity": {"label": label, "command_line": line}})
    run_id = store.runs.create(label=label, host="box", request=request, environment=KERNEL)
    shifts = {name: rng.normal(0, run_spread) for name in names}
    for name in names:
        store.metrics.save(name, [MetricInfo("time", "s", Direction.LOWER)])
    for rep in range(n):
        for name in names:
            value = levels[name] * float(np.exp(shifts[name] + drift * rep / (n - 1) + rng.normal(0, spread)))
            store.samples.add(run_id, Point(name, {}), rep, [Measurement("time", value, "s")])
    store.runs.set_status(run_id, RunStatus.COMPLETE)
    store.series.seal(run_id)
    return run_id


def gate(db: str, *args: str):
    return run_cli("compare", *args, "--fail-on", "regression", "--threshold", "2%", db=db)


def test_a_gate_never_passes_what_it_could_not_judge_and_names_the_next_step(sqlite_db):
    """The issue's case: 25 samples of a 10 ms and of a 13 ms command as two separate runs on
    a host that knows nothing of its run-to-run spread: undecided, 125, and the step named;
    then 3 replicate runs a side, or both in one interleaved run, decide it: 1."""
    rng = np.random.default_rng(41)
    with Store(sqlite_db, create=True) as store:
        record(store, "cA", {"sleep 0.010": 0.0101}, rng)
        record(store, "cB", {"sleep 0.013": 0.0131}, rng)
    undecided = gate(sqlite_db, "cA", "cB")
    assert undecided.returncode == 125, undecided.stdout + undecided.stderr
    assert "--fail-on regression: undecided: 1 of 1 comparison(s)" in undecided.stderr, undecided.stderr
    assert "sleep 0.010 time (cB)" in undecided.stderr
    assert "measure both in one run, interleaved: `perflab run -n " in undecided.stderr
    assert "'sleep 0.010' 'sleep 0.013'`" in undecided.stderr
    # the table says the same step, in one line under its row
    assert "next step, the cheapest on this host" in undecided.stdout
    kept = gate(sqlite_db, "cA", "cB", "--undecided", "pass")
    assert kept.returncode == 0 and "1 undecided passed (--undecided pass)" in kept.stderr, kept.stderr
    assert gate(sqlite_db, "cA", "cB", "--undecided", "fail").returncode == 1
    with Store(sqlite_db) as store:
        for _ in range(2):
            record(store, "cA", {"sleep 0.010": 0.0101}, rng)
            record(store, "cB", {"sleep 0.013": 0.0131}, rng)
        record(store, "AB", {"sleep 0.010": 0.0101, "sleep 0.013": 0.0131}, rng)
    replicated = gate(sqlite_db, "cA", "cB")
    assert replicated.returncode == 1 and "failed: 1 significant regression" in replicated.stderr, \
        replicated.stdout + replicated.stderr
    interleaved = gate(sqlite_db, "AB")
    assert interleaved.returncode == 1, interleaved.stdout + interleaved.stderr


def test_a_gate_passes_what_its_interval_clears(sqlite_db):
    """Equal commands, 3 runs a side: the interval rules out a 2% regression: 0; a threshold
    below what the data can rule out leaves it open: 125, naming the interval."""
    rng = np.random.default_rng(7)
    with Store(sqlite_db, create=True) as store:
        for _ in range(3):
            record(store, "old", {"./tool": 0.0200}, rng, spread=0.002, run_spread=0.002)
            record(store, "new", {"./tool": 0.0200}, rng, spread=0.002, run_spread=0.002)
    passed = gate(sqlite_db, "old", "new")
    assert passed.returncode == 0 and "passed: no significant regression" in passed.stderr, \
        passed.stdout + passed.stderr
    open_ = run_cli("compare", "old", "new", "--fail-on", "regression", "--noise-floor", "0.01%", db=sqlite_db)
    assert open_.returncode == 125 and "does not rule out a regression of 0.01%" in open_.stderr, \
        open_.stdout + open_.stderr


def test_a_drift_small_against_the_threshold_does_not_hold_the_gate(sqlite_db, tmp_path):
    """Equal commands, 3 runs a side, the new runs drifting 0.5% along each run (the trend
    test flags it): the drift cannot move the row across a 10% threshold, so the gate passes
    (issue 41: the drift rule left such an A/A row unjudged, 125). Runs drifting 30% could:
    125, naming what their drift could make of the interval."""
    rng = np.random.default_rng(5)
    far_db = str(tmp_path / "far.db")
    for db, drift in ((sqlite_db, 0.005), (far_db, 0.3)):
        with Store(db, create=True) as store:
            for _ in range(3):
                record(store, "old", {"./tool": 0.0200}, rng, spread=0.0005, run_spread=0.002)
                record(store, "new", {"./tool": 0.0200 * np.exp(-drift / 2)}, rng, spread=0.0005,
                       run_spread=0.002, drift=drift)
    shown = run_cli("compare", "old", "new", "-v", db=sqlite_db, check=True)
    assert "keep rising" in shown.stdout, shown.stdout
    passed = run_cli("compare", "old", "new", "--fail-on", "regression", "--threshold", "10%", db=sqlite_db)
    assert passed.returncode == 0 and "passed: no significant regression" in passed.stderr, \
        passed.stdout + passed.stderr
    held = run_cli("compare", "old", "new", "--fail-on", "regression", "--threshold", "10%", db=far_db)
    assert held.returncode == 125 and "its runs' drift or two groups could make" in held.stderr, \
        held.stdout + held.stderr


def test_one_unit_per_metric_across_the_blocks(sqlite_db):
    """Two blocks of one metric (mode=process, mode=thread), one under 10 ms: both tables in
    one unit, in mmtests and speedup alike (adjacent hackbench blocks were one in s, one in ms)."""
    from perflab.analysis.compare import compare_runs
    from perflab.render.compare import render_comparison
    rng = np.random.default_rng(3)
    with Store(sqlite_db, create=True) as store:
        store.metrics.save("hackbench", [MetricInfo("time", "s", Direction.LOWER)])
        ids = []
        for label in ("a", "b"):
            run_id = store.runs.create(label=label, host="box", request=RunRequest(), environment=KERNEL)
            for mode, level in (("process", 0.005), ("thread", 0.05)):
                for groups in (1, 2):
                    for rep in range(5):
                        store.samples.add(run_id, Point("hackbench", {"mode": mode, "groups": groups}), rep,
                                          [Measurement("time", level * groups * float(np.exp(rng.normal(0, 0.01))),
                                                       "s")])
            store.runs.set_status(run_id, RunStatus.COMPLETE)
            store.series.seal(run_id)
            ids.append(run_id)
        report = compare_runs(store, [store.runs.resolve(str(i)) for i in ids])
    assert len(report.blocks) == 2
    for fmt in ("mmtests", "speedup"):
        text = render_comparison(report, fmt)
        units = {line.split("(")[-1].split(",")[0] for line in text.splitlines() if "lower is better)" in line}
        assert len(units) == 1, text
