"""`--format benchstat` says what the real benchstat says, on committed samples.

tests/data/benchstat holds Go benchmark samples, the table the real benchstat printed
for them, and benchmath's figures at full precision (see its README): the statistics
are checked number by number, the table cell by cell. No Go is needed here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from perflab.analysis.benchstat import with_benchstat
from perflab.analysis.compare_report import build_report
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus
from perflab.render.compare import render_comparison
from perflab.stats import benchmath
from perflab.store.repository import ValueGroup

DATA = Path(__file__).resolve().parent / "data" / "benchstat"


def _samples(name: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for line in (DATA / name).read_text().splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].startswith("Benchmark"):
            out.setdefault(fields[0].removeprefix("Benchmark"), []).append(float(fields[2]))
    return out


OLD, NEW = _samples("old.txt"), _samples("new.txt")


def _expected() -> list[list[str]]:
    return [line.split(" ", 11) for line in (DATA / "benchmath.txt").read_text().splitlines()]


def _float(text: str) -> float:
    return float(text.replace("+Inf", "inf").replace("-Inf", "-inf"))


@pytest.mark.parametrize("fields", _expected(), ids=lambda f: f[0])
def test_median_interval_and_u_test_are_benchmaths(fields):
    name = fields[0]
    old, new = benchmath.summary(OLD[name]), benchmath.summary(NEW[name])
    for got, want in zip((old.center, old.low, old.high, new.center, new.low, new.high),
                         map(_float, (*fields[1:4], *fields[5:8]))):
        assert got == want or math.isclose(got, want, rel_tol=1e-12), (name, got, want)
    p = benchmath.u_test(OLD[name], NEW[name]).p
    assert math.isclose(p, _float(fields[9]), rel_tol=1e-12), (name, p, fields[9])


def _report_text() -> str:
    runs = [RunInfo(i + 1, label, None, None, "h", 0.0, None, RunStatus.COMPLETE, {}, {})
            for i, label in enumerate(("old.txt", "new.txt"))]
    tables: list[dict] = [{}, {}]
    for side, samples in enumerate((OLD, NEW)):
        for name, values in samples.items():
            point = json.dumps({"bench": name})
            tables[side][("go", point, "sec/op")] = ValueGroup("go", point, "sec/op", "s",
                                                               np.array(values) * 1e-9, 0)
    infos = {("go", "sec/op"): MetricInfo("sec/op", "s", Direction.LOWER)}
    return render_comparison(with_benchstat(build_report(tables, runs, infos)), "benchstat")


def test_the_table_has_benchstats_cells_and_footnotes():
    """Every row and footnote benchstat printed, token by token (the row labels aside:
    perflab names a point bench=A where Go names the benchmark A)."""
    ours = _report_text().splitlines()
    theirs = (DATA / "benchstat.txt").read_text().splitlines()
    rows = [line for line in theirs if line[:1].isalpha() and not line.startswith(("goos", "goarch", "pkg"))]
    for line in rows:
        label, *cells = line.split()
        mine = next(m for m in ours if m.split()[:1] == [label if label == "geomean" else f"bench={label}"])
        assert mine.split()[1:] == cells, (mine, line)
    notes = [line for line in theirs if line[:1] in "¹²³⁴⁵"]
    assert notes and all(note in ours for note in notes), notes
