"""The report formats of ``perflab compare``: one function, one format name.

``render_comparison(comparison, fmt, rows=..., profile=...)`` returns the whole report
as text ending in a newline. Formats:

  mmtests    mmtests compare-kernels blocks with ``*`` marks (seed 004), the default
  lkp        the kernel test robot's table of changed stats (seed 003)
  benchstat  golang.org/x/perf benchstat: median ± CI, vs base, geomean
  speedup    a cover letter's before/after/speed-up table (seed 002)
  markdown   a GitHub table with intervals, p/q-values and verdicts
  json       every number, interval, test and warning, stable keys
  csv        one line per (row, candidate)

Render sits below analysis, so the comparison is read duck-typed:
``.runs`` (``.id .label .commit .commit_describe .host``, baseline first), ``.labels``,
``.rows`` (``.benchmark .params .point .metric .unit .info`` (``.direction .mean
.noise_floor``), ``.base_values .base_failures .base`` (a stats Summary or None),
``.cells`` (``.values .failures .difference``: a stats Difference or None)),
``.method .method_name .q .confidence .warnings``.

``rows`` picks the mmtests summary rows (amean — the metric's own mean, Hmean for
rates —, min, max, stddev, coeffvar, median, bamean-N); ``all`` makes lkp list
unchanged stats too. ``profile`` (see ``compare_profile``) adds profile and counter
deltas to the lkp, mmtests and JSON reports (PROFILE_FORMATS).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.model.errors import UsageError
from perflab.render.compare_common import parse_rows

FORMATS = ("mmtests", "lkp", "benchstat", "speedup", "markdown", "json", "csv")
PROFILE_FORMATS = ("mmtests", "lkp", "json")


def render_comparison(comparison: Any, fmt: str = "mmtests", *, rows: Sequence[str] = ("amean",),
                      profile: Sequence[Any] | None = None) -> str:
    """The comparison in format ``fmt`` (one of FORMATS)."""
    stats, show_all = parse_rows(rows)
    if profile is not None and fmt not in PROFILE_FORMATS:
        raise UsageError(f"profile deltas are shown by --format {', '.join(PROFILE_FORMATS)}, not {fmt}")
    if fmt == "mmtests":
        from perflab.render.compare_mmtests import render_mmtests
        return render_mmtests(comparison, stats, profile, show_all)
    if fmt == "lkp":
        from perflab.render.compare_lkp import render_lkp
        return render_lkp(comparison, show_all=show_all, profile=profile)
    if fmt == "benchstat":
        from perflab.render.compare_benchstat import render_benchstat
        return render_benchstat(comparison)
    if fmt == "speedup":
        from perflab.render.compare_speedup import render_speedup
        return render_speedup(comparison)
    if fmt == "markdown":
        from perflab.render.compare_markdown import render_markdown
        return render_markdown(comparison)
    if fmt == "json":
        from perflab.render.compare_data import render_json
        return render_json(comparison, profile)
    if fmt == "csv":
        from perflab.render.compare_data import render_csv
        return render_csv(comparison)
    raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
