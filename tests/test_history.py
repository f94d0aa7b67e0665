"""perflab history / changes / report change: real git repositories, real runs, real change points.

The main fixture is a git repository whose commit "slow down the loop" raises a delay
file from 10 ms to 200 ms (20x: on this VM a sleep wakes up to 10 ms late, and another
load beside the suite made `sleep 0.010` read up to 38 ms and hid a 4x step); every commit
is measured by a real ``perflab run --repo --commit`` of ``sleep <delay at that commit>``,
one old commit last in time, and a side
branch merged with --no-ff is measured too. Long series with gaps, several runs per
commit and a failed run are written through the Store API the runner uses.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from perflab.model.run_request import RunRequest

import services
from conftest import run_cli

pytestmark = pytest.mark.alone   # the nap fixture records with the machine alone

SLOW_SUBJECT = "slow down the loop"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def new_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    return path


def commit(repo: Path, subject: str, delay: str | None = None) -> str:
    if delay is not None:
        (repo / "delay").write_text(delay + "\n")
    (repo / f"note-{len(list(repo.glob('note-*')))}-{subject.split()[0].strip(':')}").write_text(subject + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def record(db: str, repo: Path, sha: str, label: str = "nightly") -> None:
    delay = git(repo, "show", f"{sha}:delay")
    run_cli("run", "-q", "-n", "3", "--repo", str(repo), "--commit", sha, "--label", label,
            "--name", "nap", "--", "sleep", delay, db=db, check=True)


@pytest.fixture(scope="module")
def nap(tmp_path_factory):
    """(db, repo, first-parent shas, side sha, slow sha)."""
    base = tmp_path_factory.mktemp("history")
    repo = new_repo(base / "app")
    c = [commit(repo, "start", "0.010")]
    c.append(commit(repo, "tidy the loop"))
    git(repo, "checkout", "-q", "-b", "side")
    side = commit(repo, "side: try a cache")
    git(repo, "checkout", "-q", "main")
    c.append(commit(repo, "rename a variable"))
    c.append(commit(repo, "comment the loop"))
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    c.append(git(repo, "rev-parse", "HEAD"))
    slow = commit(repo, SLOW_SUBJECT, "0.200")
    c.append(slow)
    for i in range(4):
        c.append(commit(repo, f"after the step {i}"))
    assert git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split() == c
    db = str(base / "perflab.db")
    late = c[2]  # measured last: first-parent order must still put it third
    # with the machine alone: the tests judge these sleeps' times, and four workers' tests
    # beside them made `sleep 0.010` read 12-38 ms and hid the step (tests/services.py)
    with services.alone():
        for sha in [x for x in c[:4] if x != late] + [side] + list(c[4:]) + [late]:
            record(db, repo, sha)
    return db, repo, c, side, slow


def history_json(db: str, *args: str) -> dict:
    result = run_cli("history", "--format", "json", *args, db=db)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def the_series(data: dict, metric: str) -> dict:
    (series,) = [s for s in data["series"] if s["metric"] == metric]
    return series


def test_points_follow_the_commit_graph(nap):
    db, repo, line, side, _ = nap
    data = history_json(db, "--metric", "time")
    assert data["order"] == "commit-graph" and data["repo"] == str(repo)
    points = the_series(data, "time")["points"]
    # the side commit is placed by the graph: just before the merge that brings it in
    assert [p["commit"] for p in points] == line[:4] + [side] + line[4:]
    assert all(p["on_line"] for p in points)
    assert all(p["n"] == 3 for p in points)


def test_the_step_is_found_at_its_commit(nap):
    db, _, _, _, slow = nap
    series = the_series(history_json(db, "--metric", "time", "--filter", "benchmark=nap"), "time")
    assert series["changes"], series
    change = max(series["changes"], key=lambda c: abs(c["oriented_pct"]))
    assert change["commit"] == slow and change["kind"] == "regression"
    # one sign convention: change_pct is + = better, as compare's; the raw ratio beside it
    assert change["raw_change_pct"] > 20 and change["change_pct"] == pytest.approx(-change["raw_change_pct"])
    assert change["oriented_pct"] == change["change_pct"]
    assert change["before"]["mean"] < change["after"]["mean"] and change["p_value"] < 1e-3
    text = run_cli("history", "--metric", "time", db=db, check=True).stdout
    assert f"[{change['id']}]" in text and "regression" in text and slow[:12] in text


def test_changes_lists_largest_first_and_filters(nap):
    db, _, _, _, slow = nap
    data = json.loads(run_cli("changes", "--format", "json", db=db, check=True).stdout)
    sizes = [abs(c["oriented_pct"]) for c in data["changes"]]
    assert sizes == sorted(sizes, reverse=True)
    time_change = next(c for c in data["changes"] if c["metric"] == "time" and c["commit"] == slow)
    assert time_change["subject"] == SLOW_SUBJECT
    regressions = run_cli("changes", "--direction", "regression", "--metric", "time", db=db, check=True).stdout
    assert time_change["id"] in regressions and SLOW_SUBJECT in regressions
    improvements = run_cli("changes", "--direction", "improvement", "--metric", "time", db=db, check=True).stdout
    assert time_change["id"] not in improvements
    later = run_cli("changes", "--since", "2999-01-01", db=db, check=True).stdout
    assert later.strip() == "no change point found"


def test_report_change_reads_like_the_robot(nap, tmp_path):
    db, repo, line, _, slow = nap
    data = json.loads(run_cli("changes", "--format", "json", "--metric", "time", db=db, check=True).stdout)
    change = next(c for c in data["changes"] if c["commit"] == slow)
    result = run_cli("report", "change", change["id"], db=db)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    first = text.splitlines()[0]
    assert first.startswith("perflab noticed a -") and "% regression of nap.time" in first
    assert f"on commit {slow[:10]} ({SLOW_SUBJECT})" in first
    assert f'commit: {slow} ("{SLOW_SUBJECT}")' in text
    assert "in testcase: nap" in text and "on test machine:" in text
    assert "nap.time" in text.split("Details are as below:")[1]  # the lkp table lists the stat
    reproduce = text.split("To reproduce:")[1].strip().splitlines()
    clone = f"perflab-{slow[:12]}"
    assert reproduce[0].strip() == f"git clone -q {repo} {clone} && cd {clone}   # a fresh clone"
    assert reproduce[1].strip() == f"git checkout -q --detach {slow}"
    assert reproduce[2].strip().startswith("# build it as it was built: run ")  # no build file in this tree
    argv = shlex.split(reproduce[3])
    assert argv[0] == "perflab" and argv[argv.index("--commit") + 1] == slow
    assert argv.count("--commit") == 1 and argv[-2:] == ["sleep", "0.200"]
    # the command really measures that commit again (into a copy of the database)
    copy = str(tmp_path / "copy.db")
    shutil.copy(db, copy)
    argv[argv.index("--db") + 1] = copy
    run_cli(*argv[argv.index("run"):], db=copy, check=True)
    points = the_series(history_json(copy, "--metric", "time"), "time")["points"]
    assert next(p for p in points if p["commit"] == slow)["n"] == 6


def _table_pct(report: str, stat: str) -> float:
    """The lkp table's %change of ``stat`` (raw, as lkp prints it)."""
    line = next(line for line in report.split("Details are as below:")[1].splitlines() if line.rstrip().endswith(stat))
    return float(re.search(r"([+-][0-9.]+)%", line).group(1))


def test_errors_are_one_line(nap, tmp_path):
    db = nap[0]
    cases = [
        (["report", "change", "0123456789"], "no change with id '0123456789'"),
        (["report", "change", "xyz!"], "bad change id"),
        (["history", "--metric", "nosuch"], "no runs with metric nosuch"),
        (["history", "--filter", "test=poll2"], "unknown --filter key 'test'"),
        (["history", "--label", "nosuch"], "no runs labelled nosuch"),
        (["changes", "--since", "yesterday"], "bad --since"),
    ]
    for args, message in cases:
        result = run_cli(*args, db=db)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, result.stderr)
    empty = run_cli("history", db=str(tmp_path / "none.db"))
    assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- long series via the Store

def long_history(base: Path, *, commits: int = 48, step_at: int = 30,
                 db: str | None = None) -> tuple[str, Path, list[str]]:
    """A higher-is-better 'ops' that drops 10% at ``step_at``; gaps, doubles and a failure
    (in ``db``, a new SQLite file under ``base`` unless given)."""
    from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus, SampleStatus
    from perflab.store import Store

    repo = new_repo(base / "kernel")
    shas = [commit(repo, f"change {i}") for i in range(commits)]
    rng = np.random.default_rng(7)
    point = Point("wis", {"test": "poll2", "mode": "thread"})
    db = db or str(base / "perflab.db")
    with Store(db, create=True) as store:
        store.metrics.save("wis", [MetricInfo("ops", "ops/s", Direction.HIGHER)])
        for i, sha in enumerate(shas):
            if i % 7 == 3:
                continue  # a commit nobody measured
            for _ in range(2 if i % 5 == 0 else 1):  # some commits measured twice
                run_id = store.runs.create(label="nightly", host="box", request=RunRequest(), environment={},
                                           commit=sha, commit_describe=sha[:7], repo=str(repo))
                failed = i == 11
                for rep in range(3):
                    value = (100.0 if i < step_at else 90.0) * (1 + 0.01 * rng.standard_normal())
                    status = SampleStatus.FAILED if failed else SampleStatus.OK
                    store.samples.add(run_id, point, rep, [Measurement("ops", None if failed else value,
                                                                       "ops/s", status)])
                    # seed 003's profile: the work moves from __fget_light to __get_file_rcu
                    moved = 0.0 if i < step_at else 20.0 + rng.standard_normal()
                    store.profiles.add(run_id, store.samples.point_id(point), rep, "cycles-pp",
                                       [("__fget_light", 30.0 - moved, 40.0), ("do_poll", 12.0, 60.0),
                                        *([("__get_file_rcu", moved + 6, moved + 6)] if moved else [])], [])
                store.series.seal(run_id)
                store.runs.set_status(run_id, RunStatus.FAILED if failed else RunStatus.COMPLETE)
    return db, repo, shas


def test_long_series_with_gaps_and_repeats(tmp_path):
    db, _, shas = long_history(tmp_path)
    for method in ("e-divisive", "pelt", "binseg"):
        series = the_series(history_json(db, "--metric", "ops", "--filter", "test=poll2",
                                         "--method", method), "ops")
        points = series["points"]
        measured = [s for i, s in enumerate(shas) if i % 7 != 3]
        assert [p["commit"] for p in points] == measured
        assert next(p for p in points if p["commit"] == shas[15])["n"] == 6  # two runs merged
        assert next(p for p in points if p["commit"] == shas[11])["n"] == 0  # the failed run: a gap
        (change,) = series["changes"]
        assert change["commit"] == shas[30] and change["kind"] == "regression", method
        assert change["raw_change_pct"] == pytest.approx(-10, abs=1.5)
        assert change["oriented_pct"] == pytest.approx(change["raw_change_pct"]) == change["change_pct"]
    report = run_cli("report", "change", change["id"], db=db, check=True).stdout
    table = report.split("Details are as below:")[1]
    lines = {line.split()[-1]: line for line in table.splitlines() if "perf-profile" in line}
    assert set(lines) == {"perf-profile.self.cycles-pp.__fget_light", "perf-profile.self.cycles-pp.__get_file_rcu",
                          "perf-profile.children.cycles-pp.__get_file_rcu"}, table
    fget = lines["perf-profile.self.cycles-pp.__fget_light"].split()
    assert float(fget[0]) == 30 and float(fget[1]) == pytest.approx(-20, abs=2)  # points, not %
    assert "wis.ops" in table and "-10." in table and "with following parameters:" in report
    assert "do_poll" not in table and "unchanged profile row(s) not listed" in table
    every = run_cli("report", "change", change["id"], "--rows", "all", db=db, check=True).stdout
    assert "perf-profile.self.cycles-pp.do_poll" in every and "every stat of the test case" in every
    assert "regression" in run_cli("changes", "--direction", "regression", db=db, check=True).stdout
    assert "no change point" in run_cli("changes", "--direction", "improvement", db=db, check=True).stdout


def test_a_moved_repository_falls_back_to_time_order(tmp_path):
    db, repo, shas = long_history(tmp_path, commits=24, step_at=12)
    repo.rename(tmp_path / "elsewhere")
    result = run_cli("history", "--format", "json", "--metric", "ops", db=db)
    assert result.returncode == 0, result.stderr
    assert f"warning: repository {repo} is gone" in result.stderr
    data = json.loads(result.stdout)
    assert data["order"] == "time"
    (change,) = the_series(data, "ops")["changes"]
    assert change["commit"] == shas[12]
    report = run_cli("report", "change", change["id"], db=db)
    assert report.returncode == 0, report.stderr
    assert f"on commit {shas[12][:10]} ({shas[12][:7]})" in report.stdout  # describe stands in


# ---------------------------------------------------------------- one estimator, one segment

def stored_series(db: str, levels: list[list[float]], *, commits: list[str] | None = None,
                  repo: str | None = None, build: str | None = None) -> list[str]:
    """One lower-is-better 'time' of benchmark 'job', one run per commit, the values given."""
    from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus, SampleStatus
    from perflab.store import Store

    shas = commits or [f"{i:02d}" + "ab" * 19 for i in range(len(levels))]
    point = Point("job", {})
    with Store(db, create=True) as store:
        store.metrics.save("job", [MetricInfo("time", "s", Direction.LOWER)])
        for sha, values in zip(shas, levels):
            argv = ["perflab", "--db", db, "run", "--commit", sha, "-n", str(len(values)), "--", "job"]
            request = RunRequest.from_json({"version": 2, "identity": {"command_line": argv, "build": build}})
            run_id = store.runs.create(label="nightly", host="box", environment={}, request=request,
                                       commit=sha, repo=repo)
            for rep, value in enumerate(values):
                store.samples.add(run_id, point, rep, [Measurement("time", value, "s", SampleStatus.OK)])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)
    return shas


def test_a_rise_in_time_is_a_regression_even_when_an_outlier_lifts_the_mean_before(tmp_path):
    """`changes` once found a change on the medians and took its direction from the means:
    one wild sample before the step made a 5% rise in time "+x% improvement"."""
    rng = np.random.default_rng(3)
    levels = [list(10.0 + 0.02 * rng.standard_normal(5)) for _ in range(6)]
    levels += [list(10.5 + 0.02 * rng.standard_normal(5)) for _ in range(6)]
    levels[2][0] = 300.0  # a timer wake-up 29 s late: the mean before is now above the mean after
    db = str(tmp_path / "perflab.db")
    shas = stored_series(db, levels)
    data = json.loads(run_cli("changes", "--format", "json", db=db, check=True).stdout)
    (change,) = data["changes"]
    assert change["commit"] == shas[6]
    assert change["before"]["mean"] > change["after"]["mean"]  # the trap: the means fell
    assert change["kind"] == "regression" and change["verdict"] == "regression"
    assert change["raw_change_pct"] == pytest.approx(5.0, abs=0.5)
    assert change["change_pct"] == pytest.approx(-change["raw_change_pct"])
    assert change["before"]["centre"] == pytest.approx(10.0, abs=0.05)
    listed = run_cli("changes", db=db, check=True).stdout
    assert "regression" in listed and "improvement" not in listed and "-5." in listed
    assert change["id"] in run_cli("changes", "--direction", "regression", db=db, check=True).stdout
    report = run_cli("report", "change", change["id"], db=db, check=True).stdout
    headline = re.match(r"perflab noticed a ([+-][0-9.]+)% regression of job.time", report.splitlines()[0])
    # the headline is the centres' change, as changes lists it (the pooled means fell: the trap)
    assert headline and float(headline.group(1)) == pytest.approx(change["oriented_pct"], abs=0.051), report
    # one estimator: the table's %change is the headline's change, raw, and it is decided (the
    # pooled means, which the wild sample drags, once said "no stat changed" under a regression)
    assert _table_pct(report, "job.time") == pytest.approx(change["raw_change_pct"], abs=0.051), report
    assert "per commit the median of its samples, per side the mean of those" in report
    details = report.split("Details are as below:")[1].split("To reproduce:")[0]
    assert "no stat changed" not in details and "separate runs" not in details, details


def test_report_reproduces_with_the_recorded_build_line(tmp_path):
    """Runs that recorded their build line (bisect's do) get it in "To reproduce", not a guess."""
    rng = np.random.default_rng(11)
    levels = [list(level + 0.01 * rng.standard_normal(4)) for level in [1.0] * 6 + [1.3] * 6]
    db = str(tmp_path / "perflab.db")
    repo = new_repo(tmp_path / "tool")
    (repo / "Makefile").write_text("all:\n\ttrue\n")
    shas = [commit(repo, f"change {i}") for i in range(len(levels))]
    stored_series(db, levels, commits=shas, repo=str(repo), build="make -s -C programs lz4")
    (change,) = json.loads(run_cli("changes", "--format", "json", db=db, check=True).stdout)["changes"]
    report = run_cli("report", "change", change["id"], db=db, check=True).stdout
    reproduce = report.split("To reproduce:")[1].strip().splitlines()
    assert reproduce[1].strip() == f"git checkout -q --detach {shas[6]}", reproduce
    assert reproduce[0].startswith(f"git clone -q {repo} "), reproduce
    assert reproduce[2].strip().startswith("make -s -C programs lz4   # the build line its runs recorded")
    assert "a guess" not in report and "perflab noticed a -" in report.splitlines()[0]


def test_report_fields_come_from_the_change_point_segments(tmp_path):
    """Issue 16 item 8: runs recorded with --commit and no --repo; three levels, two changes.
    The report's sides are the segments `history` shows (4 commits before, not 3), no commit
    outside them is named, and the reproduce line says why there is no repository path."""
    rng = np.random.default_rng(5)
    levels = [list(level + 0.01 * rng.standard_normal(3)) for level in [1.0] * 4 + [1.5] * 6 + [1.0] * 6]
    db = str(tmp_path / "perflab.db")
    shas = stored_series(db, levels)
    series = the_series(history_json(db, "--method", "pelt"), "time")  # e-divisive misses an A-B-A this short
    first, second = series["changes"]
    assert (first["commit"], second["commit"]) == (shas[4], shas[10])
    assert (first["before"]["points"], first["after"]["points"]) == (4, 6)
    report = run_cli("report", "change", first["id"], "--method", "pelt", db=db, check=True).stdout
    assert "not recorded is gone" not in report
    assert "# in a fresh clone of the repository (the runs did not record its path" in report
    assert f"git checkout -q --detach {shas[4]}" in report
    assert f"before the change: {shas[0][:12]}..{shas[3][:12]} (all 4 commits of the segment, 4 runs)" in report
    assert f"from it on:        {shas[4][:12]}..{shas[9][:12]} (all 6 commits of the segment, 6 runs)" in report
    # the complete commit list of each side
    assert "    " + " ".join(sha[:12] for sha in shas[:4]) + "\n" in report
    assert "    " + " ".join(sha[:12] for sha in shas[4:10]) + "\n" in report
    assert "(centre of 4 commits); samples" in report and "(n=12)" in report and "(n=18)" in report
    named = {sha for sha in shas if sha[:10] in report}
    assert named <= set(shas[:10]), "a commit outside the two segments is named"
    assert "% regression" in report.splitlines()[0] and " a regression)" in report
    nearest = run_cli("report", "change", first["id"], "--points", "2", "--method", "pelt", db=db, check=True).stdout
    assert f"before the change: {shas[2][:12]}..{shas[3][:12]} (2 of the segment's 4 commits, nearest" in nearest
    assert f"from it on:        {shas[4][:12]}..{shas[5][:12]} (2 of the segment's 6 commits, nearest" in nearest
    back = run_cli("report", "change", second["id"], "--method", "pelt", db=db, check=True).stdout
    headline = re.match(r"perflab noticed a ([+-][0-9.]+)% improvement", back.splitlines()[0])
    assert headline and float(headline.group(1)) == pytest.approx(second["oriented_pct"], abs=0.051)
    assert _table_pct(back, "job.time") == pytest.approx(-float(headline.group(1)), abs=0.051)  # one estimator
    assert f"before the change: {shas[4][:12]}..{shas[9][:12]}" in back
    assert ", an improvement) between the centres" in back and "a improvement" not in back  # articles


def test_the_history_renderers_only_lay_out_the_model():
    """render/{history,changepoints,bisect,change_report,profile}.py import no analysis, store, stats
    or execute, nor numpy, and call no mean/std/median: analysis computed every number."""
    import ast

    import perflab.render
    for name in ("history", "changepoints", "bisect", "change_report", "profile"):
        path = Path(perflab.render.__file__).parent / f"{name}.py"
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for module in modules:
                    assert not module.startswith(("perflab.analysis", "perflab.store", "perflab.stats",
                                                  "perflab.execute", "numpy", "statistics")), (name, module)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr not in ("mean", "std", "median", "var"), (name, node.lineno)


def test_detection_cache_follows_the_stored_values(tmp_path):
    """Change points are cached by the series' own values: the same store gives the same
    changes again, and runs that land give a fresh detection, never a stale one."""
    from perflab.analysis.compare import Filters
    from perflab.analysis.history import build_history
    from perflab.model.records import Measurement, Point, RunStatus
    from perflab.store import Store

    db, repo, _ = long_history(tmp_path)
    ops = Filters.parse([], ["ops"])
    with Store(db) as store:
        (first,) = build_history(store, filters=ops).series
        (again,) = build_history(store, filters=ops).series
        assert [c.id for c in again.changes] == [c.id for c in first.changes] and len(first.changes) == 1
        point = Point("wis", {"test": "poll2", "mode": "thread"})
        for i in range(24):  # a second step, down to 70
            sha = commit(repo, f"later {i}")
            run_id = store.runs.create(label="nightly", host="box", request=RunRequest(), environment={}, commit=sha,
                                       commit_describe=sha[:7], repo=str(repo))
            for rep in range(3):
                store.samples.add(run_id, point, rep, [Measurement("ops", 70.0 * (1 + 0.001 * (rep - 1)), "ops/s")])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)
        (later,) = build_history(store, filters=ops).series
    assert len(later.points) == len(first.points) + 24
    assert len(later.changes) == 2 and later.changes[0].id == first.changes[0].id
    assert later.changes[1].change_pct == pytest.approx(-100 * 20 / 90, abs=2)
