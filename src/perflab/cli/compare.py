"""Comparing runs: perflab compare, and perflab import of other tools' results."""

from __future__ import annotations

import math
import sys

import click

from perflab.cli.common import LABEL, RATE, check_output, format_option, open_store, write_output
from perflab.model.errors import EXIT_SKIP, EXIT_VERDICT, UsageError
from perflab.model.methods import DEFAULT_COMPARE_TEST, METHOD_NAMES
from perflab.render.compare import FORMATS as COMPARE_FORMATS


def percent(text: str, option: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise UsageError(f"bad {option} {text!r}: expected a percentage like 2%") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{option} must be a finite percentage >= 0, got {text[:40]}")
    return value


@click.command()
@click.argument("run_refs", nargs=-1, required=True, metavar="RUN...")
@format_option(COMPARE_FORMATS)
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
              help="benchmark=NAME or PARAM=VALUE[,VALUE]; repeatable.")
@click.option("--metric", "metrics", multiple=True,
              help="Only these metrics; repeatable (default: each benchmark's primary one, e.g. time).")
@click.option("--all", "all_metrics", is_flag=True, help="Every metric the benchmarks recorded.")
@click.option("-v", "--verbose", is_flag=True, help="Every warning of every row, not counts by kind.")
@click.option("--method", type=click.Choice(list(METHOD_NAMES)), default=DEFAULT_COMPARE_TEST, show_default=True,
              help="The test (or a reference tool's rule): "
              + "; ".join(f"{key}: {name}" for key, name in METHOD_NAMES.items()) + ".")
@click.option("--fdr", type=RATE, default=0.05, show_default=True,
              help="False discovery rate controlled across the report.")
@click.option("--noise-floor", metavar="PCT", help="Smallest change called a change (default: per metric, 1%).")
@click.option("--rows", default="amean", show_default=True,
              help="mmtests rows: amean,min,max,stddev,coeffvar,bamean-95,...")
@click.option("--fail-on", type=click.Choice(["regression"]),
              help="Exit 1 on a significant regression, 125 when a row could not be judged (see --undecided).")
@click.option("--threshold", default="0%", show_default=True, help="Smallest regression that fails --fail-on.")
@click.option("--undecided", "on_undecided", type=click.Choice(["skip", "fail", "pass"]), default="skip",
              show_default=True, help="--fail-on when a row can rule out neither: exit 125 (skip), 1 (fail), "
              "or 0 (pass: passes what it could not judge, as the gate once did).")
@click.option("--width", type=click.IntRange(40, 1000), metavar="COLUMNS",
              help="mmtests: narrow the value columns to fit this many columns where they can.")
@click.option("--base", "base_point", metavar="KEY=VALUE",
              help="Compare the points of one run: those with KEY=VALUE are the baseline, each other value "
                   "of KEY a candidate.")
@click.option("--reference", metavar="NAME",
              help="One run of several commands: the command the others are compared with (default: the first).")
@click.option("--profile", "with_profile", is_flag=True,
              help="Add profile deltas (points) and counter deltas, lkp style (mmtests, lkp, json).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Write the report to this file instead of stdout (e.g. --format html -o cmp.html).")
@click.pass_context
def compare(ctx: click.Context, run_refs: tuple[str, ...], fmt: str, filters: tuple[str, ...],
            metrics: tuple[str, ...], method: str, fdr: float, noise_floor: str | None, rows: str,
            fail_on: str | None, threshold: str, width: int | None, base_point: str | None,
            reference: str | None, with_profile: bool, output: str | None, all_metrics: bool,
            verbose: bool, on_undecided: str) -> None:
    """Compare runs (ids or labels), the points of one run, or the commands of one run.

    \b
      perflab compare BASE CAND [CAND...]      the first run is the baseline
      perflab compare RUN --base KEY=VALUE     its points against those with KEY=VALUE
      perflab compare RUN                      a run of several commands (perflab run
                                               'a' 'b', or perflab ab): each against
                                               the first, or --reference NAME
    """
    from perflab.analysis.compare import Filters
    from perflab.render.compare import PROFILE_FORMATS, render_comparison
    from perflab.render.compare_common import parse_rows

    _check_shape(run_refs, base_point, reference, with_profile)
    if not 0 < fdr < 1:
        raise UsageError(f"--fdr must be between 0 and 1, got {fdr}")
    limit = percent(threshold, "--threshold")
    floor = percent(noise_floor, "--noise-floor") / 100 if noise_floor is not None else None
    selection = Filters.parse(list(filters), list(metrics))
    row_names = tuple(r.strip() for r in rows.split(","))
    stats, _ = parse_rows(row_names)  # a bad --rows fails before the database opens
    if output:
        check_output(output)  # a path that cannot be written fails before the work
    if with_profile and fmt not in PROFILE_FORMATS:
        raise UsageError(f"--profile works with --format {', '.join(PROFILE_FORMATS)}, not {fmt}")
    tests = {"method": method, "q": fdr, "noise_floor": floor}
    with open_store(ctx, create=False) as store:
        report = _report(store, [store.runs.resolve(ref) for ref in run_refs], selection, base_point, reference,
                         all_metrics, with_profile, best=[s.pct for s in stats if s.key == "best"], tests=tests)
    if COMPARE_FORMATS[fmt].benchstat:   # benchstat's own statistics, computed only when its table is asked for
        from perflab.analysis.benchstat import with_benchstat
        report = with_benchstat(report)
    text = render_comparison(report, fmt, rows=row_names, width=width, verbose=verbose)
    if output:
        write_output(output, text)
    else:
        click.echo(text, nl=False)
    if fail_on:
        _fail_on_regression(report, limit, on_undecided)


def _check_shape(run_refs: tuple[str, ...], base_point: str | None, reference: str | None,
                 with_profile: bool) -> None:
    """The runs named and the options that say what to compare agree, before any work."""
    if base_point is not None:
        key, sep, value = base_point.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"bad --base {base_point!r}: expected KEY=VALUE, a parameter of the run's points")
        if len(run_refs) != 1 or with_profile:
            raise UsageError("--base compares the points of one run: name one run (and no --profile)")
    elif len(run_refs) < 2 and (with_profile or not run_refs):
        raise UsageError("compare needs a baseline and at least one candidate")
    if reference is not None and (len(run_refs) != 1 or base_point is not None):
        raise UsageError("--reference names a command of one run of several commands: name one run (no --base)")


def _report(store, runs, selection, base_point: str | None, reference: str | None, all_metrics: bool,
            with_profile: bool, *, best: list[int], tests: dict):
    """The comparison asked for: the commands of one run, the points of one run against
    --base, or runs against the first; with --profile its profile deltas."""
    from dataclasses import replace

    from perflab.analysis.compare import compare_named, compare_points
    if base_point is not None:
        key, _, value = base_point.partition("=")
        report = compare_points(store, runs[0], key, value, filters=selection, best_pcts=best,
                                all_metrics=all_metrics, **tests)
    else:
        report = compare_named(store, runs, reference, filters=selection, best_pcts=best,
                               all_metrics=all_metrics, **tests)
    if with_profile:
        from perflab.analysis.profile import profile_report
        report = replace(report, profile=profile_report(store, runs, filters=selection, **tests))
    return report


def _fail_on_regression(report, limit: float, on_undecided: str) -> None:
    """--fail-on regression: exit EXIT_VERDICT on a significant regression of at least
    ``limit`` %, EXIT_SKIP (or as --undecided says) when a row could rule out neither, with
    the gate's outcome on stderr either way."""
    from perflab.analysis.gate import gate
    result = gate(report, limit)
    if result.failed:
        row, index, change = result.failed[0]
        click.echo(f"perflab: --fail-on regression: failed: {len(result.failed)} significant regression(s) of at "
                   f"least {limit:g}%; first: {row.benchmark} {row.point} {row.metric} {change.pct:+.2f}% "
                   f"in {report.labels[index + 1]}", err=True)
        sys.exit(EXIT_VERDICT)
    if result.undecided and on_undecided != "pass":
        click.echo(f"perflab: --fail-on regression: undecided: {len(result.undecided)} of {result.compared} "
                   f"comparison(s) rule out neither a regression of {limit:g}% nor its absence"
                   f"{' (--undecided fail)' if on_undecided == 'fail' else ''}:", err=True)
        for open_row in result.undecided[:5]:
            click.echo(f"  {open_row.title} {open_row.pct:+.2f}%: {open_row.missing}", err=True)
        if len(result.undecided) > 5:
            click.echo(f"  and {len(result.undecided) - 5} more (--format json has every row)", err=True)
        sys.exit(EXIT_VERDICT if on_undecided == "fail" else EXIT_SKIP)
    unjudged = f"; {len(result.undecided)} undecided passed (--undecided pass)" if result.undecided else ""
    click.echo(f"perflab: --fail-on regression: passed: no significant regression of at least {limit:g}% "
               f"in {result.compared} comparison(s){unjudged}", err=True)


def _import_help() -> str:
    from perflab.formats.importers import IMPORTERS
    kinds = "\n".join(f"  {i.name:<10} {i.description}" for i in IMPORTERS.values())
    return ("Import another tool's result file as a run.\n\n\b\n" + kinds + "\n\n"
            "A repetition that exited non-zero (hyperfine --ignore-failure) is a failed sample "
            "that keeps its time; -i keeps it as a value, as 'perflab run -i' does.")


def _import_kinds() -> list[str]:
    from perflab.formats.importers import KINDS
    return list(KINDS)


@click.command(name="import", help=_import_help())
@click.argument("kind", type=click.Choice(_import_kinds()))
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--label", type=LABEL, required=True, help="Label of the new run.")
@click.option("-i", "--ignore-failure", is_flag=True,
              help="Keep repetitions that exited non-zero as values (noted with their exit status).")
@click.option("--host", metavar="NAME", help="The machine the file was recorded on, where the file does not say "
              "(else unknown: never a replicate of another run).")
@click.pass_context
def import_(ctx: click.Context, kind: str, path: str, label: str, ignore_failure: bool, host: str | None) -> None:
    from perflab.formats.nesting import too_deep_at_start
    if too_deep_at_start(path):   # before the parsers and the store are imported: 0.1 s, not 0.4
        raise UsageError(f"cannot import {path} as {kind} JSON: JSON nested too deeply")
    from perflab.analysis.importing import import_file
    from perflab.formats.importers import parse_file
    if host is not None and not host.strip():
        raise UsageError("--host needs a machine's name (leave it out when the machine is unknown)")
    progress = _ImportProgress(path)
    # fails here, before the database opens
    parsed = parse_file(kind, path, ignore_failure=ignore_failure, progress=progress.checking)
    with open_store(ctx, create=True) as store:
        run_id = import_file(store, parsed, label, progress=progress, host=host)
    click.echo(f"imported {path} as run {run_id} ({label})")


class _ImportProgress:
    """A line on stderr every few seconds while a large import is written."""

    EVERY_S = 2.0

    def __init__(self, path: str):
        import time
        self._clock, self._path = time.monotonic, path
        self._started = self._last = self._clock()
        self._writing: int | None = None

    def checking(self, read: int, size: int) -> None:
        """Told as the file is checked (its first reading), before anything is written."""
        if self._due() and read < size:
            click.echo(f"perflab: checking {self._path}: {read / 1e6:,.0f} of {size / 1e6:,.0f} MB read", err=True)

    def __call__(self, written: int, total: int) -> None:
        if self._writing is None:  # the rate counts from the first batch written, not the checking
            self._writing, self._started = written, self._clock()
        if self._due() and written < total:
            now = self._clock()
            click.echo(f"perflab: importing {self._path}: {written:,} of {total:,} repetitions "
                       f"({(written - self._writing) / max(now - self._started, 1e-9):,.0f}/s)", err=True)

    def _due(self) -> bool:
        now = self._clock()
        if now - self._last < self.EVERY_S:
            return False
        self._last = now
        return True


COMMANDS: list[click.Command] = [compare, import_]
