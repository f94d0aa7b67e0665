"""`perflab changepoints FILE`: real files through the real CLI, good and malformed."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import PERFLAB, run_cli

rng = np.random.default_rng(17)
# 50 points at ~100 then 50 at ~110: one change, at index 50
VALUES = np.concatenate([rng.normal(100, 1, 50), rng.normal(110, 1, 50)]).round(3)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def csv_text(values=VALUES, header="commit,value") -> str:
    return header + "\n" + "".join(f"c{i:03d},{v}\n" for i, v in enumerate(values))


def as_json(result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# ------------------------------------------------------------------ good input

def test_csv_table_names_the_change(tmp_path):
    path = write(tmp_path, "s.csv", csv_text())
    result = run_cli("changepoints", path, "--direction", "lower")
    assert result.returncode == 0, result.stderr
    # auto: mosum
    assert "value, 100 points, 1 change point (mosum: false_alarms_per_1000_points 0.2)" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "c050" in line).split()
    assert row[0] == "50" and row[1] == "c050"
    assert row[-3].startswith("-") and row[-3].endswith("%") and row[-2] == "regression"
    assert result.stderr == ""


def test_spread_reports_a_change_of_the_noise_alone_as_a_ratio(tmp_path):
    """--spread: the noise widens 4x at 300 of 600 points, the level does not move; the
    point has kind "spread" and its ratio, never a % of the level."""
    noise = np.random.default_rng(2).normal(0, 1, 600)
    noise[300:] *= 4
    path = write(tmp_path, "s.csv", csv_text((100 + noise).round(4)))
    data = as_json(run_cli("changepoints", path, "--spread", "--format", "json"))
    assert data["parameters"] == {"false_alarms_per_1000_points": 0.2, "spread": True}
    # (the level search may also take a stretch of the 4x wider noise for steps: it knows
    # nothing of the spread, see stats/mosum.py)
    (point,) = [p for p in data["columns"][0]["change_points"] if abs(p["index"] - 300) <= 10]
    assert point["kind"] == "spread"
    assert point["change_pct"] is None and 2 < point["spread_ratio"] < 8
    table = run_cli("changepoints", path, "--spread", "--direction", "lower")
    row = next(line for line in table.stdout.splitlines() if line.strip().startswith(str(point["index"])))
    assert "spread x" in row and "%" not in row
    # without --spread the change is not reported
    plain = as_json(run_cli("changepoints", path, "--format", "json"))["columns"][0]["change_points"]
    assert all(abs(p["index"] - 300) > 10 and p["kind"] == "mean" for p in plain)


def test_spread_with_another_method_is_a_usage_error(tmp_path):
    path = write(tmp_path, "s.csv", csv_text())
    result = run_cli("changepoints", path, "--spread", "--method", "pelt")
    assert result.returncode == 2 and "--spread searches with mosum only" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("method", ["e-divisive", "pelt", "binseg"])
def test_csv_json_output_for_each_method(tmp_path, method):
    path = write(tmp_path, "s.csv", csv_text())
    data = as_json(run_cli("changepoints", path, "--column", "value", "--method", method,
                           "--format", "json"))
    (column,) = data["columns"]
    assert (column["column"], column["points"], column["indices"]) == ("value", 100, [50])
    (cp,) = column["change_points"]
    assert cp["label"] == "c050"
    assert cp["mean_before"] == pytest.approx(VALUES[:50].mean())
    assert cp["stddev_after"] == pytest.approx(VALUES[50:].std(ddof=1))
    # one sign convention: raw_change_pct is after/before - 1; change_pct (+ = better) needs a direction
    assert cp["raw_change_pct"] == pytest.approx(100 * (VALUES[50:].mean() / VALUES[:50].mean() - 1))
    assert cp["change_pct"] is None and data["sign"].startswith("+ = better")
    assert cp["p_value"] < 1e-10 and cp["verdict"] is None
    assert data["method"] == method


def test_every_numeric_column_by_default_text_columns_ignored(tmp_path):
    lines = ["time,a,host,b"] + [f"{i},{v},box1,{200 - v}" for i, v in enumerate(VALUES)]
    data = as_json(run_cli("changepoints", write(tmp_path, "s.csv", "\n".join(lines) + "\n"),
                           "--format", "json", "--direction", "higher"))
    assert [c["column"] for c in data["columns"]] == ["a", "b"]
    assert [c["indices"] for c in data["columns"]] == [[50], [50]]
    assert [c["change_points"][0]["verdict"] for c in data["columns"]] == ["improvement", "regression"]
    # + = better: a rises ~10% (better, higher is better), b falls ~10%; raw keeps the plain sign
    a, b = (c["change_points"][0] for c in data["columns"])
    assert a["change_pct"] == pytest.approx(a["raw_change_pct"]) and 8 < a["change_pct"] < 12
    assert b["change_pct"] == pytest.approx(b["raw_change_pct"]) and b["change_pct"] < 0
    lower = as_json(run_cli("changepoints", write(tmp_path, "s.csv", "\n".join(lines) + "\n"),
                            "--format", "json", "--direction", "lower", "--column", "a"))
    (point,) = lower["columns"][0]["change_points"]
    assert point["change_pct"] == pytest.approx(-point["raw_change_pct"]) and point["verdict"] == "regression"
    table = run_cli("changepoints", write(tmp_path, "s.csv", "\n".join(lines) + "\n"), "--column", "a").stdout
    assert "%change (raw: after/before-1)" in table and ("+10." in table or "+9." in table)


def test_nan_gaps_keep_original_indices(tmp_path):
    cells = [str(v) for v in VALUES]
    for i in (3, 20, 49, 50, 51):
        cells[i] = ""
    cells[70] = "NaN"
    text = "commit,value\n" + "".join(f"c{i},{c}\n" for i, c in enumerate(cells))
    data = as_json(run_cli("changepoints", write(tmp_path, "gaps.csv", text), "--format", "json"))
    (column,) = data["columns"]
    assert column["points"] == 100
    assert column["indices"] == [52]  # the first point of the new regime that has a value


def test_tsv_without_a_label_column(tmp_path):
    text = "value\tother\n" + "".join(f"{v}\t1\n" for v in VALUES)
    data = as_json(run_cli("changepoints", write(tmp_path, "s.tsv", text), "--format", "json"))
    assert data["columns"][0]["indices"] == [50]
    assert data["columns"][0]["change_points"][0]["label"] is None
    assert [c["column"] for c in data["columns"]] == ["value", "other"]
    assert data["columns"][1]["indices"] == []  # a constant column: nothing to report


def test_json_list_of_numbers_with_nulls(tmp_path):
    values = [None if i in (10, 60) else v for i, v in enumerate(VALUES.tolist())]
    data = as_json(run_cli("changepoints", write(tmp_path, "s.json", json.dumps(values)),
                           "--format", "json", "--method", "pelt"))
    assert data["columns"][0]["column"] == "value"
    assert data["columns"][0]["indices"] == [50]


def test_json_objects_with_several_samples_per_commit(tmp_path):
    rows = []
    for i in range(40):
        for _ in range(3):  # three samples per commit, as consecutive objects
            rows.append({"commit": f"k{i}", "ops": float(rng.normal(1000 if i < 25 else 970, 5)),
                         "note": "x"})
    rows.append({"commit": "k40", "ops": None})  # a commit that failed: missing
    data = as_json(run_cli("changepoints", write(tmp_path, "o.json", json.dumps(rows)),
                           "--format", "json", "--direction", "higher"))
    (column,) = data["columns"]
    assert column["column"] == "ops" and column["points"] == 41
    (cp,) = column["change_points"]
    assert (cp["index"], cp["label"], cp["verdict"]) == (25, "k25", "regression")
    before = [r["ops"] for r in rows[:75]]
    assert cp["mean_before"] == pytest.approx(np.mean(before))  # over all samples


def test_json_list_of_lists(tmp_path):
    groups = [[v, v + 0.5] for v in VALUES.tolist()]
    groups[5] = []
    data = as_json(run_cli("changepoints", write(tmp_path, "g.json", json.dumps(groups)),
                           "--format", "json", "--method", "binseg"))
    assert data["columns"][0]["indices"] == [50]


def test_min_magnitude_and_stdin(tmp_path):
    text = csv_text()
    command = [*PERFLAB, "changepoints", "-", "--min-magnitude", "20%", "--format", "json"]
    result = subprocess.run(command, input=text, capture_output=True, text=True, timeout=60)
    data = as_json(result)
    assert data["source"] == "<stdin>"
    assert data["parameters"]["min_magnitude"] == 0.2
    assert data["columns"][0]["indices"] == []  # the 10% step is below 20%


# ------------------------------------------------------------------ malformed input

MALFORMED = {
    "no header": ("s.csv", "".join(f"{i},{v}\n" for i, v in enumerate(VALUES)),
                  "line 1: expected a header naming the columns"),
    "non-numeric value": ("s.csv", csv_text().replace("c007,", "c007,abc") + "",
                          "line 9: column 'value' has"),
    "empty": ("s.csv", "", "the file is empty"),
    "blank lines only": ("s.csv", "\n\n  \n", "the file is empty"),
    "separators only": ("s.csv", ",,,\n,,\n", "no header and no data, only separators"),
    "header only": ("s.csv", "time,value\n", "a header but no data rows"),
    "too short": ("s.csv", "time,value\n1,3\n2,4\n3,5\n", "column 'value' has 3 points with values"),
    "too short after gaps": ("s.csv", "time,value\n" + "".join(f"{i},{'' if i % 3 else i}\n"
                                                                for i in range(15)),
                             "column 'value' has 5 points with values"),
    "ragged row": ("s.csv", csv_text().replace("c030,", "c030,1,"), "line 32: 3 fields, the header has 2"),
    "no numeric column": ("s.csv", "time,host\n1,a\n2,b\n", "no numeric column"),
    "duplicate column": ("s.csv", "time,v,v\n1,2,3\n", "column 'v' appears twice"),
    "bad json": ("s.json", "[1, 2,, 3]", "not JSON (Expecting value at line 1 column 7)"),
    "json not a list": ("s.json", '{"value": [1, 2]}', "expected a JSON list"),
    "json empty list": ("s.json", "[]", "the list is empty"),
    "json non-number": ("s.json", json.dumps([1.0, 2.0, "fast", 3.0]), "item 2: 'fast' is not a number"),
    "json mixed items": ("s.json", json.dumps([{"v": 1}, 2]), "item 1: expected an object"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_input_gives_one_clear_line(tmp_path, case):
    name, text, message = MALFORMED[case]
    path = write(tmp_path, name, text)
    result = run_cli("changepoints", path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perflab: error: {path}"), result.stderr
    assert message in lines[0]


@pytest.mark.parametrize("args, message", [
    (["--column", "nope"], "no numeric column 'nope' (numeric columns: value)"),
    (["--min-magnitude", "big"], "bad --min-magnitude 'big'"),
    (["--method", "e-divisive", "--window", "2"], "2 is not in the range 6<=x<=2000"),
    (["--method", "pelt", "--penalty", "huge"], "bad --penalty 'huge'"),
    (["--method", "pelt", "--penalty", "inf"], "--penalty must be mbic, bic, aic or a finite number >= 0"),
    (["--method", "pelt", "--penalty", "nan"], "--penalty must be mbic, bic, aic or a finite number >= 0"),
    (["--method", "pelt", "--penalty", "-1"], "--penalty must be mbic, bic, aic or a finite number >= 0"),
    (["--max-pvalue", "nan"], "'nan' is not a finite number"),
    (["--method", "otava"], "Invalid value for '--method'"),
])
def test_bad_options_give_one_clear_line(tmp_path, args, message):
    result = run_cli("changepoints", write(tmp_path, "s.csv", csv_text()), *args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


def test_unknown_file(tmp_path):
    missing = str(tmp_path / "missing.csv")
    result = run_cli("changepoints", missing)
    assert result.returncode == 2
    assert result.stderr.strip() == f"perflab: error: {missing}: no such file"


def test_method_names_come_from_one_registry():
    """The --method choices of history, changes, report change and changepoints are the names
    stats.changepoints.detect accepts."""
    from perflab.model.methods import CHANGE_POINT_NAMES as METHODS
    for command in (["changepoints"], ["history"], ["changes"], ["report", "change"]):
        text = " ".join(run_cli(*command, "--help", check=True).stdout.split())
        listed = text.split("--method [", 1)[1].split("]", 1)[0].split("|")
        assert listed == ["auto", *METHODS], command


@pytest.mark.parametrize("points", [40, 99, 100, 400])
def test_a_single_spike_is_no_change_point_with_the_default_method(tmp_path, points):
    rng = np.random.default_rng(points)
    values = 100.0 * (1 + 0.01 * rng.standard_normal(points))
    values[points // 2] *= 3.0
    path = write(tmp_path, "spike.json", json.dumps([float(v) for v in values]))
    data = json.loads(run_cli("changepoints", path, "--format", "json", check=True).stdout)
    assert data["columns"][0]["change_points"] == [], data["columns"][0]


@pytest.mark.parametrize("seed", range(5))
def test_a_short_trending_history_is_cut_at_its_step_only(tmp_path, seed):
    """40 commits drifting 10% with a 10% step at 20 (noise 1%): --method mosum reports the
    step and not the drift. e-divisive, auto's choice below 100 points (for a step near the
    newest commits, which mosum reports only after 5 of them), put 2 to 4 points in each of
    these five series: the trade docs/history.md's `auto` paragraph gives."""
    rng = np.random.default_rng(seed)
    values = 100 * (1 + np.linspace(0, 0.10, 40) + 0.10 * (np.arange(40) >= 20)) * (1 + 0.01 * rng.standard_normal(40))
    path = write(tmp_path, "drift.json", json.dumps([round(float(v), 3) for v in values]))
    data = json.loads(run_cli("changepoints", path, "--method", "mosum", "--format", "json", check=True).stdout)
    assert data["method"] == "mosum", data
    assert [abs(i - 20) <= 2 for i in data["columns"][0]["indices"]] == [True], data


@pytest.mark.parametrize("method", ["auto", "pelt", "e-divisive"])
def test_values_too_large_to_compute_with_are_dropped_in_one_line(tmp_path, method):
    values = [str(v) for v in VALUES]
    values[10], values[20], values[30], values[40] = "1e308", "-1e308", "inf", "1e300"
    result = run_cli("changepoints", write(tmp_path, "s.csv", csv_text(values)), "--method", method)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"perflab: warning: {tmp_path / 's.csv'}: dropped 4 values too large to analyse "
        "(infinite or beyond ±1e+150): 4 of 'value'"]   # and no numpy RuntimeWarning
    assert "e+" not in result.stdout.split("\n", 1)[1]   # no 312-digit % change


def test_a_method_with_no_parameters_shown_is_named_alone_in_the_table_title():
    """A detector may take plain DetectorParams (docs/methods.md, "Adding a method"): its
    title names it without an empty ': ' after it; with parameters they follow the colon."""
    from perflab.model.report.history import ColumnChanges, FileChanges
    from perflab.render.changepoints import render_table
    column = ColumnChanges(column="t", points=12, has_labels=False, change_points=())
    bare = FileChanges(source="s.csv", method="plain", parameters={}, direction=None, columns=(column,))
    assert render_table(bare).splitlines()[0] == "s.csv: t, 12 points, 0 change points (plain)"
    shown = FileChanges(source="s.csv", method="pelt", parameters={"penalty": "mbic", "min_magnitude": 0.05},
                        direction=None, columns=(column,))
    assert render_table(shown).splitlines()[0] == ("s.csv: t, 12 points, 0 change points "
                                                   "(pelt: penalty mbic, min_magnitude 0.05)")
