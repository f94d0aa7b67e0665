"""bisect and history on a release branch that merges a development branch (a real git
repository of a small C program, built by the test).

    v1 ── r1 "Write the release notes" ───────────────── M "Merge dev" (v2) ── g0 ── g1 ── g2 ── g3 ── g4 (v3)
      └── d1 "Add a debug check" ── d2 "Decode four bytes" ── d3 "Document" ┘

Work per run (x the base): v1 1.0, d1 2.5 (slower than both ends of v1..v2), d2 0.7 (the
speed-up, on the development branch), d3 0.7, r1 1.0, M 0.7; g0 0.7, then a gradual
regression over three commits: g1 0.8, g2 0.9, g3 1.0, g4 1.0.

Each run prints the work it did ("work: N"), the base times an injected noise factor
(1% sd, a seeded stream per test), and that figure is bisected: the seeds mean
something and the test stays fast (the timed case is tests/test_bisect.py's).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from test_bisect import PROGRAM

BASE_WORK = 1_000_000
WORK_METRIC = ["--metric-regex", r"work: ([0-9]+)"]


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    """bisect stores its runs: in a store of the test's own (the default under XDG_DATA_HOME)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def commit(repo: Path, subject: str, factor: float, rev: list[int]) -> str:
    rev[0] += 1
    source = PROGRAM % dict(rev=rev[0], work=int(BASE_WORK * factor), sd="0.01", outlier_rate="0",
                            exit="return 0;")
    (repo / "prog.c").write_text(source)
    (repo / "Makefile").write_text("prog: prog.c\n\tcc -O1 -o prog prog.c -lm\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("release") / "lib"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "T")
    rev = [0]
    c = {"v1": commit(repo, "Release 1", 1.0, rev)}
    git(repo, "tag", "v1")
    git(repo, "checkout", "-q", "-b", "dev")
    c["d1"] = commit(repo, "Add a debug check", 2.5, rev)
    c["d2"] = commit(repo, "Decode four bytes at a time", 0.7, rev)
    c["d3"] = commit(repo, "Document the decoder", 0.7, rev)
    git(repo, "checkout", "-q", "main")
    c["r1"] = commit(repo, "Write the release notes", 1.0, rev)
    git(repo, "merge", "-q", "--no-ff", "-X", "theirs", "-m", "Merge dev", "dev")
    c["M"] = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "v2")
    for name, factor in (("g0", 0.7), ("g1", 0.8), ("g2", 0.9), ("g3", 1.0), ("g4", 1.0)):
        c[name] = commit(repo, f"Grow the table ({name})", factor, rev)
    git(repo, "tag", "v3")
    return repo, c


def bisect(repo: Path, tmp_path: Path, good: str, bad: str, *extra: str, seed: int = 1):
    noise = tmp_path / f"noise-{good}-{bad}-{seed}"
    noise.write_text(f"{seed} 0\n")
    return run_cli("bisect", "--repo", str(repo), "--good", good, "--bad", bad, "--build", "make -s",
                   "--run", "./prog", *WORK_METRIC, "--seed", str(seed), *extra,
                   env={"BISECT_NOISE_FILE": str(noise)}, timeout=300)


def test_finds_the_speed_up_inside_the_merge_and_the_commit_slower_than_both(release, tmp_path):
    repo, c = release
    result = bisect(repo, tmp_path, "v1", "v2")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    # the direction named; the commit inside the merged branch, by way of the merge
    assert f"first lower commit (an improvement): {c['d2'][:12]} Decode four bytes at a time" in out
    assert f"merged by {c['M'][:12]} Merge dev" in out and f"the commit {c['d2'][:12]}" in out
    assert "searched: the whole commit graph" in out
    # the debug check is far slower than both ends: said at its step, and counted as old
    row = next(line for line in out.splitlines() if line.split()[1:2] == [c["d1"][:12]])
    assert "beyond old" in row and re.search(r"\+1[0-9]{2}\.\d% vs new", row) is None, row
    assert re.search(r"-1[0-9]{2}\.\d% vs old", row) and re.search(r"-2[0-9]{2}\.\d% vs new", row), row
    assert "like neither end" in out and "Changes: % with + = better" in out
    assert "like neither end: beyond old" in result.stderr   # said at the step


def test_first_parent_descends_into_the_merge(release, tmp_path):
    repo, c = release
    result = bisect(repo, tmp_path, "v1", "v2", "--first-parent", "-q")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert f"first lower commit (an improvement): {c['d2'][:12]}" in out
    assert f"merged by {c['M'][:12]}" in out and "searched: the first-parent line, descending into merges" in out


def test_neither_stop_stops_at_the_commit_slower_than_both(release, tmp_path):
    repo, c = release
    result = bisect(repo, tmp_path, "v1", "v2", "--neither", "stop", "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(f"stopped at {c['d1'][:12]} Add a debug check: like neither end (beyond old)")


def test_direction_asked_against_what_the_ends_measure(release, tmp_path):
    repo, _ = release
    result = bisect(repo, tmp_path, "v1", "v2", "--direction", "regression", "-q")
    assert result.returncode == 1
    assert "good and bad differ, but as an improvement (lower" in result.stdout
    assert "not the regression --direction asks for" in result.stdout


def test_a_gradual_change_is_reported_with_each_commits_share(release, tmp_path):
    repo, c = release
    result = bisect(repo, tmp_path, "v2", "v3", "--term-old", "fast", "--term-new", "slow")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert f"first higher commit (a regression): {c['g1'][:12]}" in out
    assert "The change is gradual: spread over 3 commits" in out
    block = out.split("The change is gradual")[1]
    shares = {sha: int(pct) for sha, pct in re.findall(r"^([0-9a-f]{12}) .*? (\d+)% ", block, re.M)}
    assert list(shares) == [c["g1"][:12], c["g2"][:12], c["g3"][:12]], block
    # log steps 0.7 -> 0.8 -> 0.9 -> 1.0: 37%, 33%, 30% of log(1/0.7)
    for sha, expected in zip(shares, (37, 33, 30), strict=True):
        assert abs(shares[sha] - expected) <= 8, block
    assert re.search(r" slow ", out) and "between" in out


def test_the_same_tree_is_built_once(release, tmp_path):
    repo, _ = release
    cache = tmp_path / "builds"
    first = bisect(repo, tmp_path, "v1", "v2", "--build-cache", str(cache), "-q")
    second = bisect(repo, tmp_path, "v1", "v2", "--build-cache", str(cache), "-q", seed=2)
    assert first.returncode == 0 and second.returncode == 0, first.stdout + second.stdout
    built = int(re.search(r"(\d+) builds", first.stdout).group(1))
    assert built >= 3 and " 0 builds." in second.stdout, second.stdout
    assert len([p for p in cache.iterdir() if p.is_dir()]) == built
    assert git(repo, "worktree", "list").count("\n") == 0 and git(repo, "status", "--porcelain") == ""


def test_history_follows_the_graph_when_recorded_newest_first(release, tmp_path):
    repo, c = release
    db = str(tmp_path / "perflab.db")
    graph_order = ["v1", "r1", "d1", "d2", "d3", "M", "g0", "g1", "g2", "g3", "g4"]
    for name in reversed(graph_order):   # recorded newest first
        run_cli("run", "-q", "-n", "2", "--repo", str(repo), "--commit", c[name], "--label", "nightly",
                "--name", "noop", "--", "true", db=db, check=True)
    data = json.loads(run_cli("history", "--format", "json", "--metric", "time", db=db, check=True).stdout)
    assert data["order"] == "commit-graph"
    (series,) = data["series"]
    commits = [p["commit"] for p in series["points"]]
    names = {sha: name for name, sha in c.items()}
    assert [names[sha] for sha in commits] == graph_order
    assert all(p["on_line"] for p in series["points"])
    text = run_cli("history", "--metric", "time", db=db, check=True).stdout
    assert f"commit-graph order of {repo}" in text and "placed by time" not in text


def test_each_run_is_stored_and_compare_reads_it(release, tmp_path):
    """Every run of the bisect is a sample of its commit's stored run (label, commit,
    describe, repository, build line), and compare/history read them."""
    from perflab.model.records import RunStatus
    from perflab.store import Store

    repo, c = release
    db = str(tmp_path / "bisect.db")
    noise = tmp_path / "noise"
    noise.write_text("3 0\n")
    result = run_cli("bisect", "--repo", str(repo), "--good", "v1", "--bad", "v2", "--build", "make -s",
                     "--run", "./prog", *WORK_METRIC, "--seed", "3", "--label", "hunt", "-q",
                     db=db, env={"BISECT_NOISE_FILE": str(noise)}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    spent = int(re.search(r"(\d+) benchmark runs", result.stdout).group(1))
    good_id, found_id = map(int, re.search(r"'perflab compare (\d+) (\d+)'", result.stdout).groups())
    with Store(db, create=False) as store:
        runs = {r.commit: r for r in store.runs.all(counted=False, details=False)}
        assert set(runs) >= {c["v1"], c["M"], c["d2"]} and len(runs) <= 5
        assert {r.label for r in runs.values()} == {"hunt"}
        assert all(r.status is RunStatus.COMPLETE and r.repo == str(repo) for r in runs.values())
        assert runs[c["v1"]].id == good_id and runs[c["d2"]].id == found_id
        assert runs[c["d2"]].commit_describe.startswith("v1-")
        spec = store.runs.with_details([runs[c["d2"]]])[found_id].request.identity
        assert spec.build == "make -s" and spec.command_line[-3:] == ("/bin/sh", "-c", "./prog")
        stored = sum(len(g.values) for r in runs.values() for g in store.series.value_groups(r.id))
    assert stored == spent   # every run, none twice
    compared = run_cli("compare", str(good_id), str(found_id), db=db, check=True).stdout
    # compare reads both commits' runs: the 30% less work (d2 0.7 of v1's) is there, read as the
    # interleaved pairs the bisect measured (docs/separate-runs.md), so decided as the bisect did
    assert "bisect" in compared and re.search(r"[(*]\s*[+-]?(29|30|31)\.\d\d%[)*]", compared), compared
    assert "interleaved pairs by one bisect (hunt)" in compared, compared
    assert re.search(r"(improvement|regression) \(1\): bisect", compared), compared
    listed = run_cli("history", "--label", "hunt", db=db, check=True).stdout
    assert c["d2"][:12] in listed and "commit-graph order" in listed
    # a bisect refused before it measures anything stores nothing
    refused = run_cli("bisect", "--repo", str(repo), "--good", "v2", "--bad", "v1", "--build", "true",
                      "--run", "true", db=str(tmp_path / "none.db"))
    assert refused.returncode == 2 and not (tmp_path / "none.db").exists()


def test_clean_reuses_one_worktree_and_finds_the_same_commit(release, tmp_path):
    repo, c = release
    cache = tmp_path / "builds"
    result = bisect(repo, tmp_path, "v1", "v2", "--clean", "rm -f prog built-here; touch cleaned",
                    "--build", "test -e cleaned && make -s && touch built-here", "--build-cache", str(cache), "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"first lower commit (an improvement): {c['d2'][:12]}" in result.stdout
    built = int(re.search(r"(\d+) builds", result.stdout).group(1))
    trees = [p for p in cache.iterdir() if p.is_dir()]
    assert len(trees) == built and all((p / "built-here").exists() and not (p / ".git").exists() for p in trees)
    # the reused worktree is gone, the repository keeps none, the user's checkout is untouched
    assert not [p for p in trees if p.name.startswith("work-")]
    assert git(repo, "worktree", "list").count("\n") == 0 and git(repo, "status", "--porcelain") == ""
    help_text = run_cli("bisect", "--help", check=True).stdout
    assert "fresh git worktree" in help_text and "--clean" in help_text
