"""Every script under bench/ runs its smallest size (issue 43 item 7).

The figures of bench/README.md are only as good as the scripts that make them, and a script
nobody runs rots unseen when the code under it moves. Each runs here as a user runs it, in a
process of its own, at a size that takes seconds; its temporary files go under the test's
tmp_path (TMPDIR) unless another user must reach them. What it prints is not judged: the
scripts' targets need their full sizes. A script that exits 1 for a missed target says so in
its output.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import ROOT

BENCH = ROOT / "bench"

# modules of the scripts, run through the script named
MODULES = {"power_bound.py": "aa_host_prior.py", "fleet_generate.py": "fleet_scale.py",
           "project_venv.py": "aa_host_prior.py"}
# scripts whose smallest size runs in a test of their own, which also checks what they print
OWN_TESTS = {"fleet_scale.py": "test_bench_fleet.py", "fuzz_cli.py": "test_cli_fuzz.py",
             "nested_import.py": "test_badinput_regressions.py", "blocking_rules.py": "test_bench_blocking_rules.py"}


def _git_history(tmp: Path) -> list[str]:
    """A repository of four commits, the third sleeping 30 times longer: bisect_real_repo's."""
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i, seconds in enumerate(("0.001", "0.001", "0.03", "0.03")):   # a clear step: bisect decides soon
        (repo / "work.sh").write_text(f"# commit {i + 1}\nsleep {seconds}\n")
        subprocess.run([*git, "add", "work.sh"], check=True)
        subprocess.run([*git, "commit", "-qm", f"c{i + 1}"], check=True)
    first = subprocess.run([*git, "rev-list", "--max-parents=0", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    return [str(repo), "--good", first, "--bad", "HEAD", "--build", "true", "--history-commits", "3",
            "--runs", "1", "--metric", "time", "--", "sh", "work.sh"]


def _tcpd(tmp: Path) -> list[str]:
    """Two series in TCPD's layout (annotations.json, datasets/NAME/NAME.json), a missing value
    in one, and a third annotated but not built."""
    annotations = {}
    for name, n, step in (("short", 60, 30), ("long", 150, 90)):
        raw: list[float | None] = [10.0 + (i % 3) * 0.1 + (5.0 if i >= step else 0.0) for i in range(n)]
        raw[7] = None
        folder = tmp / "tcpd" / "datasets" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.json").write_text(json.dumps({"n_dim": 1, "series": [{"raw": raw}]}))
        annotations[name] = {"1": [step], "2": [step + 1]}
    annotations["unbuilt"] = {"1": [5]}
    (tmp / "tcpd" / "annotations.json").write_text(json.dumps(annotations))
    return ["--tcpd", str(tmp / "tcpd"), "--no-otava"]


def _separate_runs(tmp: Path) -> list[str]:
    """Five runs of five of the recorded benchmarks: the fewest that give every benchmark a
    leave-one-out host prior."""
    kept = {"sleep-5ms", "sh-loop", "gzip", "python-loop", "sched-pipe"}
    with open(BENCH / "data" / "separate-runs" / "runs.csv", newline="") as source, \
            open(tmp / "runs.csv", "w", newline="") as out:
        rows = csv.reader(source)
        writer = csv.writer(out)
        writer.writerow(next(rows))
        writer.writerows(r for r in rows if r[0] in kept and int(r[1]) < 5)
    return ["--data", str(tmp / "runs.csv")]


def _one_test(tmp: Path) -> list[str]:
    (tmp / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    return ["run", str(tmp / "timeline.jsonl"), "-q", "-p", "no:cacheprovider", str(tmp / "test_one.py")]


Args = list[str] | Callable[[Path], list[str]]
long = pytest.mark.long
# script: its smallest size ({tmp}: the test's tmp_path), or a function of tmp_path that makes its input
SMOKE: dict[str, tuple[Args, ...]] = {
    "aa_calibration.py": (["--trials", "2", "--n", "5", "--k", "2"],),
    "aa_host_prior.py": (_separate_runs,),
    "aa_separate_runs.py": (["--pairs", "1", "-n", "2"],),
    "ab_drift.py": (["--runs", "2", "--loop", "20000"],),   # a shorter loop can be under the shell's start-up
    "between_samples.py": (["--runs", "22", "--rounds", "1"],),
    "bisect_real_repo.py": (_git_history,),
    "bisect_runs": (["--trials", "1"],),
    "cgroup_overhead": (["--pairs", "5"],),
    "cgroup_read_probe.py": (["--runs", "5", "--rounds", "1"],),
    "changepoints_accuracy.py": (["--series", "1", "--sim-series", "1", "--no-otava"],),
    "changepoints_short.py": (["--series", "1"],),
    "changepoints_tcpd.py": (_tcpd,),
    "changepoints_vs_otava": (["--series", "1", "--length", "200", "--changes", "2", "--repeat", "1", "--no-otava"],),
    "commit_excursions.py": (["--series", "2"],),
    "compare_1m": (["--benchmarks", "2", "--reps", "10", "--repeat", "1", "--db", "{tmp}/c.db"],),
    "fleet_pages.py": (["--commits", "60", "--hosts", "1", "--benchmarks", "3", "--repeat", "1", "--browser"],),
    "fleet_throughput": (["--jobs", "2", "--workers", "1", "--peer-runs", "1"],),
    "fuzz_inputs": (["--count", "5"],),
    "fuzz_readers.py": (["--inputs", "5", "--cli", "2"],),
    "gradual_changes.py": (["--trials", "3", "--explain"],),
    "html_report.py": (["--benchmarks", "1", "--sides", "2", "--samples", "10", "--commits", "10", "--repeat", "1"],),
    "import_2m": (["--samples", "1000", "--run-samples", "100"],),
    "label_regimes.py": (["--sets", "noise"],),
    "monitor_overhead": (["--duration", "0.1", "--runs", "1", "--rounds", "1", "--monitors", "vmstat"],),
    "overhead": (["--runs", "5", "--rounds", "1"],),
    "profile_postprocess": (["--sizes", "1000", "--cache", "{tmp}/profiles"],),
    "record_noise.py": (["--points", "3", "--only", "cpu-loop-a", "--out", "{tmp}/noise"],),
    "record_separate_runs.py": (["--runs", "1", "-n", "2", "--out", "{tmp}/separate"],),
    "sequential_ab_sim.py": (["--streams", "2", "--max-n", "50"],),
    "sn_null_table.py": (["--draws", "100000", "--lengths", "10", "--check"],),
    "spawn_breakdown.py": (["--runs", "5", "--rounds", "1"],),
    "startup.py": (["-n", "1"],),
    "step_edges.py": (["--series", "5"],),
    "suite_timeline.py": (_one_test, ["show", "{tmp}/timeline.jsonl", "-n", "3"]),
    "time_to_verdict.py": (["--reps", "1", "--pilot", "5", "--max-n", "10", "--cases", "sleep A/A"],),
    "tip_latency.py": (["--trials", "2", "--sets", "noise"],),
    "variance_rules.py": (_separate_runs,),
    "tip_null.py": (["--looks", "10", "--lengths", "40", "--cv", "5", "--families", "normal", "--rules", "code",
                     "--jobs", "1"],),
    "tip_power.py": (["--series", "5", "--null-looks", "200000", "--sets", "noise"],),
    "wis_overhead": (["--seconds", "0.2", "--warmup", "0", "--rounds", "1"],),
}
# 15 s or more on the loaded 2-CPU machine (bench/README.md, "Every script's smoke run"):
# tests/scheduling.py starts them first
LONG = {"fleet_throughput", "changepoints_short.py", "bisect_real_repo.py", "record_separate_runs.py", "bisect_runs",
        "overhead", "time_to_verdict.py", "ab_drift.py", "html_report.py", "fuzz_readers.py", "compare_1m"}
# the system's TMPDIR, not tmp_path: fleet_throughput's files must be reachable by another user
# (PostgreSQL's; it removes them), and chromium's socket path under an xdist worker's tmp_path
# passes the 108 bytes of a Unix socket's name (html_report, fleet_pages --browser: "Chrome instance exited")
SHARED_TMP = {"fleet_throughput", "html_report.py", "fleet_pages.py"}
# exit 1 is a missed target: their targets are for the full size
TARGETS = {"overhead", "compare_1m", "wis_overhead"}


def test_every_bench_script_has_a_smoke_run():
    files = {p.name for p in BENCH.iterdir() if p.is_file() and p.suffix != ".md"}
    assert files == set(SMOKE) | set(MODULES) | set(OWN_TESTS)
    assert all(script in SMOKE or script in OWN_TESTS for script in MODULES.values())
    for script, test in OWN_TESTS.items():
        assert f'"{script}"' in (ROOT / "tests" / test).read_text(), f"{test} runs no {script}"


@pytest.mark.parametrize("script", [pytest.param(s, marks=long) if s in LONG else s for s in SMOKE])
def test_bench_script_runs_its_smallest_size(script, tmp_path):
    env = dict(os.environ) if script in SHARED_TMP else dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("PERFLAB_DB", None)
    for args in SMOKE[script]:
        argv = args(tmp_path) if callable(args) else [a.replace("{tmp}", str(tmp_path)) for a in args]
        done = subprocess.run([sys.executable, str(BENCH / script), *argv], capture_output=True, text=True,
                              timeout=600, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL)
        codes = (0, 1) if script in TARGETS else (0,)
        assert done.returncode in codes and "Traceback" not in done.stderr, \
            f"{script} {' '.join(argv)}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        if done.returncode == 1:
            assert "MISSED" in done.stdout
