"""Every compare format tells the same story: for random comparisons, each row shows the
same verdict and the same magnitude of change in mmtests, lkp, benchstat, speedup,
markdown, json and csv, each in its own documented sign convention:

  positive = better   mmtests, speedup, markdown, json, csv
  100·(new/base − 1)  lkp, benchstat (unoriented: a faster time is negative)

The report is built by the real analysis (``build_report``) from generated samples; the
formats are parsed back from their text.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from perflab.analysis.benchstat import with_benchstat
from perflab.analysis.compare_report import build_report
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus
from perflab.model.report.compare import CompareReport
from perflab.render.compare import render_comparison
from perflab.store.repository import ValueGroup

RUNS = [RunInfo(i + 1, label, None, None, "h", 0.0, None, RunStatus.COMPLETE, {}, {})
        for i, label in enumerate(("base", "new"))]


@st.composite
def reports(draw) -> CompareReport:
    direction = draw(st.sampled_from([Direction.LOWER, Direction.HIGHER]))
    method = draw(st.sampled_from(["welch-log", "mann-whitney", "mmtests", "lkp"]))
    rows = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    unit = "s" if direction is Direction.LOWER else "ops/s"
    tables: list[dict] = [{}, {}]
    for r in range(rows):
        level = draw(st.sampled_from([0.0123, 1.7, 250.0, 183535.0]))
        shift = draw(st.sampled_from([1.0, 1.0, 0.97, 1.05, 1.3, 0.6]))
        cov = draw(st.sampled_from([0.001, 0.02, 0.1]))
        n_base, n_new = draw(st.integers(2, 12)), draw(st.integers(2, 12))
        for side, (n, factor) in enumerate(((n_base, 1.0), (n_new, shift))):
            values = level * factor * (1.0 + cov * rng.standard_normal(n))
            key = ("bench", json.dumps({"size": r}), "m")
            tables[side][key] = ValueGroup("bench", key[1], "m", unit, np.abs(values), 0)
    infos = {("bench", "m"): MetricInfo("m", unit, direction)}
    return build_report(tables, RUNS, infos, method=method)


def _close(shown: float, exact: float, decimals: int) -> bool:
    return abs(shown - exact) <= 0.5 * 10 ** -decimals + 1e-9 * max(1.0, abs(exact))


def _mmtests(report: CompareReport) -> list[tuple[float, bool]]:
    text = render_comparison(report, "mmtests")
    cells = []
    for line in text.splitlines():
        if re.match(r"^(Amean|Hmean) ", line):
            found = re.findall(r"([(*]) *(-?[\d.]+)%([)*])|\( +- *\)", line)
            assert found, line
            mark, value, _ = found[-1]
            cells.append((float(value) if value else math.nan, mark == "*"))
    return cells


def _speedup(report: CompareReport) -> list[tuple[str, str]]:
    text = render_comparison(report, "speedup")
    out = []
    for line in text.splitlines():
        match = re.match(r"^(?:\d+|bench)\s+\S+\s+\S+\s+(\S+%|-)( [*!])?\s*$", line)
        if match:
            out.append((match.group(1), (match.group(2) or "").strip()))
    return out


def _benchstat(report: CompareReport) -> list[str]:
    text = render_comparison(with_benchstat(report), "benchstat")
    out = []
    for line in text.splitlines():
        if line.startswith("size="):
            match = re.search(r"(~|[+-][\d.]+%|\?) \(", line)
            out.append(match.group(1) if match else "")
    return out


def _lkp(report: CompareReport) -> list[str]:
    text = render_comparison(report, "lkp", rows=("all",))
    out = []
    for line in text.splitlines():
        if line.rstrip().endswith("bench.m"):
            match = re.search(r"\s([+-][\d.]+%)\s", line)
            out.append(match.group(1) if match else "")
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reports())
def test_every_format_shows_the_same_verdict_and_magnitude(report):
    rows = report.rows
    changes = [row.cells[0].change for row in rows]
    assert all(c is not None for c in changes)
    data = json.loads(render_comparison(report, "json"))
    lines = list(csv.DictReader(io.StringIO(render_comparison(report, "csv"))))
    markdown = [line for line in render_comparison(report, "markdown").splitlines()
                if line.startswith("| bench |")]
    mmtests, speedup, benchstat, lkp = _mmtests(report), _speedup(report), _benchstat(report), _lkp(report)
    listed = render_comparison(report, "lkp")  # changed rows only, by default
    assert len(mmtests) == len(speedup) == len(benchstat) == len(lkp) == len(markdown) == len(rows)
    for i, (row, change) in enumerate(zip(rows, changes)):
        assert change is not None
        pct, raw, significant = change.pct, change.raw_pct, change.significant
        # json and csv: the same numbers, the same verdict word
        cell = data["rows"][i]["candidates"][0]["comparison"]
        assert cell["verdict"] == change.verdict.value == lines[i]["verdict"]
        assert cell["significant"] is significant and lines[i]["significant"] == str(significant).lower()
        if math.isfinite(pct):
            assert cell["change_pct"] is not None and _close(cell["change_pct"], pct, 6)
            assert _close(float(lines[i]["change_pct"]), pct, 6)
            # oriented formats: mmtests (2 decimals), markdown (2), speedup (1 or more)
            shown, marked = mmtests[i]
            assert _close(shown, pct, 2) and marked is significant
            assert f"{pct:+.2f}%" in markdown[i] or (abs(pct) < 0.005 and "0.00%" in markdown[i])
            text, mark = speedup[i]
            assert _close(float(text.rstrip("%")), pct, max(1, len(text.rstrip("%").partition(".")[2])))
            assert mark == ("" if not significant else "*" if pct > 0 else "!")
            # unoriented: lkp (1 decimal)
            assert _close(float(lkp[i].rstrip("%")), raw, 1) and (raw == 0 or pct == 0 or (raw > 0) == (
                (pct > 0) == (row.direction is Direction.HIGHER)))
        # benchstat keeps its own definitions: the medians' change, ~ when its U test's p > 0.05
        assert row.base is not None and row.cells[0].side is not None
        medians = float(np.median(row.base.values)), float(np.median(row.cells[0].side.values))
        u_p = scipy_stats.mannwhitneyu(row.base.values, row.cells[0].side.values, method="asymptotic").pvalue
        if benchstat[i] not in ("~", "0.00%", "?"):
            assert _close(float(benchstat[i].rstrip("%")), 100 * (medians[1] / medians[0] - 1), 2)
        if abs(u_p - 0.05) > 0.02 and min(len(row.base.values), len(row.cells[0].side.values)) >= 4:
            assert (benchstat[i] == "~") == bool(u_p > 0.05), (benchstat[i], u_p)
        assert (f"**{change.verdict.value}**" in markdown[i]) is significant
        # lkp lists a row by default exactly when it is significant
        assert (listed.count("bench.m") > 0) is any(c.significant for c in changes if c is not None)
