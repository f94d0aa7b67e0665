"""Bisecting a performance change: perflab bisect, perflab verdict A B."""

from __future__ import annotations

import sys

import click

from perflab.cli.common import open_store, warn
from perflab.model.errors import UsageError
from perflab.model.report.bisect import BISECT_METRICS, FOUND

EXIT_FOUND = 0
EXIT_NOT_FOUND = 1   # good and bad do not differ, or no decision (only skipped commits left)
EXIT_SKIP = 125      # git bisect run: this commit cannot be tested


@click.command()
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False),
              help="The git repository (left untouched: temporary worktrees are used).")
@click.option("--good", required=True, metavar="COMMIT", help="A commit with the old performance.")
@click.option("--bad", required=True, metavar="COMMIT", help="A later commit with the new performance.")
@click.option("--build", required=True, metavar="CMD",
              help="Shell line that builds the checked-out commit (cwd: the worktree); non-zero exit = skip.")
@click.option("--run", "run_line", required=True, metavar="CMD",
              help="Shell line whose run is measured (cwd: the worktree); non-zero exit = skip.")
@click.option("--metric", default="time", show_default=True, type=click.Choice(list(BISECT_METRICS)),
              help="What to measure of each run: "
                   + "; ".join(f"{name}: {text}" for name, text in BISECT_METRICS.items()) + ".")
@click.option("--metric-regex", metavar="REGEX",
              help="Take the metric from the run's stdout instead: the first group of the last match.")
@click.option("--confidence", default=0.99, show_default=True, type=float,
              help="Confidence of the result (each step's error rate is 1 - confidence over the number of steps).")
@click.option("--min-runs", default=3, show_default=True, type=int,
              help="Fewest runs per probed commit (each paired with a run of good or bad).")
@click.option("--max-runs", default=100, show_default=True, type=int,
              help="Most runs per probed commit; then it is called by the closer end (low confidence).")
@click.option("--timeout", type=float, metavar="S", help="A run taking longer is killed: the commit is skipped.")
@click.option("--seed", type=int, help="Seed of the order inside each pair of runs (default: drawn, and reported).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
def bisect(repo: str, good: str, bad: str, build: str, run_line: str, metric: str,
           metric_regex: str | None, confidence: float, min_runs: int, max_runs: int,
           timeout: float | None, seed: int | None, quiet: bool) -> None:
    """Find the first commit between GOOD and BAD that changed the run's performance.

    \b
    Good, bad and each probed commit are built in temporary git worktrees (your
    checkout is not touched). Runs are made in pairs: each run of a probed commit
    beside a run of good or bad, so a machine whose speed drifts cannot fool the
    comparison. A sequential test samples each commit until it is like-good or
    like-bad at the stated confidence. Good and bad are first checked to differ
    significantly. Commits whose build or run fails are skipped and named.

    \b
      perflab bisect --repo ~/src/tool --good v1.2 --bad main --build 'make -j2' --run './tool bench.in'
      perflab bisect --good A --bad B --build make --run './bench' --metric-regex 'ops/s: ([0-9.]+)'

    Exit: 0 found, 1 good and bad do not differ (or only skipped commits are left),
    2 usage (unknown commit, good == bad, good not an ancestor of bad), 3 git missing.
    """
    from perflab.analysis.bisect import BisectOptions
    from perflab.analysis.bisect import bisect as run_bisect
    from perflab.render.bisect import render_bisect

    options = BisectOptions(build=build, run=run_line, metric=metric, metric_regex=metric_regex,
                            timeout=timeout, confidence=confidence, min_pairs=min_runs,
                            max_pairs=max_runs, seed=seed)
    progress = (lambda line: None) if quiet else (lambda line: click.echo(f"perflab: {line}", err=True))
    result = run_bisect(repo, good, bad, options, progress)
    click.echo(render_bisect(result), nl=False)
    if result.outcome != FOUND:
        click.echo(f"perflab: {result.message}", err=True)
        sys.exit(EXIT_NOT_FOUND)


@click.command()
@click.argument("good_ref", metavar="A")
@click.argument("candidate_ref", metavar="B")
@click.option("--metric", "metrics", multiple=True,
              help="Metric(s) to judge [default: time if A has it, else every metric].")
@click.option("--method", type=click.Choice(["mann-whitney", "welch-log"]), default="mann-whitney",
              show_default=True, help="The test: ranks (one stray run moves one rank) or Welch on logs.")
@click.pass_context
def verdict(ctx: click.Context, good_ref: str, candidate_ref: str, metrics: tuple[str, ...],
            method: str) -> None:
    """Is run B like the known-good run A? For `git bisect run`.

    A and B are runs in the store (ids or labels). Exit 0 when B shows no significant
    regression of the metric against A (Mann-Whitney U by default, FDR 5%, beyond the
    metric's noise floor), 1 when it is significantly worse (by the metric's direction),
    125 when B has no usable samples (every run failed: git bisect skips it), 2 for
    usage errors (note: git bisect run takes 2 as "bad"; try the script by hand first).

    \b
    A script for git bisect run (record the good run once, as label 'good'):
      #!/bin/sh
      make -j2 || exit 125
      perflab run -q -n 10 --label cand -- ./tool bench.in || exit 125
      exec perflab verdict good cand
    then: git bisect start BAD GOOD && git bisect run ./check.sh
    """
    from perflab.analysis.compare import Filters, compare_runs

    with open_store(ctx, create=False) as store:
        base, candidate = store.resolve_run(good_ref), store.resolve_run(candidate_ref)
        chosen = set(metrics)
        if not chosen:
            base_metrics = {g.metric for g in store.value_groups(base.id)}
            chosen = {"time"} if "time" in base_metrics else set()
        usable = [g for g in store.value_groups(candidate.id, None, chosen or None) if g.values.size]
        if not usable:
            click.echo(f"skip: run {candidate.id} ({candidate.label}) has no usable samples"
                       f"{' of ' + ', '.join(sorted(chosen)) if chosen else ''}")
            sys.exit(EXIT_SKIP)
        if not any(g.values.size for g in store.value_groups(base.id, None, chosen or None)):
            raise UsageError(f"reference run {base.id} ({base.label}) has no usable samples"
                             f"{' of ' + ', '.join(sorted(chosen)) if chosen else ''}")
        comparison = compare_runs(store, [base, candidate], filters=Filters.parse([], sorted(chosen)),
                                  method=method)
    for text in comparison.warnings:
        warn(text)
    judged = [(row, row.cells[0].difference) for row in comparison.rows if row.cells[0].difference is not None]
    worse = [(row, d) for row, d in judged if d.verdict == "worse"]
    if worse:
        row, d = min(worse, key=lambda item: item[1].change_pct)
        click.echo(f"bad: {candidate.label} is worse than {base.label}: {_describe(row, d)}"
                   f"{f' (and {len(worse) - 1} more rows)' if len(worse) > 1 else ''}")
        sys.exit(1)
    if not judged:
        click.echo(f"skip: no metric of {candidate.label} pairs with {base.label}")
        sys.exit(EXIT_SKIP)
    row, d = min(judged, key=lambda item: item[1].change_pct if item[1].change_pct == item[1].change_pct else 0)
    click.echo(f"good: {candidate.label} has no significant regression against {base.label}; "
               f"least favourable: {_describe(row, d)}")


def _describe(row, d) -> str:
    point = "" if row.point == "-" else f" {row.point}"
    return (f"{row.benchmark}{point} {row.metric} {d.change_pct:+.2f}% (positive = better; "
            f"{d.verdict.value}, p = {d.p_value:.3g}, n = {d.base.n} vs {d.new.n})")


COMMANDS: list[click.Command] = [bisect, verdict]
