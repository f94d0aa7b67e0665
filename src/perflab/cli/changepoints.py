"""Change points in any series: perflab changepoints FILE."""

from __future__ import annotations

import click

from perflab.model.errors import UsageError
from perflab.model.report.history import AUTO_METHOD, method_choices, method_help

METHOD_CHOICES = method_choices(auto=True)


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
@click.option("--window", type=int, default=50, show_default=True,
              help="e-divisive: points per sliding window.")
@click.option("--max-pvalue", type=float, default=0.001, show_default=True,
              help="e-divisive: keep change points with a t-test p-value at or below this.")
@click.option("--penalty", default="mbic", show_default=True,
              help="pelt/binseg: mbic, bic, aic or a number (times the noise variance).")
@click.option("--min-magnitude", default="0", show_default=True, metavar="PCT",
              help="Drop changes smaller than this relative change: 5% or 0.05.")
@click.option("--direction", type=click.Choice(["higher", "lower"]),
              help="Which way is better: orients the % change (+ = better) and names each point.")
@click.option("--spread", is_flag=True,
              help="mosum: also report changes in the noise's spread alone (shown as 'spread xF', the "
                   "ratio after/before; the false-alarm budget is split between the two searches). "
                   "Off by default: it costs the level search some power (bench/changepoints_accuracy.py).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
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
    from perflab.model.records import Direction
    from perflab.render.changepoints import render_json, render_table

    magnitude = _fraction(min_magnitude)
    try:
        penalty_value: str | float = float(penalty)
    except ValueError:
        penalty_value = penalty
    found = file_changes(read_series_file(file), columns, method=method, window=window, max_pvalue=max_pvalue,
                         penalty=penalty_value, min_magnitude=magnitude,
                         direction=Direction(direction) if direction else None, spread=spread)
    click.echo(render_json(found) if fmt == "json" else render_table(found), nl=False)


COMMANDS: list[click.Command] = [changepoints]
