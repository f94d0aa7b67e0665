"""One unit per metric in every view: `show`, `compare` as text, markdown, and the HTML
table with its plotly charts (read from the page's chart JSON, no browser needed) print a
metric's values in the one unit `units.metric_scale` chooses from its centres (issue 41:
`show` printed ms where `compare` printed s, the HTML table ms and its charts s)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.render.units import metric_scale
from perflab.store import Store

from conftest import run_cli

KERNEL = {"kernel": {"release": "6.1", "version": "#1"}}


def _record(db: str, levels: dict[str, float]) -> None:
    """Runs ``a`` and ``b`` of a two-point sweep (``size``) of a command's wall time, at
    ``levels`` (point -> seconds) in ``a`` and 5% above in ``b``."""
    rng = np.random.default_rng(7)
    with Store(db, create=True) as store:
        store.metrics.save("tool", [MetricInfo("time", "s", Direction.LOWER)])
        for label, factor in (("a", 1.0), ("b", 1.05)):
            run_id = store.runs.create(label=label, host="box", request=RunRequest(), environment=KERNEL)
            for size, level in levels.items():
                for rep in range(8):
                    value = level * factor * float(np.exp(rng.normal(0, 0.01)))
                    store.samples.add(run_id, Point("tool", {"size": size}), rep, [Measurement("time", value, "s")])
            store.runs.set_status(run_id, RunStatus.COMPLETE)
            store.series.seal(run_id)


def _units_shown(db: str, tmp_path) -> dict[str, set[str]]:
    """Each view's units for the time metric."""
    show = run_cli("show", "a", db=db, check=True).stdout
    shown = {line.split()[-2] for line in show.splitlines() if re.match(r"\s*size=\S+\s+time\s", line)}
    text = run_cli("compare", "a", "b", db=db, check=True).stdout
    mmtests = set(re.findall(r"time \((\w+), lower is better\)", text))
    markdown = run_cli("compare", "a", "b", "--format", "markdown", db=db, check=True).stdout
    cells = set(re.findall(r"± [\d.]+ (\w+) \|", markdown))
    page = tmp_path / "cmp.html"
    run_cli("compare", "a", "b", "--format", "html", "-o", str(page), db=db, check=True)
    text = page.read_text()
    table = set(re.findall(r"± [\d.]+ (\w+)<", text))
    figures = [json.loads(spec) for spec in re.findall(r'<script type="application/json" id="fig-[\d-]+-figure">'
                                                        r"(.*?)</script>", text)]
    axes = {html.unescape(f["layout"]["yaxis"]["title"]["text"]) for f in figures}
    charts = {axis.removeprefix("time (").removesuffix(")") for axis in axes}
    heading = set(re.findall(r"— time \((\w+)\), lower is better", text))
    return {"show": shown, "compare": mmtests, "markdown": cells, "html table": table, "html heading": heading,
            "html charts": charts}


@pytest.mark.parametrize("levels, unit", [({"1": 0.020, "2": 0.400}, "s"), ({"1": 0.002, "2": 0.030}, "ms")])
def test_every_view_prints_a_metric_in_one_unit(sqlite_db, tmp_path, levels, unit):
    """20 ms and 400 ms: seconds (every centre keeps 3 digits with 4 decimals); 2 ms and
    30 ms: ms, for both points, in every view."""
    _record(sqlite_db, levels)
    found = _units_shown(sqlite_db, tmp_path)
    assert all(units == {unit} for units in found.values()), found


def test_chart_values_are_in_the_tables_unit(sqlite_db, tmp_path):
    """The charts' samples are the table's numbers: their median per side and point lies
    within the table's centre +- 3 stddev, in the table's unit (ms here)."""
    _record(sqlite_db, {"1": 0.002, "2": 0.030})
    page = tmp_path / "cmp.html"
    run_cli("compare", "a", "b", "--format", "html", "-o", str(page), db=sqlite_db, check=True)
    text = page.read_text()
    centres = [float(x) for x in re.findall(r"([\d.]+) ± [\d.]+ ms<", text)]
    spec = re.search(r'<script type="application/json" id="fig-0-1-figure">(.*?)</script>', text)
    assert spec is not None and centres
    order = json.loads(spec.group(1))   # samples in measurement order: one trace per side and point
    medians = sorted(float(np.median(trace["y"])) for trace in order["data"])
    assert all(any(abs(m - c) < 0.05 * c for c in centres) for m in medians), (medians, centres)


def test_metric_scale_rule():
    assert metric_scale([0.0310, 0.050], "s") == (1.0, "s")
    assert metric_scale([0.005, 0.050], "s") == (1e-3, "ms")
    assert metric_scale([0.0, 0.020], "s") == (1.0, "s")      # a zero prints as 0 in any unit
    assert metric_scale([5e-6, 8e-6], "s") == (1e-6, "us")
    assert metric_scale([3 * 1024.0**2], "B") == (1024.0**2, "MiB")
    assert metric_scale([], "s") == (1.0, "s")
