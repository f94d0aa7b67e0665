"""Change points in any series: perflab changepoints FILE."""

from __future__ import annotations

import math

import click

from perflab.cli.common import Finite, count, format_option
from perflab.model.errors import UsageError
from perflab.model.methods import AUTO_METHOD, EDivisiveParams, PenaltyParams, method_choices, method_help, takers
from perflab.render.changepoints import CHANGEPOINT_FORMATS

METHOD_CHOICES = method_choices(auto=True)
MIN_WINDOW = 6          # e-divisive: two segments of its least size (2 x stats.changepoints.E_DIVISIVE_MIN_SEGMENT)
MAX_WINDOW = 2_000      # e-divisive holds window² distances: 32 MB at this size
PENALTY_NAMES = ("mbic", "bic", "aic")


def _penalty(text: str) -> str | float:
    """--penalty: a criterion's name, or a finite factor >= 0 of the noise variance."""
    if text.strip().lower() in PENALTY_NAMES:
        return text.strip().lower()
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"bad --penalty {text[:40]!r}: expected mbic, bic, aic or a number >= 0") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--penalty must be mbic, bic, aic or a finite number >= 0, got {text[:40]}")
    return value


def _fraction(text: str) -> float:
    """--min-magnitude: '5%' or a fraction '0.05' (Otava's unit)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(f"bad --min-magnitude {text!r}: expected 5% or a fraction like 0.05") from None
    if not 0.0 <= value < 1e6:
        raise UsageError(f"bad --min-magnitude {text!r}: must be >= 0")
    return value


@click.command("changepoints")
@click.argument("file", metavar="FILE")
@click.option("-c", "--column", "columns", multiple=True, metavar="NAME",
              help="Metric column to analyse; repeat for several [default: every numeric column].")
@click.option("--method", type=click.Choice(METHOD_CHOICES), default=AUTO_METHOD, show_default=True,
              help=method_help(auto=True))
@click.option("--window", type=count(MAX_WINDOW, least=MIN_WINDOW), default=EDivisiveParams().window,
              show_default=True, help=f"{takers('window')}: points per sliding window.")
@click.option("--max-pvalue", type=Finite(0, 1, min_open=True), default=EDivisiveParams().max_pvalue,
              show_default=True, help=f"{takers('max_pvalue')}: keep change points with a t-test p-value at or "
                                      "below this.")
@click.option("--penalty", default=PenaltyParams().penalty, show_default=True,
              help=f"{takers('penalty')}: mbic, bic, aic or a number (times the noise variance).")
@click.option("--min-magnitude", default="0", show_default=True, metavar="PCT",
              help="Drop changes smaller than this relative change: 5% or 0.05.")
@click.option("--direction", type=click.Choice(["higher", "lower"]),
              help="Which way is better: orients the % change (+ = better) and names each point.")
@click.option("--spread", is_flag=True,
              help=f"{takers('spread')}: also report changes in the noise's spread alone (shown as 'spread xF', the "
                   "ratio after/before; the false-alarm budget is split between the two searches). "
                   "Off by default: it costs the level search some power (bench/changepoints_accuracy.py).")
@format_option(CHANGEPOINT_FORMATS)
def changepoints(file: str, columns: tuple[str, ...], method: str, window: int, max_pvalue: float,
                 penalty: str, min_magnitude: str, direction: str | None, spread: bool, fmt: str) -> None:
    """Change points in the mean of the series in FILE (CSV with a header, or JSON).

    CSV: a header, an optional time/commit column, metric columns; rows with the same
    commit are several samples of it. JSON: a list of numbers, of lists, or of objects.
    Empty cells / null are missing points. Prints each change's 0-based index (the first
    point of the new regime), mean ±stddev before and after, % change and p-value; FILE
    '-' reads stdin.
    """
    from perflab.analysis.changepoints import file_changes
    from perflab.formats.series import read_series_file
    from perflab.model.methods import DetectSettings
    from perflab.model.records import Direction

    settings = DetectSettings(window=window, max_pvalue=max_pvalue, penalty=_penalty(penalty),
                              min_magnitude=_fraction(min_magnitude), spread=spread)
    series = read_series_file(file)
    if series.dropped:
        from perflab.cli.common import warn
        from perflab.formats.series import MAX_MAGNITUDE
        counts = ", ".join(f"{n} of {column!r}" for column, n in series.dropped.items())
        warn(f"{series.path}: dropped {sum(series.dropped.values())} values too large to analyse "
             f"(infinite or beyond ±{MAX_MAGNITUDE:g}): {counts}")
    found = file_changes(series, columns, method=method, settings=settings,
                         direction=Direction(direction) if direction else None)
    click.echo(CHANGEPOINT_FORMATS[fmt].render(found), nl=False)


COMMANDS: list[click.Command] = [changepoints]
