"""perflab import: real hyperfine and pyperf output becomes one run; a bad file writes nothing."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from perflab.analysis.importing import import_file
from perflab.formats.importers import parse_file
from perflab.model.errors import UsageError
from perflab.model.records import Direction, Measurement, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store
from perflab.store.schema import metrics, points, runs, samples, series
from perflab.workloads.command import METRICS as COMMAND_METRICS

from conftest import DATA, run_cli

IMPORT_DATA = DATA / "import"
COMMAND_INFO = {m.name: m for m in COMMAND_METRICS}


def _hyperfine(tmp: Path, name: str, *args: str) -> Path:
    if shutil.which("hyperfine") is None:
        pytest.skip("hyperfine is not installed")
    out = tmp / name
    subprocess.run(["hyperfine", "-N", "--style", "none", *args, "--export-json", str(out)],
                   check=True, capture_output=True, timeout=60)
    return out


def _pyperf(*args: str) -> None:
    pytest.importorskip("pyperf")
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-q", *args],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def hyperfine_files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hyperfine")
    return {
        "plain": _hyperfine(tmp, "plain.json", "--runs", "5", "sleep 0.001"),
        "scan": _hyperfine(tmp, "scan.json", "--runs", "3", "-P", "n", "1", "3", "sleep 0.00{n}"),
        "failing": _hyperfine(tmp, "failing.json", "--runs", "3", "--ignore-failure", "false"),
    }


@pytest.fixture(scope="module")
def pyperf_files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("pyperf")
    plain = tmp / "timeit.json"
    # no --loops: pyperf calibrates first, in a run that has warm-ups only
    _pyperf("-p", "3", "-n", "2", "-w", "1", "--min-time", "0.001", "-o", str(plain), "sum(range(100))")
    packed = tmp / "timeit.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    return {"plain": plain, "gz": packed}


def _counts(store: Store) -> dict[str, int]:
    return {table.name: store.conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in (runs, points, samples, metrics, series)}


def _values(store: Store, run_id: int) -> dict[tuple[str, str, str], list[float]]:
    return {(g.benchmark, g.point, g.metric): g.values.tolist() for g in store.series.value_groups(run_id)}


# -- hyperfine ----------------------------------------------------------------------------
def test_hyperfine_plain_run_values_equal_the_times(hyperfine_files, sqlite_db):
    path = hyperfine_files["plain"]
    times = json.loads(path.read_text())["results"][0]["times"]
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "hyperfine", str(path), "hf")
        run = store.runs.resolve("hf")
        assert run.id == run_id and run.status is RunStatus.COMPLETE and run.host == "unknown"
        assert run.request.imported.kind == "hyperfine" and run.request.imported.file == str(path.resolve())
        assert run.environment["imported"] == "hyperfine"
        listed = store.runs.all()[-1]
        assert listed.samples == 5 and listed.benchmarks == 1
        rows = store.samples.rows(run_id)
        assert rows.benchmark == ["sleep 0.001"] * 5 and set(rows.points) == {"{}"}
        assert rows.metric == ["time"] * 5 and rows.unit == ["s"] * 5
        assert rows.repetition.tolist() == [0, 1, 2, 3, 4]
        assert rows.value.tolist() == times  # exactly, not approximately
        assert _values(store, run_id) == {("sleep 0.001", "{}", "time"): times}
        # only what hyperfine measured per run: no invented user/system samples
        assert set(store.metrics.infos("sleep 0.001")) == {"time"}
        assert store.metrics.infos("sleep 0.001")["time"] == COMMAND_INFO["time"]


def test_hyperfine_scan_is_one_benchmark_with_a_point_per_value(hyperfine_files, sqlite_db):
    results = json.loads(hyperfine_files["scan"].read_text())["results"]
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "hyperfine", hyperfine_files["scan"], "scan")
        expected = {("sleep 0.00{n}", json.dumps({"n": int(r["parameters"]["n"])}).replace(" ", ""), "time"):
                    r["times"] for r in results}
        assert _values(store, run_id) == expected
        assert {k[1] for k in expected} == {'{"n":1}', '{"n":2}', '{"n":3}'}
        assert store.runs.all()[-1].benchmarks == 1


def test_hyperfine_non_zero_exit_codes_are_failed_samples(hyperfine_files, sqlite_db):
    # hyperfine --ignore-failure false: every repetition failed; none may count as a value
    result = json.loads(hyperfine_files["failing"].read_text())["results"][0]
    assert result["exit_codes"] == [1, 1, 1]
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "hyperfine", hyperfine_files["failing"], "fails")
        rows = store.samples.rows(run_id)
        assert rows.status == ["failed"] * 3 and rows.note == ["exit status 1"] * 3
        assert rows.value.tolist() == result["times"]  # the raw times are kept
        (group,) = store.series.value_groups(run_id)
        assert group.failures == 3 and group.values.tolist() == []


def test_hyperfine_ignore_failure_keeps_values_with_the_exit_status(hyperfine_files, sqlite_db):
    result = json.loads(hyperfine_files["failing"].read_text())["results"][0]
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "hyperfine", hyperfine_files["failing"], "fails", ignore_failure=True)
        rows = store.samples.rows(run_id)
        assert rows.status == ["ok"] * 3 and rows.note == ["exit status 1"] * 3
        assert rows.value.tolist() == result["times"]
        (group,) = store.series.value_groups(run_id)
        assert group.failures == 0 and group.values.tolist() == result["times"]


def test_cli_import_ignore_failure(hyperfine_files, tmp_path):
    db = str(tmp_path / "cli.db")
    run_cli("import", "hyperfine", str(hyperfine_files["failing"]), "--label", "strict", db=db, check=True)
    run_cli("import", "-i", "hyperfine", str(hyperfine_files["failing"]), "--label", "kept", db=db, check=True)
    with Store(db) as store:
        assert store.samples.rows(store.runs.resolve("strict").id).status == ["failed"] * 3
        assert store.samples.rows(store.runs.resolve("kept").id).status == ["ok"] * 3


def test_hyperfine_memory_and_signal_fields(sqlite_db):
    path = IMPORT_DATA / "hyperfine_memory_signal_shape.json"
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "hyperfine", path, "mem")
        rows = store.samples.rows(run_id)
        by_metric = {m: [(int(r), v, n, st) for r, mm, v, n, st
                         in zip(rows.repetition, rows.metric, rows.value, rows.note, rows.status) if mm == m]
                     for m in set(rows.metric)}
        assert by_metric["time"] == [(0, 0.0112, "", "ok"), (1, 0.0118, "killed by a signal", "failed"),
                                     (2, 0.0133, "exit status 2", "failed")]
        assert [v for _, v, _, _ in by_metric["max_rss"]] == [4194304.0, 4198400.0, 4190208.0]
        assert set(rows.unit) == {"s", "B"}
        infos = store.metrics.infos("./mytool --input small")
        assert infos == {"time": COMMAND_INFO["time"], "max_rss": COMMAND_INFO["max_rss"]}
        env = store.runs.resolve("mem").environment
        assert env["metadata"]["hyperfine_version"] == "1.19.0"


def test_hyperfine_two_templates_with_literal_braces(sqlite_db):
    parsed = parse_file("hyperfine", IMPORT_DATA / "hyperfine_1.15_two_templates_scan.json")
    names = {(b.point.benchmark, b.point.key) for b in parsed.benchmarks}
    assert names == {("head -c {size} /dev/zero", '{"size":1}'), ("head -c {size} /dev/zero", '{"size":10}'),
                     ("awk 'BEGIN{{exit}}' /dev/null {size}", '{"size":1}'),
                     ("awk 'BEGIN{{exit}}' /dev/null {size}", '{"size":10}')}
    assert all(b.n == 3 for b in parsed.benchmarks)
    # the recovered template is a perflab template: substituting gives the command back
    from perflab.model.params import substitute
    raw = json.loads((IMPORT_DATA / "hyperfine_1.15_two_templates_scan.json").read_text())["results"]
    for bench, result in zip(parsed.benchmarks, raw):
        assert substitute(bench.point.benchmark, bench.point.params) == result["command"]


def _hf_file(tmp_path: Path, results: list[dict]) -> Path:
    for r in results:
        r.setdefault("times", [0.001, 0.002])
    path = tmp_path / "hf.json"
    path.write_text(json.dumps({"results": results}))
    return path


def test_hyperfine_template_recovery_rules(tmp_path):
    def names(results):
        return [(b.point.benchmark, b.point.params)
                for b in parse_file("hyperfine", _hf_file(tmp_path, results)).benchmarks]

    # a value that also occurs elsewhere: the placement that explains the whole scan wins
    assert names([{"command": "head -n 10 f1", "parameters": {"i": "1"}},
                  {"command": "head -n 10 f2", "parameters": {"i": "2"}}]) == \
        [("head -n 10 f{i}", {"i": 1}), ("head -n 10 f{i}", {"i": 2})]
    # an unused parameter (hyperfine allows it): one benchmark, a point per value
    assert names([{"command": "true", "parameters": {"x": "a"}},
                  {"command": "true", "parameters": {"x": "b"}}]) == [("true", {"x": "a"}), ("true", {"x": "b"})]
    # two parameters, an empty value, a decimal value
    assert names([{"command": "tool -a 0.5 ", "parameters": {"a": "0.5", "b": ""}},
                  {"command": "tool -a 1.5 z", "parameters": {"a": "1.5", "b": "z"}}]) == \
        [("tool -a {a} {b}", {"a": 0.5, "b": ""}), ("tool -a {a} {b}", {"a": 1.5, "b": "z"})]
    # the same command twice (an A/A comparison) stays two benchmarks
    assert names([{"command": "sleep 0.1"}, {"command": "sleep 0.1"}]) == [("sleep 0.1", {}), ("sleep 0.1 #2", {})]
    # no parameters: the command verbatim, braces and all, as perflab run names it
    assert names([{"command": "awk '{print}' f"}]) == [("awk '{print}' f", {})]


# -- pyperf -------------------------------------------------------------------------------
def test_pyperf_values_are_pyperfs_own_values(pyperf_files, sqlite_db):
    import pyperf
    expected = list(pyperf.Benchmark.load(str(pyperf_files["plain"])).get_values())
    assert len(expected) == 3 * 2  # processes x values; calibration and warm-ups dropped
    data = json.loads(pyperf_files["plain"].read_text())
    assert any("values" not in run for run in data["benchmarks"][0]["runs"])  # a calibration run exists
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "pyperf", pyperf_files["plain"], "py")
        run = store.runs.resolve("py")
        assert run.status is RunStatus.COMPLETE and run.request.imported.kind == "pyperf"
        assert run.host == data["metadata"]["hostname"] == run.environment["hostname"]
        assert run.environment["metadata"]["python_version"] == data["metadata"]["python_version"]
        assert run.environment["cpu"]["model"] == data["metadata"]["cpu_model_name"]
        rows = store.samples.rows(run_id)
        assert rows.benchmark == ["timeit"] * 6 and rows.repetition.tolist() == list(range(6))
        assert rows.value.tolist() == expected
        assert _values(store, run_id) == {("timeit", "{}", "time"): expected}
        info = store.metrics.infos("timeit")["time"]
        assert (info.unit, info.direction) == ("s", Direction.LOWER)

        gz_run = import_file(store, "pyperf", pyperf_files["gz"], "py-gz")
        assert _values(store, gz_run) == _values(store, run_id)


def test_pyperf_layers_and_per_loop_values(sqlite_db):
    import pyperf
    path = IMPORT_DATA / "pyperf_2.10_two_benchmarks.json.gz"
    suite = pyperf.BenchmarkSuite.load(str(path))
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "pyperf", path, "two")
        got = _values(store, run_id)
        assert got == {(b.get_name(), "{}", "time"): list(b.get_values()) for b in suite.get_benchmarks()}
        # pyperf stores raw / (loops * inner_loops): beta ran 5 loops x 4 inner loops
        beta = suite.get_benchmark("beta")
        for run in beta.get_runs():
            assert run.get_total_loops() == 20
            raw = run._get_raw_values()
            assert np.allclose(np.array(raw) / 20, run.values, rtol=1e-12)
        env = store.runs.resolve("two").environment
        assert env["benchmark_metadata"]["beta"]["inner_loops"] == 4
        assert env["metadata"]["unit"] == "second"


def test_pyperf_memory_unit_and_calibration(sqlite_db):
    import pyperf
    path = IMPORT_DATA / "pyperf_2.10_track_memory.json"
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, "pyperf", path, "mem")
        (group,) = store.series.value_groups(run_id)
        assert (group.metric, group.unit) == ("memory", "B")
        assert group.values.tolist() == list(pyperf.Benchmark.load(str(path)).get_values())
        assert len(group.values) == 2  # 2 processes x 1 value; the calibration run is skipped


def test_pyperf_older_format_versions(tmp_path):
    data = json.loads((IMPORT_DATA / "pyperf_2.10_timeit_calibrated.json").read_text())
    v6 = dict(data, version=6)
    (tmp_path / "v6.json").write_text(json.dumps(v6))
    # version 5: "samples" instead of "values", benchmark "common_metadata", no suite metadata
    v5 = {"version": 5, "benchmarks": [{
        "common_metadata": dict(data["metadata"]),
        "runs": [{"samples": run["values"]} if "values" in run else {"warmups": run["warmups"], "samples": []}
                 for run in data["benchmarks"][0]["runs"]]}]}
    (tmp_path / "v5.json").write_text(json.dumps(v5))
    expected = [v for run in data["benchmarks"][0]["runs"] for v in run.get("values", [])]
    for name in ("v6.json", "v5.json"):
        (bench,) = parse_file("pyperf", tmp_path / name).benchmarks
        assert [m[0].value for m in bench.repetitions] == expected


# -- across tools -------------------------------------------------------------------------
def test_import_compares_with_a_perflab_run_of_the_same_command(hyperfine_files, sqlite_db):
    from perflab.analysis.compare import compare_runs
    run_cli("run", "-q", "-n", "5", "--label", "native", "--", "sleep", "0.001", db=sqlite_db, check=True)
    with Store(sqlite_db, create=True) as store:
        import_file(store, "hyperfine", hyperfine_files["plain"], "hyperfine")
        comparison = compare_runs(store, [store.runs.resolve("native"), store.runs.resolve("hyperfine")])
        rows = {(r.benchmark, r.metric): r for r in comparison.rows}
        row = rows[("sleep 0.001", "time")]
        assert row.cells[0].change is not None and len(row.cells[0].side.values) == 5
        assert row.direction is Direction.LOWER and row.unit == "s"
        assert not any("no metric metadata" in w for w in comparison.warnings)


def test_cli_import_and_cli_error(hyperfine_files, tmp_path):
    db = str(tmp_path / "cli.db")
    ok = run_cli("import", "hyperfine", str(hyperfine_files["scan"]), "--label", "scan", db=db)
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": []}')
    other_db = tmp_path / "never.db"
    failed = run_cli("import", "hyperfine", str(bad), "--label", "x", db=str(other_db))
    assert failed.returncode == 2
    assert failed.stderr.count("\n") == 1 and str(bad) in failed.stderr and "empty" in failed.stderr
    assert not other_db.exists()  # the database is not even created


# -- malformed files write nothing ----------------------------------------------------------
_PYPERF_OK = {"version": "1.0", "metadata": {"name": "b", "unit": "second"},
              "benchmarks": [{"runs": [{"values": [1.0, 2.0]}]}]}

MALFORMED = [
    ("hyperfine", b"", "the file is empty"),
    ("hyperfine", b"{results: oops", "not JSON"),
    ("hyperfine", b"\xff\xfe\x00garbage", "not UTF-8"),
    ("hyperfine", b"[]", "top level is list"),
    ("hyperfine", b'{"foo": 1}', 'no "results"'),
    ("hyperfine", json.dumps(_PYPERF_OK).encode(), "looks like a pyperf file"),
    ("hyperfine", b'{"results": {}}', '"results" is {}, not a list'),
    ("hyperfine", b'{"results": []}', '"results" is empty'),
    ("hyperfine", b'{"results": [{"times": [1]}]}', 'result 1 has no "command"'),
    ("hyperfine", b'{"results": [{"command": "x"}]}', 'has no "times"'),
    ("hyperfine", b'{"results": [{"command": "x", "times": []}]}', '"times" is empty'),
    ("hyperfine", b'{"results": [{"command": "x", "times": [0.1, "fast"]}]}', 'time 2 is "fast", not a number'),
    ("hyperfine", b'{"results": [{"command": "x", "times": [NaN]}]}', "not a finite number"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [true]}]}', "time 1 is true, not a number"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "exit_codes": [0, 0]}]}', "2 exit codes for 1 times"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "memory_usage_byte": ["1k"]}]}', "memory value 1"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "parameters": [1]}]}', '"parameters" is [1]'),
    ("pyperf", b'{"version": "2.0", "benchmarks": []}', 'unknown file format version "2.0"'),
    ("pyperf", b'{"benchmarks": [{"runs": []}]}', "unknown file format version null"),
    ("pyperf", b'{"version": "1.0", "benchmarks": []}', '"benchmarks" is empty'),
    ("pyperf", b'{"version": "1.0", "benchmarks": [{"runs": [{"values": [1.0]}]}]}', 'benchmark 1 has no "name"'),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{}]}', 'has no "runs"'),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{"runs": [{"warmups": [[1, 0.1]]}]}]}',
     "has no values (only calibration"),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{"runs": [{"values": [1.0, "x"]}]}]}',
     'run 1 value 2 is "x", not a number'),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b", "unit": "meter"}, '
               b'"benchmarks": [{"runs": [{"values": [1.0]}]}]}', '"unit" is "meter", not'),
    ("pyperf", b'{"version": "1.0", "benchmarks": [{"metadata": {"name": "b"}, "runs": [{"values": [1]}]}, '
               b'{"metadata": {"name": "b"}, "runs": [{"values": [1]}]}]}', "benchmark 'b' appears twice"),
    ("pyperf", b'{"results": [{"command": "x", "times": [1]}]}', "looks like a hyperfine file"),
    # issue 16: what the mutation run found (tracebacks, then impossible values stored as valid)
    ("pyperf", b'{"version": ["1.0"], "benchmarks": [{"runs": []}]}', 'unknown file format version ["1.0"]'),
    ("pyperf", b'{"version": {"v": 6}, "benchmarks": [{"runs": []}]}', 'unknown file format version {"v": 6}'),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b", "unit": ["second"]}, '
               b'"benchmarks": [{"runs": [{"values": [1.0]}]}]}', '"metadata" "unit" is ["second"], not'),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, '
               b'"benchmarks": [{"runs": [{"metadata": {"unit": {"s": 1}}, "values": [1.0]}]}]}',
     'benchmark 1 run 1 "metadata" "unit" is {"s": 1}, not'),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{"runs": [{"values": [' +
     b"9" * 5000 + b']}]}]}', "run 1 value 1 is a number too large to read"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [' + b"1" * 4301 + b"]}]}",
     "result 1 ('x') time 1 is a number too large to read"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [0.1, -0.5]}]}',
     "result 1 ('x') time 2 is -0.5: negative, an impossible value"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1e308]}]}',
     "time 1 is 1e+308: more than 1e+07, an impossible value"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "memory_usage_byte": [-4096]}]}',
     "memory value 1 is -4096: negative"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "exit_codes": [1.5]}]}',
     "exit code 1 is 1.5, not an integer"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "exit_codes": [' + b"9" * 30 + b"]}]}",
     "exit code 1 is a number too large to read"),
    ("hyperfine", b'{"results": [{"command": "x", "times": [1], "parameters": {"n": [1]}}]}',
     "parameter 'n' is [1], not a value"),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{"runs": [{"values": [1.0, -2.0]}]}]}',
     "benchmark 1 ('b') run 1 value 2 is -2.0: not above 0, an impossible value"),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{"runs": [{"values": [1e308]}]}]}',
     "value 1 is 1e+308: more than 1e+07"),
    ("pyperf", b'{"version": "1.0", "metadata": {"name": 7}, "benchmarks": [{"runs": [{"values": [1.0]}]}]}',
     '"metadata" "name" is 7, not a string'),
]


@pytest.mark.parametrize("kind,content,message", MALFORMED, ids=[f"{k}-{m[:28]}" for k, _, m in MALFORMED])
def test_malformed_file_is_one_line_and_writes_nothing(kind, content, message, tmp_path, sqlite_db):
    path = tmp_path / "input.json"
    path.write_bytes(content)
    with Store(sqlite_db, create=True) as store:
        import_file(store, "hyperfine", IMPORT_DATA / "hyperfine_memory_signal_shape.json", "before")
        before = _counts(store)
        with pytest.raises(UsageError) as caught:
            import_file(store, kind, path, "bad")
        text = str(caught.value)
        assert "\n" not in text and str(path) in text and message in text, text
        assert len(text) < 400, text
        assert _counts(store) == before
        assert [r.label for r in store.runs.all()] == ["before"]


def test_missing_directory_and_broken_gzip(tmp_path, sqlite_db):
    broken = tmp_path / "bench.json.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    plain_named_gz = tmp_path / "plain.json.gz"
    plain_named_gz.write_text(json.dumps(_PYPERF_OK))
    cases = [(tmp_path / "nope.json", "no such file"), (tmp_path, "is a directory"),
             (broken, "broken gzip data"), (plain_named_gz, "not gzip-compressed")]
    with Store(sqlite_db, create=True) as store:
        for path, message in cases:
            with pytest.raises(UsageError, match=message):
                import_file(store, "pyperf", path, "x")
        with pytest.raises(UsageError, match="unknown import kind 'benchstat'"):
            import_file(store, "benchstat", IMPORT_DATA / "pyperf_2.10_track_memory.json", "x")
        with pytest.raises(UsageError, match="needs a label"):
            import_file(store, "pyperf", IMPORT_DATA / "pyperf_2.10_track_memory.json", " ")
        assert _counts(store)["runs"] == 0


# -- the store writes one transaction -------------------------------------------------------
def test_import_run_is_all_or_nothing(db_target):
    with Store(db_target, create=True) as store:
        first = import_file(store, parse_file("pyperf", IMPORT_DATA / "pyperf_2.10_track_memory.json"), "first")
        before = _counts(store)
        bad = [(Point("brand-new", {"k": 1}), 0, [Measurement("time", 1.0, "s")], None),
               (Point("brand-new", {"k": 2}), 0, [Measurement(None, 1.0, "s")], None)]  # type: ignore[arg-type]
        with pytest.raises(sa.exc.IntegrityError):
            store.imports.add_run(label="half", host="h", request=RunRequest(), environment={}, samples=bad,
                                  metric_infos={"brand-new": [COMMAND_INFO["time"]]})
        assert _counts(store) == before  # no run, no point, no sample, no metric, no series
        # the store is usable afterwards, and the same points import twice (existing point ids)
        again = import_file(store, "pyperf", IMPORT_DATA / "pyperf_2.10_track_memory.json", "again")
        assert _values(store, again) == _values(store, first)
        good = [(Point("brand-new", {"k": 1}), 0, [Measurement("time", 1.0, "s")], None)]
        ok = store.imports.add_run(label="ok", host="h", request=RunRequest(), environment={}, samples=good,
                                   metric_infos={"brand-new": [COMMAND_INFO["time"]]})
        assert _values(store, ok) == {("brand-new", '{"k":1}', "time"): [1.0]}
        assert store.runs.resolve("ok").status is RunStatus.COMPLETE


def test_an_imported_run_cannot_be_resumed(tmp_path):
    from conftest import run_cli
    out = tmp_path / "h.json"
    subprocess.run(["hyperfine", "-N", "--runs", "3", "--export-json", str(out), "true"],
                   check=True, capture_output=True)
    db = str(tmp_path / "db")
    run_cli("import", "hyperfine", str(out), "--label", "h", db=db, check=True)
    result = run_cli("run", "--resume", "h", db=db)
    assert result.returncode == 2 and "imported" in result.stderr and "Traceback" not in result.stderr


# -- hosts: an import is a replicate only of runs known to come from its machine -------------
def test_imports_from_different_hosts_are_never_replicates_and_the_same_host_are(hyperfine_files, sqlite_db):
    path = str(hyperfine_files["plain"])
    for label, host in (("u1", None), ("u2", None), ("x1", "box-a"), ("x2", "box-b"), ("y1", "box-a")):
        run_cli("import", "hyperfine", path, "--label", label, *(["--host", host] if host else []),
                db=sqlite_db, check=True)
    with Store(sqlite_db) as store:
        hosts = {run.label: run.host for run in store.runs.all()}
        assert hosts == {"u1": "unknown", "u2": "unknown", "x1": "box-a", "x2": "box-b", "y1": "box-a"}
        ids = {run.label: run.id for run in store.runs.all()}
        # two unknown machines and two different ones repeat nothing; box-a's two imports do
        assert store.runs.replicates({"unknown", "box-b"}) == []
        assert store.runs.replicates({"unknown", "box-a", "box-b"}) == [[ids["x1"], ids["y1"]]]


def test_a_blank_host_is_refused_and_nothing_is_imported(hyperfine_files, sqlite_db):
    result = run_cli("import", "hyperfine", str(hyperfine_files["plain"]), "--label", "b", "--host", "  ",
                     db=sqlite_db)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "perflab: error: --host needs a machine's name (leave it out when the machine is unknown)"]
    assert run_cli("runs", db=sqlite_db, check=True).stdout == ""   # nothing imported
