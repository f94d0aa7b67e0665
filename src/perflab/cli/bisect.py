"""Bisecting a performance change: perflab bisect, perflab verdict A B."""

from __future__ import annotations

import os
import sys

import click

from perflab.cli.common import LABEL, RATE, SECONDS, SEED, count, open_store, warn
from perflab.model.errors import EnvironmentProblem
from perflab.model.report.bisect import BISECT_METRICS, FOUND
from perflab.model.report.verdict import DEFAULT_VERDICT_METHOD, VERDICT_METHODS

EXIT_FOUND = 0
EXIT_NOT_FOUND = 1   # good and bad do not differ, or no decision (only skipped commits left)


def _check_build_cache(directory: str) -> None:
    """--build-cache DIR made (as open_bench would) and writable, before the store is."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise EnvironmentProblem(f"cannot use --build-cache {directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise EnvironmentProblem(f"cannot use --build-cache {directory}: not writable")


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
@click.option("--higher-is-better", is_flag=True,
              help="--metric-regex's figure is a rate (ops/s): 'vs good' is then positive when it rises.")
@click.option("--confidence", default=0.99, show_default=True, type=RATE,
              help="Confidence of the result (each step's error rate is 1 - confidence over the number of steps).")
@click.option("--min-runs", default=3, show_default=True, type=count(),
              help="Fewest runs per probed commit (each paired with a run of good or bad).")
@click.option("--max-runs", default=100, show_default=True, type=count(),
              help="Most runs per probed commit; then it is called by the closer end (low confidence).")
@click.option("--timeout", type=SECONDS, metavar="S", help="A run taking longer is killed: the commit is skipped.")
@click.option("--seed", type=SEED, help="Seed of the order inside each pair of runs (default: drawn, and reported).")
@click.option("--first-parent", is_flag=True,
              help="Search the first-parent line only; a merge found there is descended into.")
@click.option("--direction", type=click.Choice(["any", "regression", "improvement"]), default="any",
              show_default=True, help="The change to look for; 'any' takes what good and bad measure.")
@click.option("--neither", type=click.Choice(["continue", "skip", "stop"]), default="continue",
              show_default=True,
              help="At a commit like neither end: go on (between counts as new, beyond as the end it "
                   "is past), skip it, or stop there.")
@click.option("--term-old", default="old", show_default=True, help="The word for a commit like good.")
@click.option("--term-new", default="new", show_default=True, help="The word for a commit like bad.")
@click.option("--build-cache", type=click.Path(file_okay=False), metavar="DIR",
              help="Keep built trees in DIR (by tree hash and build line) for later bisects; "
                   "default: a temporary directory.")
@click.option("--clean", metavar="CMD",
              help="Reuse one worktree for every build: check the commit out there, run CMD (e.g. "
                   "'make clean'), then --build; default: a fresh worktree per commit.")
@click.option("--label", type=LABEL, metavar="LABEL",
              help="Store the runs under LABEL (default: bisect-<8 hex digits>, printed at the end).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
@click.pass_context
def bisect(ctx: click.Context, repo: str, good: str, bad: str, build: str, run_line: str, metric: str,
           metric_regex: str | None, higher_is_better: bool, confidence: float, min_runs: int, max_runs: int,
           timeout: float | None, seed: int | None, first_parent: bool, direction: str, neither: str,
           term_old: str, term_new: str, build_cache: str | None, clean: str | None, label: str | None,
           quiet: bool) -> None:
    """Find the first commit between GOOD and BAD that changed the run's performance.

    \b
    How it walks: like `git bisect`, over every commit of good..bad (merged branches
    included), each step probing the commit whose ancestors halve the suspects.
    --first-parent walks the first-parent line only and, when that ends on a merge,
    descends into the branch it merged; the answer names the path (merge, then commit).
    How it builds: each commit in a fresh git worktree of its own (a clean checkout,
    never your checkout), the build line run there once per tree: a commit whose tree
    was built already (same tree hash and build line) is not built again. With --clean
    CMD one worktree is reused instead (incremental builds): the commit is checked
    out there, CMD runs, then the build line, and the built tree is copied out.
    What it keeps: every run, as a sample of its commit's run in the store (--db),
    labelled bisect-<id> (--label): 'perflab show', 'compare' and 'history' read them.
    How it measures: runs in pairs, each run of a probed commit beside a run of good
    or bad, so a machine whose speed drifts cannot fool the comparison. Good and bad
    are first checked to differ; that change names the answer ("first faster
    commit"). A sequential test samples each commit until it is like old or like
    new at the stated confidence, or like neither end (significantly apart from both:
    between them, as in a gradual change, or beyond one); a gradual change is
    followed and each commit's share reported. Commits whose build or run fails are
    skipped and named. Changes are in % with + = better.

    \b
      perflab bisect --repo ~/src/tool --good v1.2 --bad main --build 'make -j2' --run './tool bench.in'
      perflab bisect --good A --bad B --build make --run './bench' --metric-regex 'ops/s: ([0-9.]+)'

    Exit: 0 found, 1 good and bad do not differ, differ the other way than --direction,
    only skipped commits are left, or --neither stop stopped,
    2 usage (unknown commit, good == bad, good not an ancestor of bad), 3 git missing.
    """
    from perflab.analysis.bisect import BisectOptions, check_options, stored_metric
    from perflab.analysis.bisect import bisect as run_bisect
    from perflab.execute.bisect_record import BisectRecorder, new_label
    from perflab.render.bisect import render_bisect
    from perflab.vcs import check_range

    options = BisectOptions(build=build, run=run_line, metric=metric, metric_regex=metric_regex,
                            higher_is_better=higher_is_better,
                            timeout=timeout, confidence=confidence, min_pairs=min_runs,
                            max_pairs=max_runs, seed=seed, first_parent=first_parent, direction=direction,
                            neither=neither, terms=(term_old, term_new), build_cache=build_cache, clean=clean)
    check_options(options)   # before the store is created: a refused bisect leaves nothing behind
    check_range(repo, good, bad)
    if build_cache is not None:
        _check_build_cache(build_cache)
    progress = (lambda line: None) if quiet else (lambda line: click.echo(f"perflab: {line}", err=True))
    with open_store(ctx, create=True) as store:
        recorder = BisectRecorder(store, repo, label or new_label(), stored_metric(options), run_line, build,
                                  timeout, db=ctx.find_root().obj["db"])
        result = run_bisect(repo, good, bad, options, progress, recorder)
    click.echo(render_bisect(result), nl=False)
    if result.outcome != FOUND:
        click.echo(f"perflab: {result.message}", err=True)
        sys.exit(EXIT_NOT_FOUND)


@click.command()
@click.argument("good_ref", metavar="A")
@click.argument("candidate_ref", metavar="B")
@click.option("--metric", "metrics", multiple=True,
              help="Metric(s) to judge [default: time if A has it, else every metric].")
@click.option("--method", type=click.Choice(list(VERDICT_METHODS)), default=DEFAULT_VERDICT_METHOD,
              show_default=True, help="The test: " + "; ".join(f"{name}: {text}" for name, text in
                                                                VERDICT_METHODS.items()) + ".")
@click.option("--noise-floor", metavar="PCT", help="Smallest change called a change (default: per metric, 1%).")
@click.option("--threshold", metavar="PCT",
              help="Smallest regression that matters (default: the noise floor): bad needs a significant "
              "regression this large; good needs the interval to rule one out.")
@click.pass_context
def verdict(ctx: click.Context, good_ref: str, candidate_ref: str, metrics: tuple[str, ...],
            method: str, noise_floor: str | None, threshold: str | None) -> None:
    """Is run B like the known-good run A? For `git bisect run`.

    A and B are runs in the store (ids, labels or commits). Three-way, by the metric's
    direction (Mann-Whitney U by default, Benjamini-Hochberg FDR 5% over the judged rows;
    T = --threshold, by default the metric's noise floor): exit 1 (bad) on a significant
    regression of T or more; 0 (good) when every row's 95% interval rules out a
    regression of T or more; 125 (git bisect skips the commit) when B has no usable
    samples or a row cannot be decided (too few samples for the test to ever reach
    p < 0.05, or an interval too wide): the message says what is missing. 2 for usage
    errors (git bisect run takes 2 as "bad"; try the script by hand first).

    \b
    A script for git bisect run (record the good run once, as label 'good'):
      #!/bin/sh
      make -j2 || exit 125
      perflab run -q -n 10 --label cand -- ./tool bench.in || exit 125
      exec perflab verdict good cand
    then: git bisect start BAD GOOD && git bisect run ./check.sh
    """
    from perflab.analysis.verdict import judge
    from perflab.cli.compare import percent
    from perflab.model.report.verdict import Outcome

    floor = percent(noise_floor, "--noise-floor") / 100 if noise_floor is not None else None
    limit = percent(threshold, "--threshold") / 100 if threshold is not None else None
    with open_store(ctx, create=False) as store:
        base, candidate = store.runs.resolve(good_ref), store.runs.resolve(candidate_ref)
        result = judge(store, base, candidate, metrics=set(metrics), method=method, noise_floor=floor,
                       threshold=limit)
    for text in result.warnings:
        warn(text)
    names = f"{_name(candidate)} against {_name(base)}"
    if result.outcome is Outcome.SKIP:
        click.echo(f"skip: {result.missing}")
    elif result.outcome is Outcome.BAD:
        click.echo(f"bad: {names}: {_describe(*result.decisive)}")  # type: ignore[misc]
    elif result.outcome is Outcome.UNDECIDED:
        click.echo(f"undecided: {names}: no significant regression, but {_describe(*result.decisive)} "  # type: ignore[misc]
                   f"could not be decided: {result.missing}")
    else:
        click.echo(f"good: {names}: no significant regression; least favourable: "
                   f"{_describe(*result.decisive)}")  # type: ignore[misc]
    if result.test:
        click.echo(f"perflab: test: {result.test}", err=True)
    sys.exit(result.outcome.exit_code)


def _name(run) -> str:
    commit = f", {run.commit[:12]}" if run.commit else ""
    return f"run {run.id} ({run.label}{commit})"


def _describe(row, change) -> str:
    point = "" if row.point == "-" else f" {row.point}"
    n_new = row.cells[0].side.n if row.cells[0].side else 0
    return (f"{row.benchmark}{point} {row.metric} {change.pct:+.2f}% (+ = better; "
            f"p = {change.p_value:.3g}, n = {row.base.n} vs {n_new})")


COMMANDS: list[click.Command] = [bisect, verdict]
