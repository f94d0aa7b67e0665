"""perflab ab: a baseline and a candidate command, interleaved, until the answer is clear."""

from __future__ import annotations

import sys

import click

from perflab.cli.common import COMMAND_LINE, LABEL, SECONDS, SEED, Finite, count, open_store, warn
from perflab.cli.run_options import ShellSpelling, export_options, exports_of, parse_duration, write_exports
from perflab.model.errors import UsageError

AB_METRICS = {"time": "wall time", "user": "user CPU time", "system": "system CPU time"}


def threshold_percent(text: str) -> float:
    """``1%`` or ``1`` -> 1.0 (a percentage, always); anything else is refused."""
    from perflab.cli.compare import percent
    value = percent(text, "--threshold")
    if not 0 < value < 100:
        raise UsageError(f"--threshold must be a percentage above 0 and below 100, got {text}")
    return value


@click.command(cls=ShellSpelling)
@click.option("--base", metavar="CMD", help="The baseline command line.")
@click.option("--cand", metavar="CMD", help="The candidate command line.")
@click.option("--threshold", default="1%", show_default=True, metavar="PCT",
              help="Smallest change that matters, in percent (1% or 1).")
@click.option("--metric", type=click.Choice(list(AB_METRICS)), default="time", show_default=True,
              help="What the test decides on: " + ", ".join(f"{k} ({v})" for k, v in AB_METRICS.items())
              + " (under another load, CPU time can decide where wall time cannot).")
@click.option("-m", "--min-runs", type=count(), default=5, show_default=True, help="Rounds before it may stop.")
@click.option("-M", "--max-runs", type=count(), default=200, show_default=True, help="Rounds at most.")
@click.option("--max-time", metavar="DURATION", help="Stop at the first round end after this long (30s, 10m).")
@click.option("--alpha", type=Finite(0, 0.5, min_open=True, max_open=True), default=0.05, show_default=True,
              help="Error rate of a decision (always valid: it holds however often the test looks).")
@click.option("-w", "--warmup", type=count(least=0), default=1, show_default=True, help="Unrecorded rounds first.")
@click.option("--label", type=LABEL, help="Label of the run (default: ab).")
@click.option("--shell", is_flag=True,
              help="Run both lines through /bin/sh -c, or --shell=bash through bash (start-up subtracted).")
@click.option("--shell-program", hidden=True)
@click.option("--prepare", metavar="CMD", help="Shell line before every sample (not timed).")
@click.option("--no-shuffle", is_flag=True, help="Base then cand in every round (default: random order).")
@click.option("--seed", type=SEED, help="Seed of the order inside each round.")
@click.option("--timeout", type=SECONDS, metavar="S", help="Kill a command's process group after S seconds.")
@click.option("-q", "--quiet", is_flag=True, help="No live view; only the decision.")
@export_options
@click.pass_context
def ab(ctx: click.Context, base: str | None, cand: str | None, threshold: str, metric: str, min_runs: int,
       max_runs: int,
       max_time: str | None, alpha: float, warmup: int, label: str | None, shell: bool,
       shell_program: str | None, prepare: str | None,
       no_shuffle: bool, seed: int | None, timeout: float | None, quiet: bool, **export_files: str | None) -> None:
    """Is CAND slower or faster than BASE by more than --threshold? The two alternate inside
    every round of one run (a drift of the machine hits both) and sampling stops as soon as
    a sequential test decides (stats.sequential_ab: an always-valid confidence interval of
    the change, error rate --alpha however often it looks), or at -M/--max-time: undecided.

    Exit codes, as 'perflab verdict': 0 decided no regression (no change beyond the
    threshold, or an improvement); 1 a regression; 125 undecided at the limit; 2 bad input.

    \b
      perflab ab --base './tool-old in.dat' --cand './tool-new in.dat' --threshold 1%
      perflab ab --base 'sleep 0.01' --cand 'sleep 0.03' -q
    """
    from perflab.analysis.ab import outcome
    from perflab.execute import record
    from perflab.model.run_request import AbRecord, AbSettings, Identity, RunOptions, RunRequest, Target
    from perflab.render import progress

    if not base or not cand:
        raise UsageError("ab needs two commands: --base CMD and --cand CMD")
    threshold_pct = threshold_percent(threshold)
    if not 0 < alpha < 0.5:
        raise UsageError(f"--alpha must be between 0 and 0.5, got {alpha}")
    if min_runs < 2:
        raise UsageError(f"-m/--min-runs must be at least 2, got {min_runs}")
    if max_runs < min_runs:
        raise UsageError(f"-M/--max-runs {max_runs} is below -m/--min-runs {min_runs}")
    seconds = parse_duration(max_time, "--max-time") if max_time is not None else None
    exports = exports_of(export_files)
    names = (base.strip(), cand.strip() + (" #2" if cand.strip() == base.strip() else ""))
    request = RunRequest(
        target=Target(commands=(base, cand), command_names=names, shell=shell_program or shell or None),
        options=RunOptions(repetitions=max_runs, warmup=warmup, shuffle=not no_shuffle, seed=seed,
                           timeout=timeout, prepare=prepare),
        ab=AbRecord(settings=AbSettings(threshold_pct=threshold_pct, alpha=alpha, min_runs=min_runs, max_runs=max_runs,
                               max_time_s=seconds, metric=metric)),
        identity=Identity(label=label or "ab", command_line=("perflab", *COMMAND_LINE)), exports=exports)
    prepared = record.prepare(request)
    with open_store(ctx, create=True) as store:
        run_id = record.record(store, prepared, lambda plans: progress.choose_live(quiet), warn)
        write_exports(store, run_id, exports)
        done = store.runs.resolve(str(run_id)).request
    assert done.ab is not None and done.ab.decision is not None
    _print_decision(done, names, metric, threshold_pct, run_id)
    sys.exit(outcome(done.ab.decision).exit_code)


def _print_decision(done, names: tuple[str, str], metric: str, threshold_pct: float, run_id: int) -> None:
    """The decision in three lines: the change, what was tested, the error rate and where it is kept."""
    decision = done.ab.decision
    low, high = decision.ci_pct
    click.echo(f"{decision.verdict or 'undecided'}: cand {names[1]!r} vs base {names[0]!r}"
               + (f" in {AB_METRICS[metric]}" if metric != "time" else "") + f": {decision.estimate_pct:+.2f}% "
               f"(+ = better), {100 * (1 - decision.alpha):g}% CI [{low:+.2f}%, {high:+.2f}%], "
               f"n = {decision.n} pairs")
    click.echo(f"  {decision.reason}")
    click.echo(f"  error rate: at most {decision.alpha:g} of decisions wrong (always-valid, however often it "
               f"looked); threshold {threshold_pct:g}%; run {run_id}"
               + (f", stopped after {done.stopped.rounds} rounds" if done.stopped else ""))


COMMANDS: list[click.Command] = [ab]
