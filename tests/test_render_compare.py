"""The report formats of `perflab compare`, as golden files.

The comparison is the real one: `compare_runs` over a SQLite store filled with fixed,
seeded values. Regenerate the goldens with ``PERFLAB_UPDATE_GOLDEN=1 pytest
tests/test_render_compare.py`` and read every changed file before accepting it.

The data (three runs: base, patched, tuned; seeded normal noise):
  hackbench groups=1,4,16,64  time (s, lower is better, Amean), 10 samples
      groups=1 noise everywhere; groups=4 patched 10% faster; groups=16 patched 8%
      slower (and one failed sample), tuned 6% faster; groups=64 missing in patched
  netperf size=64,1024  throughput (Mbit/s, higher is better, Hmean), 5 samples
      size=64 patched +3%; size=1024 patched -2%, tuned holds a 0 (Hmean undefined)
  will-it-scale mode=thread test=poll2  per_thread_ops (higher is better), 5 samples
      patched -2.9% (seed 003)
  nap  time (no metric metadata), ~10 ms: patched has a single sample, tuned 7
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perflab.analysis.benchstat import with_benchstat
from perflab.analysis.compare import compare_runs
from perflab.analysis.host_model import stamp_of
from perflab.model.errors import UsageError
from perflab.model.records import Direction, MeanKind, Measurement, MetricInfo, Point, RunInfo, RunStatus, SampleStatus
from perflab.model.report.compare import Block, Cell, Change, CompareReport, ProfileReport, Row, SideSummary
from perflab.model.report.outcomes import Interval
from perflab.model.report.profile import ProfileDelta, ProfileRow, ShareSide
from perflab.model.run_request import RunRequest
from perflab.model.verdicts import Shift, Verdict, oriented
from perflab.render.compare import FORMATS, render_comparison
from perflab.render.texttable import TextTab
from perflab.render.units import common_scale
from perflab.stats.host_prior import Prior
from perflab.store import Store
from perflab.store.schema import runs

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
SEEDS = Path(__file__).resolve().parent / "data" / "seeds"   # the seed posts' tables, verbatim
UPDATE = os.environ.get("PERFLAB_UPDATE_GOLDEN") == "1"

BASE_COMMIT = "93faf426e3cc000c1a2b3c4d5e6f708192a3b4c5"
PATCHED_COMMIT = "0ede61d8589cc2d93aa78230d74ab1234567890a"


def _fill(store: Store) -> list:
    rng = np.random.default_rng(20231119)
    env = {"hostname": "lab1", "cpu": {"model": "Xeon 8260", "online": "0-95"}}
    ids = {
        "base": store.runs.create(label="base", host="lab1", request=RunRequest(), environment=env,
                                  commit=BASE_COMMIT, commit_describe="v6.7-rc1"),
        "patched": store.runs.create(label="patched", host="lab1", request=RunRequest(), environment=env,
                                     commit=PATCHED_COMMIT, commit_describe="v6.7-rc1-1-g0ede61d858"),
        "tuned": store.runs.create(label="tuned", host="lab2", request=RunRequest(),
                                   environment={**env, "hostname": "lab2"}),
    }
    store.metrics.save("hackbench", [MetricInfo("time", "s", Direction.LOWER)])
    store.metrics.save("netperf", [MetricInfo("throughput", "Mbit/s", Direction.HIGHER)])
    store.metrics.save("will-it-scale", [MetricInfo("per_thread_ops", "ops/s", Direction.HIGHER)])

    def add(run: str, point: Point, metric: str, unit: str, values) -> None:
        for rep, value in enumerate(values):
            if value is None:
                store.samples.add(ids[run], point, rep, [Measurement(metric, None, unit, SampleStatus.FAILED,
                                                                     "exit status 1")])
            else:
                store.samples.add(ids[run], point, rep, [Measurement(metric, float(value), unit)])

    def noisy(centre: float, cv: float, n: int) -> list[float]:
        return list(np.round(rng.normal(centre, centre * cv, n), 6))

    hackbench = {1: 0.254, 4: 0.622, 16: 2.7717, 64: 8.589}
    factors = {"patched": {1: 1.0, 4: 0.90, 16: 1.08}, "tuned": {1: 1.0, 4: 1.0, 16: 0.94, 64: 1.0}}
    for groups, centre in hackbench.items():
        point = Point("hackbench", {"groups": groups})
        add("base", point, "time", "s", noisy(centre, 0.02, 10))
        for run in ("patched", "tuned"):
            if groups in factors[run]:
                values = noisy(centre * factors[run][groups], 0.02, 10)
                if run == "patched" and groups == 16:
                    values[3] = None
                add(run, point, "time", "s", values)

    for size, centre in {64: 214.34, 1024: 3207.45}.items():
        point = Point("netperf", {"size": size})
        add("base", point, "throughput", "Mbit/s", noisy(centre, 0.005, 5))
        add("patched", point, "throughput", "Mbit/s", noisy(centre * (1.03 if size == 64 else 0.98), 0.005, 5))
        tuned = noisy(centre, 0.005, 5)
        if size == 1024:
            tuned[2] = 0.0
        add("tuned", point, "throughput", "Mbit/s", tuned)

    wis = Point("will-it-scale", {"mode": "thread", "test": "poll2"})
    add("base", wis, "per_thread_ops", "ops/s", noisy(183535, 0.004, 5))
    add("patched", wis, "per_thread_ops", "ops/s", noisy(183535 * 0.971, 0.004, 5))
    add("tuned", wis, "per_thread_ops", "ops/s", noisy(183535, 0.004, 5))

    nap = Point("nap", {})
    add("base", nap, "time", "s", noisy(0.0102, 0.01, 10))
    add("patched", nap, "time", "s", noisy(0.0102, 0.01, 1))
    add("tuned", nap, "time", "s", noisy(0.0104, 0.01, 7))

    for run_id in ids.values():
        store.runs.set_status(run_id, RunStatus.COMPLETE)
        store.series.seal(run_id)
        # a minute each, not the moments this fill took: the next steps' costs are then fixed
        store.conn.execute(runs.update().where(runs.c.id == run_id).values(finished_at=runs.c.started_at + 60))
    store.conn.commit()
    # lab1 knows its run-to-run spread, as 'perflab calibrate' would teach it: wall times 1%;
    # rates 0.5%, about their spread inside a run (netperf 0.5%, will-it-scale 0.4%). Without
    # it the rates' rows would borrow perflab's wide default and stay undecided: seed 003's
    # lkp calls its -2.9% from several runs per commit, not from two single runs
    store.host_priors.save("lab1", stamp_of(store.runs.replicates({"lab1"})),
                           {"wall time": (Prior(0.01**2, 20.0, 10, 40.0), 5),
                            "rate": (Prior(0.005**2, 20.0, 10, 40.0), 3)})
    return [store.runs.resolve(label) for label in ids]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(str(tmp_path_factory.mktemp("render") / "perflab.db"), create=True) as s:
        runs = _fill(s)
        yield s, runs


@pytest.fixture(scope="module")
def three(store):
    """With benchstat's own figures too (computed only where its format is asked for)."""
    s, runs = store
    return with_benchstat(compare_runs(s, runs))


@pytest.fixture(scope="module")
def ab(store):
    s, runs = store
    return with_benchstat(compare_runs(s, runs[:2]))


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing golden {path}; run with PERFLAB_UPDATE_GOLDEN=1 and read it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; if intended, regenerate and read it"


# -- goldens ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, suffix", [("mmtests", "txt"), ("lkp", "txt"), ("benchstat", "txt"),
                                         ("speedup", "txt"), ("markdown", "md"), ("json", "json"),
                                         ("csv", "csv")])
def test_three_runs_golden(three, fmt, suffix):
    check_golden(f"compare_{fmt}.{suffix}", render_comparison(three, fmt))


@pytest.mark.parametrize("fmt", ["mmtests", "lkp", "speedup", "benchstat"])
def test_ab_golden(ab, fmt):
    check_golden(f"compare_ab_{fmt}.txt", render_comparison(ab, fmt))


def test_mmtests_extra_rows_golden(store):
    s, runs = store
    rows = ("min", "amean", "stddev", "coeffvar", "max", "bamean-95")
    report = compare_runs(s, runs[:2], best_pcts=(95,))
    check_golden("compare_ab_mmtests_rows.txt", render_comparison(report, "mmtests", rows=rows))
    with pytest.raises(UsageError, match="bamean-50 was not computed"):
        render_comparison(report, "mmtests", rows=("bamean-50",))


def test_lkp_all_rows_golden(ab):
    check_golden("compare_ab_lkp_all.txt", render_comparison(ab, "lkp", rows=("all",)))


def test_rule_method_golden(store):
    s, runs = store
    comparison = compare_runs(s, runs[:2], method="mmtests")
    check_golden("compare_ab_mmtests_rule.txt", render_comparison(comparison, "mmtests"))


# -- the layouts of the seeds, reproduced character for character ----------------------

def _seed_lines(prefix: str, first: str, count: int) -> list[str]:
    """``count`` lines of a seed post's table from the first line that starts with ``first``
    (tests/data/seeds holds the tables' lines verbatim, so this runs in any clone)."""
    path = next(SEEDS.glob(f"{prefix}_*.txt"))
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return lines[start:start + count]


SEED_LINE = re.compile(r"^(\w+) +(\S+) +([\d.]+) \( +0\.00%\) +([\d.]+) ([(*]) *(-?[\d.]+)%([)*])$")


def _side(centre: float, n: int = 10) -> SideSummary:
    return SideSummary(n=n, failures=0, values=(centre,) * n, mean_kind=MeanKind.ARITHMETIC, centre=centre,
                       median=centre, median_ci=Interval(low=math.nan, high=math.nan,
                                                         confidence=0.95), stddev=0.01 * centre,
                       cov=1.0, population_cov=0.95, min=centre, max=centre)


def _change(pct: float, marked: bool, direction: Direction) -> Change:
    verdict = (Verdict.IMPROVEMENT if pct > 0 else Verdict.REGRESSION) if marked else Verdict.UNDECIDED
    return Change(pct=pct, raw_pct=oriented(pct, direction), ci=Interval(low=math.nan, high=math.nan, confidence=0.95),
                  method="welch-log", test="Welch t-test on log values", interval="", p_value=math.nan,
                  q_value=math.nan, min_p=0.0, noise_floor=0.01, verdict=verdict)


def _fake(param: str, lines: list[str], direction: Direction) -> CompareReport:
    """A report holding the centres, changes and marks of seed lines."""
    rows = []
    for line in lines:
        _, op, base, new, mark, change, _ = SEED_LINE.match(line.rstrip()).groups()
        rows.append(Row(benchmark="b", params={param: op}, metric="m", unit="x", direction=direction,
                        mean_kind=MeanKind.ARITHMETIC if direction is Direction.LOWER else MeanKind.HARMONIC,
                        noise_floor=0.01, base=_side(float(base)),
                        cells=(Cell(label="sis_core", side=_side(float(new)),
                                    change=_change(float(change), mark == "*", direction)),)))
    runs = tuple(RunInfo(i, label, None, None, "h", 0.0, None, RunStatus.COMPLETE, {}, {})
                 for i, label in enumerate(("baseline", "sis_core")))
    block = Block(benchmark="b", metric="m", unit="x", direction=direction, mean_kind=rows[0].mean_kind,
                  rows=tuple(rows))
    return CompareReport(runs=runs, blocks=(block,), method="welch-log", method_name="Welch t-test on log values",
                         q=0.05, confidence=0.95, tested=len(rows), noise_floors=(0.01,))


def _profile_row(name: str, sides: list[list[float]]) -> ProfileRow:
    """A profile row of the shares given per side (the deltas undecided)."""
    kind, event, symbol = name.split(".", 3)[1:]
    shares = tuple(ShareSide(values=tuple(v), mean=float(np.mean(v)), stddev=float(np.std(v))) for v in sides)
    deltas = tuple(ProfileDelta(change_points=s.mean - shares[0].mean,
                                ci=Interval(low=math.nan, high=math.nan, confidence=0.95), p_value=math.nan,
                                q_value=math.nan, verdict=Shift.UNDECIDED) for s in shares[1:])
    return ProfileRow(benchmark="will-it-scale", params={"mode": "thread", "test": "poll2"},
                      event=event.replace("-", ":"), kind=kind, symbol=symbol, sides=shares, deltas=deltas,
                      visible=True)


@pytest.mark.parametrize("first, count, param, direction", [
    ("Amean     1        0.2540", 15, "groups", Direction.LOWER),     # hackbench A: 4 decimals
    ("Amean     1        0.3650", 15, "groups", Direction.LOWER),     # hackbench B
    ("Hmean     send-64         214.34", 9, "op", Direction.HIGHER),  # netperf udp: 2 decimals
    ("Hmean     64        1191.91", 9, "size", Direction.HIGHER),     # netperf tcp
    ("Hmean     1         515.98", 11, "clients", Direction.HIGHER),  # tbench B, op width 4
])
def test_mmtests_cells_match_seed_004(first, count, param, direction):
    lines = _seed_lines("004", first, count)
    text = render_comparison(_fake(param, lines, direction), "mmtests")
    body = [line for line in text.splitlines() if line.startswith(("Amean", "Hmean"))]
    assert body == [line.rstrip() for line in lines]


def test_lkp_profile_lines_match_seed_003():
    seed = [line[2:].replace("ą", "±") for line in
            _seed_lines("003", ">      30.90", 2) if "perf-profile.self" in line]
    assert len(seed) == 2
    profile = [
        _profile_row("perf-profile.self.cycles-pp.__fget_light", [[30.904 * 0.96, 30.904 * 1.04],
                                                                   [10.348 * 0.977, 10.348 * 1.023]]),
        _profile_row("perf-profile.self.cycles-pp.__get_file_rcu", [[0.0, 0.0], [26.48, 26.48]]),
    ]
    from perflab.render.lkp_lines import profile_line
    assert [profile_line(p) for p in profile] == seed


def test_lkp_stat_line_layout():
    """lkp's columns: value 10, ±N% 6, %change 10 + '%', value 11, ±N% 6, two spaces, name."""
    from perflab.render.lkp_lines import stat_line
    line = stat_line("will-it-scale.per_thread_ops", [(183535.0, 0.0), (178269.0, 0.0)], ["-2.9%"])
    assert line == "    183535            -2.9%     178269        will-it-scale.per_thread_ops"


def test_benchstat_table_layout_matches_benchstat_docs():
    """The benchstat doc example, rebuilt cell by cell, comes out byte for byte."""
    expected = (
        "                      │   old.txt   │               new.txt               │\n"
        "                      │   sec/op    │   sec/op     vs base                │\n"
        "Encode/format=json-48   1.718µ ± 1%   1.423µ ± 1%  -17.20% (p=0.000 n=10)\n"
        "Encode/format=gob-48    3.066µ ± 0%   3.070µ ± 2%        ~ (p=0.446 n=10)\n"
        "geomean                 2.295µ        2.090µ        -8.94%\n")
    t = TextTab()

    def start(exp):
        return 1 if exp == 0 else 4 + (exp - 1) * 6

    t.row()
    for exp, label in enumerate(["old.txt", "new.txt"]):
        t.col(start(exp)).span(start(exp + 1) - start(exp), label, "c", " │ ")
    t.col(start(2)).cell("", margin=" │")
    t.row()
    for exp in range(2):
        t.col(start(exp)).span(3, "sec/op", "c", " │ ")
        if exp:
            t.span(3, "vs base", "l", "  ")
        t.shrink.update(range(start(exp) + 1, t.cur_col))
    t.col(start(2)).cell("", margin=" │")
    for name, cells in [("Encode/format=json-48", [("1.718µ", "1%"), ("1.423µ", "1%", "-17.20%", "(p=0.000 n=10)")]),
                        ("Encode/format=gob-48", [("3.066µ", "0%"), ("3.070µ", "2%", "~", "(p=0.446 n=10)")])]:
        t.row().cell(name)
        for exp, cell in enumerate(cells):
            t.col(start(exp)).cell(cell[0], "r").cell(cell[1], "r", " ± ").cell("")
            if exp:
                t.cell(cell[2], "r").cell(cell[3]).cell("")
    t.row().cell("geomean")
    t.col(1).cell("2.295µ", "r").col(3).cell("")
    t.col(start(1)).cell("2.090µ", "r").col(start(1) + 3).cell("-8.94%", "r").col(start(2) - 1).cell("")
    assert t.format() == expected


@pytest.mark.parametrize("values, binary, expected", [
    ([1.718e-6], False, "1.718µ"), ([344.5e-9], False, "344.5n"), ([15.01e-6], False, "15.01µ"),
    ([2.001 * 2**30], True, "2.001Gi"), ([0.0], False, "0.000"), ([183535.0], False, "183.5k"),
])
def test_benchstat_scaler(values, binary, expected):
    assert common_scale(values, binary).format(values[0]) == expected


# -- behaviour --------------------------------------------------------------------------

def test_marks_only_on_significant_cells(three):
    text = render_comparison(three, "mmtests")
    marked = sum(1 for _, _, change in three.changes() if change.significant)
    assert marked >= 4
    assert text.count("%*") == marked


def test_missing_point_and_undefined_values_render_as_dash(three):
    for fmt in FORMATS:
        text = render_comparison(three, fmt)
        if fmt == "html":  # past the embedded plotly.js, whose code spells "nan" in words
            text = text[text.index("</head>"):]
        assert "nan" not in text.lower(), fmt
    mm = render_comparison(three, "mmtests").splitlines()
    line = next(l for l in mm if l.startswith("Amean") and l.split()[1] == "64")
    assert "- (       -)" in line  # groups=64 has no patched samples
    hmean = next(l for l in mm if l.startswith("Hmean") and l.split()[1] == "1024")
    assert hmean.rstrip().endswith("- (       -)")  # tuned's Hmean over a 0 is undefined


def test_json_is_complete_and_strict(three):
    data = json.loads(render_comparison(three, "json"))
    assert data["method"] == {"key": "welch-log", "name": "Welch t-test on log values", "fdr": 0.05,
                              "confidence": 0.95, "fdr_comparisons": 15, "rule": False}
    assert [r["label"] for r in data["runs"]] == ["base", "patched", "tuned"]
    assert data["runs"][0]["commit"] == BASE_COMMIT
    assert any("no samples in patched" in w for w in data["warnings"])
    row = next(r for r in data["rows"] if r["benchmark"] == "hackbench" and r["params"] == {"groups": 4})
    cell = row["candidates"][0]["comparison"]
    assert cell["verdict"] == "improvement" and cell["significant"]
    assert cell["ci_low"] <= cell["change_pct"] <= cell["ci_high"]
    assert cell["q_value"] >= cell["p_value"]
    missing = next(r for r in data["rows"] if r["params"] == {"groups": 64})["candidates"][0]
    assert missing["present"] is False and missing["comparison"] is None and missing["centre"] is None
    nap = next(r for r in data["rows"] if r["benchmark"] == "nap")["candidates"][0]
    assert nap["n"] == 1 and nap["stddev"] is None
    assert any(w["kind"] == "single-sample" for w in nap["warnings"])


def test_csv_one_line_per_row_and_candidate(three):
    lines = list(csv.DictReader(io.StringIO(render_comparison(three, "csv"))))
    assert len(lines) == 2 * len(three.rows)
    hb = [l for l in lines if l["benchmark"] == "hackbench" and l["param_groups"] == "16"]
    assert [l["label"] for l in hb] == ["patched", "tuned"]
    assert hb[0]["verdict"] == "regression" and hb[0]["failures"] == "1"
    assert float(hb[0]["ci_low"]) <= float(hb[0]["change_pct"]) <= float(hb[0]["ci_high"])


def test_lkp_lists_changed_stats_only_by_default(ab):
    text = render_comparison(ab, "lkp")
    assert "hackbench.time" in text and "will-it-scale.per_thread_ops" in text
    assert "nap.time" not in text.split("warnings:")[0]
    assert "unchanged stat(s) not listed" in text
    assert "nap.time" in render_comparison(ab, "lkp", rows=("all",))


def test_speedup_shows_small_slowdowns():
    from perflab.render.compare_speedup import speedup_text
    assert speedup_text(-0.04) == "-0.04%" and speedup_text(-13.54) == "-13.5%" and speedup_text(0.0) == "+0.0%"


def test_profile_is_rendered(ab):
    row = _profile_row("perf-profile.self.cycles-pp.__fget_light", [[30.0, 31.0], [10.0, 11.0]])
    row = replace(row, deltas=(replace(row.deltas[0], verdict=Shift.DOWN),))
    profile = ProfileReport(rows=(row,), method="welch-log", method_name="Welch t-test on the shares", q=0.05,
                            noise_floor=0.1, tested=1, rule="a test")
    with_profile = replace(ab, profile=profile)
    assert "-20.0" in render_comparison(with_profile, "lkp")
    assert "perf-profile.self.cycles-pp.__fget_light" in render_comparison(with_profile, "mmtests")
    data = json.loads(render_comparison(with_profile, "json"))
    assert data["profile"][0]["sides"][1]["change_points"] == -20.0


def test_bad_format_and_rows_are_usage_errors(ab):
    with pytest.raises(UsageError, match="unknown format"):
        render_comparison(ab, "yaml")
    with pytest.raises(UsageError, match="unknown row 'p99'"):
        render_comparison(ab, "mmtests", rows=("p99",))


def test_render_is_pure_layout():
    """No module of render/ imports analysis, execute, store, workloads, cli or stats, nor
    numpy: every number it prints comes computed in the report model."""
    import ast
    root = Path(__file__).resolve().parents[1] / "src" / "perflab" / "render"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                for name in names:
                    assert not name.startswith(("perflab.analysis", "perflab.execute", "perflab.workloads",
                                                "perflab.cli", "perflab.stats", "perflab.store", "numpy",
                                                "scipy")), (path.name, name)


def test_identical_runs_mark_nothing(store):
    s, runs = store
    same = with_benchstat(compare_runs(s, [runs[0], runs[0]]))
    assert "%*" not in render_comparison(same, "mmtests")
    lkp = render_comparison(same, "lkp")
    assert "no stat changed significantly (8 compared, of hackbench, netperf, will-it-scale, nap;" in lkp
    assert " ! " not in render_comparison(same, "speedup").split("Speed up: ")[0]
    assert "~ (p=1.000 n=10)" in render_comparison(same, "benchstat")


def test_width_narrows_a_three_run_mmtests_table(three):
    """Hoisting keeps this three-run table under 100 columns already (93); --width 85 narrows
    its value fields to the widest number and a space (10 characters here: 87 columns is as
    narrow as it gets)."""
    wide = render_comparison(three, "mmtests")
    narrow = render_comparison(three, "mmtests", width=85)
    assert 80 < max(len(line) for line in wide.split("* = significant")[0].splitlines()) < 100
    table = narrow.split("* = significant")[0].splitlines()
    assert max(len(line) for line in table) == 87
    # the same numbers and marks, only closer together
    assert [line.split() for line in table if line.startswith(("Amean", "Hmean"))] == \
        [line.split() for line in wide.splitlines() if line.startswith(("Amean", "Hmean"))]


def test_lkp_prints_one_number_format_per_line():
    """No 169473 beside 77068.33: the line's largest value picks the format of all of it."""
    from perflab.render.lkp_lines import stat_line
    line = stat_line("x.ops", [(169473.0, 0.0), (77068.33, 0.0)], ["-54.5%"])
    assert "169473" in line and "77068 " in line and "77068.33" not in line
    small = stat_line("x.t", [(0.0123, 0.0), (0.01234, 0.0)], ["+0.3%"])
    assert "0.0123 " in small and "0.01234" in small
