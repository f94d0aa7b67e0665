"""The report formats of ``perflab compare``: one registry, one function.

``render_comparison(report, fmt, rows=...)`` lays out a ``model.report.compare.CompareReport``
(built by analysis; nothing is computed here) and returns the whole report as text ending
in a newline. ``FORMATS`` is the family's registry (model.output_formats): the CLI's
choices and help come from it.

``rows`` picks the mmtests summary rows (amean — the metric's own mean, Hmean for
rates —, min, max, stddev, coeffvar, median, bamean-N); ``all`` makes lkp list
unchanged stats too. A report with profile deltas (``compare --profile``) shows them in
the formats marked ``profile``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from perflab.model.errors import UsageError
from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.report.compare import CompareReport, ProfileReport
from perflab.render.compare_common import Stat, parse_rows

CompareLayout = Callable[[CompareReport, list[Stat], bool, int | None, bool], str]


@dataclass(frozen=True, kw_only=True)
class Format(OutputFormat[CompareLayout]):
    profile: bool = False     # shows profile and counter deltas (compare --profile)
    benchstat: bool = False   # lays out benchstat's own statistics (analysis.benchstat.with_benchstat)


def _mmtests(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_mmtests import render_mmtests
    return render_mmtests(report, stats, show_all, width, verbose)


def _lkp(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_lkp import render_lkp
    return render_lkp(report, show_all=show_all, verbose=verbose)


def _benchstat(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_benchstat import render_benchstat
    return render_benchstat(report, verbose)


def _speedup(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_speedup import render_speedup
    return render_speedup(report, verbose)


def _markdown(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_markdown import render_markdown
    return render_markdown(report, verbose)


def _json(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_data import render_json
    return render_json(report)


def _csv(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_data import render_csv
    return render_csv(report)


def _html(report: CompareReport, stats: list[Stat], show_all: bool, width: int | None,
         verbose: bool) -> str:
    from perflab.render.compare_html import render_html
    return render_html(report)


FORMATS: FormatRegistry[Format] = FormatRegistry(
    Format(name="mmtests", help="mmtests compare-kernels blocks with * marks, the default", render=_mmtests,
           profile=True),
    Format(name="lkp", help="the kernel test robot's table of changed stats", render=_lkp, profile=True),
    Format(name="benchstat", help="golang.org/x/perf benchstat: median ± CI, vs base, geomean", render=_benchstat,
           benchstat=True),
    Format(name="speedup", help="a cover letter's before/after/speed-up table", render=_speedup),
    Format(name="markdown", help="a GitHub table with intervals, p/q-values and verdicts", render=_markdown),
    Format(name="json", help="every number, interval, test and warning, stable keys", render=_json, profile=True),
    Format(name="csv", help="one line per (row, candidate)", render=_csv),
    Format(name="html", help="one self-contained page: the table, each side's samples, drift, sweeps (plotly)",
           render=_html),
)
PROFILE_FORMATS = tuple(name for name in FORMATS if FORMATS[name].profile)


def render_comparison(report: CompareReport, fmt: str = "mmtests", *, rows: Sequence[str] = ("amean",),
                      profile: ProfileReport | None = None, width: int | None = None,
                      verbose: bool = False) -> str:
    """The report in format ``fmt`` (one of FORMATS); ``profile`` attaches profile deltas;
    ``width`` narrows mmtests' columns to fit; ``verbose`` lists every row's warnings
    (else the text formats count them by kind)."""
    layout = FORMATS[fmt]   # an unknown name is a UsageError
    stats, show_all = parse_rows(rows)
    computed = {pct for row in report.rows for side in row.sides if side is not None for pct, _ in side.best}
    missing = [s.pct for s in stats if s.key == "best" and s.pct not in computed and report.rows]
    if missing:
        raise UsageError(f"bamean-{missing[0]} was not computed: pass best_pcts={missing} to the comparison")
    if profile is not None:
        report = replace(report, profile=profile)
    if report.profile is not None and not layout.profile:
        raise UsageError(f"profile deltas are shown by --format {', '.join(PROFILE_FORMATS)}, not {fmt}")
    return layout.render(report, stats, show_all, width, verbose)
