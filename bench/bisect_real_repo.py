#!/usr/bin/env python3
"""history, changes and bisect on any real git repository, end to end, with their cost.

    bench/bisect_real_repo.py PATH --good A --bad B --build 'make -j2' [--metric user] -- CMD

1. history: builds a sample of good..bad (good, bad, every first-parent commit, then
   commits spread evenly over the graph order, --history-commits in all), each once per
   tree in a clean worktree (execute.bisect_runs), and records --runs runs of CMD (a shell
   line, run in the built tree) for each with `perflab run --repo PATH --commit SHA`, in a
   shuffled order (the history must order them by the graph, not by when they ran);
2. `perflab history` and `perflab changes` on those runs;
3. `perflab bisect` over good..bad (the whole graph), sharing the build cache, then
   `perflab compare` of the runs bisect stored for good and the commit it found.

Prints each command's output, then what bisect found, the builds and runs spent and the
wall time of each phase. Nothing is written in PATH's checkout; the store and the build
cache are temporary unless --db / --cache are given.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)

PERFLAB = [sys.executable, "-m", "perflab.cli.main"]


def perflab(db: str, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PERFLAB, "--db", db, *args], capture_output=True, text=True, cwd=cwd, check=False)


def history_sample(repo: str, good: str, bad: str, most: int) -> list[str]:
    """good, bad, the first-parent commits, then commits spread over the graph order."""
    from perflab.analysis.bisect_graph import Graph
    from perflab.vcs import check_range, commit_graph, describe_commit

    good_sha, bad_sha = check_range(repo, good, bad)
    graph = Graph.of(describe_commit(repo, good_sha), commit_graph(repo, good_sha, bad_sha))
    chosen = [0, *graph.spine][: max(2, most)]
    rest = [i for i in range(len(graph.commits)) if i not in chosen]
    room = max(0, most - len(chosen))
    if room and rest:
        chosen += [rest[round(k * (len(rest) - 1) / max(1, room - 1))] for k in range(min(room, len(rest)))]
    if len(graph.commits) - 1 not in chosen:
        chosen[-1] = len(graph.commits) - 1
    return [graph.commits[i].sha for i in sorted(set(chosen))]


def record_history(args: argparse.Namespace, db: str, cache: str) -> tuple[int, int]:
    """Build and record the sampled commits in a shuffled order; (builds, runs)."""
    from perflab.execute.bisect_runs import BenchSpec, Skip, open_bench

    shas = history_sample(args.repo, args.good, args.bad, args.history_commits)
    random.Random(args.seed).shuffle(shas)
    runs = 0
    with open_bench(args.repo, BenchSpec(args.build, args.command, build_cache=cache)) as bench:
        for sha in shas:
            try:
                bench.build(sha)
            except Skip as why:
                print(f"history: {sha[:12]} skipped: {why}", file=sys.stderr)
                continue
            result = perflab(db, "run", "-q", "-n", str(args.runs), "--repo", args.repo, "--commit", sha,
                             "--label", "history", "--name", "bench", "--shell", "--", args.command,
                             cwd=bench.dirs[sha])
            if result.returncode != 0:
                print(f"history: {sha[:12]} run failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            runs += args.runs
            print(f"history: recorded {sha[:12]} ({len(shas)} commits)", file=sys.stderr)
        return bench.builds, runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", metavar="PATH")
    parser.add_argument("--good", required=True)
    parser.add_argument("--bad", required=True)
    parser.add_argument("--build", required=True, help="shell line that builds a checkout")
    parser.add_argument("--metric", default="user", help="what history and bisect read of a run (default user)")
    parser.add_argument("--history-commits", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5, help="runs per commit in the history")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", help="store (default: temporary)")
    parser.add_argument("--cache", help="build cache (default: temporary)")
    parser.add_argument("--bisect-arg", action="append", default=[], help="passed on to perflab bisect")
    parser.add_argument("command", nargs="+", metavar="-- CMD")
    args = parser.parse_args()
    args.command = " ".join(args.command)
    args.repo = os.path.abspath(args.repo)
    with tempfile.TemporaryDirectory(prefix="perflab-real-") as tmp:
        db = args.db or os.path.join(tmp, "perflab.db")
        cache = args.cache or os.path.join(tmp, "builds")
        wall = {}
        started = time.monotonic()
        history_builds, history_runs = record_history(args, db, cache)
        wall["history (builds and runs)"] = time.monotonic() - started
        for name, extra in (("history", ["--metric", args.metric]), ("changes", ["--metric", args.metric])):
            started = time.monotonic()
            out = perflab(db, name, *extra)
            wall[name] = time.monotonic() - started
            print(f"$ perflab {name} {' '.join(extra)}\n{out.stdout}{out.stderr}")
        started = time.monotonic()
        bisect_args = ["--repo", args.repo, "--good", args.good, "--bad", args.bad, "--build", args.build,
                       "--run", args.command, "--metric", args.metric, "--build-cache", cache, "--seed",
                       str(args.seed), *args.bisect_arg]
        out = perflab(db, "bisect", *bisect_args)
        wall["bisect"] = time.monotonic() - started
        print(f"$ perflab bisect {' '.join(bisect_args)}\n{out.stdout}")
        print("\n".join(line for line in out.stderr.splitlines() if not line.startswith("perflab: ends after")))
        stored = re.search(r"'perflab compare (\d+) (\d+)'", out.stdout)
        if stored:   # bisect's own runs, read back from the store
            shown = perflab(db, "compare", *stored.groups())
            print(f"$ perflab compare {' '.join(stored.groups())}\n{shown.stdout}{shown.stderr}")
    runs = re.search(r"(\d+) benchmark runs, (\d+) builds", out.stdout)
    bisect_runs, bisect_builds = (int(runs.group(1)), int(runs.group(2))) if runs else (0, 0)
    print("summary")
    print(f"  found: {out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()[-200:]}")
    print(f"  builds: {history_builds} for the history, {bisect_builds} more for bisect (cached trees reused)")
    print(f"  runs: {history_runs} for the history, {bisect_runs} for bisect")
    print("  wall time: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in wall.items()))
    return 0 if out.returncode in (0, 1) else out.returncode


if __name__ == "__main__":
    sys.exit(main())
