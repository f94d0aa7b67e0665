"""Imports read their file twice and never hold it whole (issue 31 item 5): what that must not
change (values, places in messages, gzip) and what it adds (a file changed between the two
reads, or ambiguous to a streaming reader, is refused and writes nothing).
bench/import_2m measures the memory."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perflab.analysis.importing import import_file
from perflab.formats.importers import parse_file
from perflab.model.errors import UsageError
from perflab.store import Store

from conftest import run_cli


def _write(path: Path, document: dict | str) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def _times(n: int, c: int = 0) -> list[float]:
    return [0.001 + ((i * 7919 + c) % 1000) * 1e-6 for i in range(n)]


def test_values_cross_chunks_and_results_in_order(tmp_path, sqlite_db):
    # more items than one checked chunk (8192), three arrays zipped per result, two results
    results = [{"command": f"cmd {c}", "times": _times(20_000, c), "exit_codes": [0, 1] * 10_000,
                "memory_usage_byte": [float(4096 + i) for i in range(20_000)]} for c in range(2)]
    path = _write(tmp_path / "h.json", {"results": results})
    parsed = parse_file("hyperfine", path)
    for bench, result in zip(parsed.benchmarks, results):
        repetitions = list(bench.repetitions)
        assert len(bench.repetitions) == len(repetitions) == 20_000
        assert [r[0].value for r in repetitions] == result["times"]
        assert [r[1].value for r in repetitions] == result["memory_usage_byte"]
        assert [r[0].status.value for r in repetitions[:2]] == ["ok", "failed"]
    # read out of order (a benchmark again): the file is reopened, the values are the same
    assert [r[0].value for r in parsed.benchmarks[0].repetitions] == results[0]["times"]
    with Store(sqlite_db, create=True) as store:
        run_id = import_file(store, parsed, "big")
        groups = {g.benchmark: g for g in store.series.value_groups(run_id, metrics={"time"})}
        assert list(groups["cmd 1"].values) == pytest.approx(results[1]["times"][0::2])  # ok ones only


def test_a_bad_value_beyond_the_first_chunk_is_named_by_its_place(tmp_path):
    times = _times(10_000)
    times[9_000] = -1.0
    path = _write(tmp_path / "h.json", {"results": [{"command": "x", "times": times}]})
    with pytest.raises(UsageError, match=r"result 1 \('x'\) time 9001 is -1.0: negative"):
        parse_file("hyperfine", path)


@pytest.mark.parametrize("text,message", [
    ('{"results": [{"command": "x", "times": [1], "times": [2]}]}', "result 1 ('x') has \"times\" twice"),
    ('{"results": [{"command": "x", "times": [1]}], "results": []}', 'the top level has "results" twice'),
    ('{"results": [{"command": "x", "times": [1]}], "results.item.times": [5]}',
     'a key "results.item.times" that reads like the place of other values'),
    ('{"results": [{"command": "x", "times": [0.5, NaN]}]}', "result 1 ('x') time 2 is NaN or Infinity"),
    ('{"results": [{"command": "x", "times": [-Infinity]}]}', "time 1 is NaN or Infinity"),
    ('{"results": [{"command": "x", "times": [1e400]}]}', "time 1 is a number too large to read"),
    ('{"results": [{"command": "x", "times": [1]}]} trailing', "not JSON"),
    ('{"results": [{"command": "x", "times": [1]}', "not JSON"),
    ("[" * 600, "nested too deeply"),
])
def test_what_a_streaming_reader_refuses_is_one_line(text, message, tmp_path, sqlite_db):
    path = _write(tmp_path / "h.json", text)
    with pytest.raises(UsageError) as caught:
        parse_file("hyperfine", path)
    assert message in str(caught.value) and "\n" not in str(caught.value), caught.value


def test_pyperf_unit_read_after_the_values_still_bounds_them(tmp_path):
    # pyperf's suite metadata (its unit) may come after the benchmarks: checked once known
    runs = [{"values": [0.5, 2e7]}]
    seconds = '{"benchmarks": [{"runs": %s}], "metadata": {"name": "b", "unit": "second"}, "version": "1.0"}'
    with pytest.raises(UsageError, match=r"benchmark 1 \('b'\) run 1 value 2 is 20000000.0: more than 1e\+07"):
        parse_file("pyperf", _write(tmp_path / "s.json", seconds % json.dumps(runs)))
    (bench,) = parse_file("pyperf", _write(tmp_path / "b.json", (seconds % json.dumps(runs)).replace(
        '"second"', '"byte"'))).benchmarks
    assert [r[0].value for r in bench.repetitions] == [0.5, 2e7]


def test_pyperf_dates_per_repetition_from_their_runs(tmp_path):
    runs = [{"metadata": {"date": "2024-01-31 12:00:00"}, "values": [1.0, 2.0]}, {"warmups": [[1, 0.1]]},
            {"metadata": {"date": "2024-02-01 12:00:00"}, "values": [3.0]}]
    document = {"version": "1.0", "metadata": {"name": "b"}, "benchmarks": [{"runs": runs}]}
    path = tmp_path / "p.json.gz"
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    (bench,) = parse_file("pyperf", path).benchmarks
    assert [r[0].value for r in bench.repetitions] == [1.0, 2.0, 3.0]
    stamps = list(bench.measured_at)
    assert len(stamps) == 3 and stamps[0] == stamps[1] and stamps[2] - stamps[0] == pytest.approx(86_400)


def test_a_file_changed_between_the_two_reads_writes_nothing(tmp_path, sqlite_db):
    path = _write(tmp_path / "h.json", {"results": [{"command": "x", "times": _times(30_000)}]})
    parsed = parse_file("hyperfine", path)
    _write(path, {"results": [{"command": "x", "times": _times(10)}]})  # shorter now
    with Store(sqlite_db, create=True) as store:
        with pytest.raises(UsageError, match="the file changed while it was imported"):
            import_file(store, parsed, "changed")
        assert store.runs.all() == []


def test_cli_refuses_a_streaming_problem_before_the_database_exists(tmp_path):
    path = _write(tmp_path / "h.json", '{"results": [{"command": "x", "times": [1], "times": [2]}]}')
    db = tmp_path / "never.db"
    result = run_cli("import", "hyperfine", str(path), "--label", "x", db=str(db))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "twice" in result.stderr, result.stderr
    assert not db.exists()
