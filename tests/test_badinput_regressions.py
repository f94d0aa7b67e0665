"""The invocations issue 31's audit found failing (tracebacks, unbounded work, values
that mean nothing), each as it was typed: now one line and exit 2 (3 for the
environment), or the answer the issue asks for. In-process (tests/clifuzz.py)."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from clifuzz import assert_one_line_refusal, invoke
from perflab.web.app import create_app

from conftest import new_alert

H = str(2**63)   # the first id no 64-bit key holds


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("regressions")
    db = str(directory / "perflab.db")
    for label in ("a", "b"):
        assert invoke(["--db", db, "run", "-q", "-n", "3", "--label", label, "--", "true"]).code == 0
    (directory / "s.csv").write_text("commit,value\n" + "".join(f"c{i},{10 + (i >= 20) + i % 3 / 10}\n"
                                                                for i in range(40)))
    from perflab.store import Store
    with Store(db) as opened:   # alert 1: an id given to its triage or rerun is read, not "no alert 1"
        new_alert(opened)
    return db


def _csv(store: str) -> str:
    return store.rsplit("/", 1)[0] + "/s.csv"


@pytest.mark.parametrize("url", ["mysql://x@127.0.0.1/y", "oracle://x@127.0.0.1/y", "mssql://x@127.0.0.1/y",
                                 "postgresql+asyncpg://x@127.0.0.1/y", "foo://x"])
def test_an_unsupported_database_is_named_with_those_perflab_supports(url):
    outcome = invoke(["--db", url, "runs"])
    assert_one_line_refusal(["runs"], outcome, codes=(2,))
    assert outcome.lines[0] == (f"perflab: error: unsupported database URL scheme {url.split('://')[0]!r}: perflab "
                                "stores in SQLite (a file path, or sqlite:///PATH) or PostgreSQL "
                                "(postgresql://USER@HOST/DB, driver psycopg)")


@pytest.mark.parametrize("argv", [["show", H], ["export", H], ["alert", H], ["alert", H, "ack"],
                                  ["jobs", "show", H], ["jobs", "cancel", H], ["run", "--resume", H],
                                  ["verdict", "1", H], ["compare", "1", H], ["profile", H],
                                  ["alert", "1", "duplicate-of", H]])
def test_an_id_of_2_to_the_63_is_refused_before_the_database(store, argv):
    outcome = invoke(["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, codes=(2,))
    assert H in outcome.lines[0]


def test_a_huge_repetition_count_is_refused_before_anything_runs(store):
    before = invoke(["--db", store, "runs"]).lines
    outcome = invoke(["--db", store, "run", "-n", "99999999999999999999999", "--", "true"])
    assert_one_line_refusal([], outcome, codes=(2,))
    assert "repetitions (-n) must be a whole number from 1 to 1,000,000" in outcome.lines[0]
    assert invoke(["--db", store, "runs"]).lines == before   # refused at parsing: no run was made


def test_the_limits_are_stated_in_help():
    text = invoke(["run", "--help"]).stdout
    assert "1<=x<=1000000" in text
    assert "1<=x<=1000000" in invoke(["ab", "--help"]).stdout


@pytest.mark.parametrize("argv, said", [
    (["changepoints", "--method", "pelt", "--penalty", "inf", "CSV"], "--penalty must be"),
    (["changepoints", "--method", "pelt", "--penalty", "nan", "CSV"], "--penalty must be"),
    (["changepoints", "--method", "pelt", "--penalty", "-1", "CSV"], "--penalty must be"),
    (["compare", "--fail-on", "regression", "--threshold", "inf%", "1", "2"], "--threshold must be a finite"),
    (["compare", "--fail-on", "regression", "--threshold", "1e400", "1", "2"], "--threshold must be a finite"),
    (["verdict", "--threshold", "nan%", "1", "2"], "--threshold must be a finite"),
    (["run", "-n", "1", "-L", "x", "--", "echo", "{x}"], "'--' looks like an option"),
    (["serve", "--host", "999.1.1.1"], "not an IP address or host name"),
])
def test_values_that_mean_nothing_are_refused(store, argv, said):
    argv = [_csv(store) if word == "CSV" else word for word in argv]
    outcome = invoke(["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, codes=(2,))
    assert said in outcome.lines[0]


def _asgi(app, method: str, path: str, body: bytes = b"", headers: list | None = None) -> int:
    """The status of one request to the dashboard's ASGI app, without a server."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": headers or [], "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 80),
             "client": ("127.0.0.1", 1), "root_path": ""}
    asyncio.run(app(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_the_dashboard_answers_404_for_an_id_no_key_holds(store):
    app = create_app(store, token="sesame-sesame")
    assert _asgi(app, "GET", f"/alerts/{H}") == 404
    assert _asgi(app, "GET", "/alerts/-1") == 404
    assert _asgi(app, "GET", f"/runs/{H}") == 404
    form = f"action=duplicate-of&target={H}&token=sesame-sesame".encode()
    content = [(b"content-type", b"application/x-www-form-urlencoded")]
    assert _asgi(app, "POST", f"/alerts/{H}", form, content) == 404
    assert _asgi(app, "POST", "/alerts/1", form, content) == 404


def test_an_import_streams_in_batches_tells_its_progress_and_seals_every_value(tmp_path):
    import json

    from perflab.analysis.importing import import_file
    from perflab.store import Store
    times = [0.001 + (i % 97) * 1e-6 for i in range(25_000)]
    codes = [0 if i % 1000 else 1 for i in range(25_000)]   # every 1000th failed: kept as failed
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"results": [{"command": "sleep 0.001", "times": times, "exit_codes": codes}]}))
    heard: list[tuple[int, int]] = []
    with Store(str(tmp_path / "db"), create=True) as store:
        run_id = import_file(store, "hyperfine", str(path), "big", progress=lambda n, total: heard.append((n, total)))
        [group] = store.series.value_groups(run_id)
    assert heard == [(10_000, 25_000), (20_000, 25_000), (25_000, 25_000)]
    assert group.failures == 25 and list(group.values) == [t for t, c in zip(times, codes) if c == 0]


# -- issue 42: a full disk, a corrupt store, hostile files -----------------------------------
LONG_ID = "9" * 10_000   # past Python's 4,300-digit limit of int()


@pytest.mark.parametrize("argv", [["show", LONG_ID], ["export", LONG_ID], ["compare", "1", LONG_ID],
                                  ["verdict", "1", LONG_ID], ["profile", LONG_ID],
                                  ["flamegraph", LONG_ID, "-o", "/dev/null"], ["alert", LONG_ID],
                                  ["alert", "1", "duplicate-of", LONG_ID], ["alert", "1", "rerun", "--run", LONG_ID],
                                  ["jobs", "show", LONG_ID],
                                  ["jobs", "cancel", LONG_ID], ["jobs", "wait", LONG_ID],
                                  ["run", "--resume", LONG_ID], ["run", "--job", LONG_ID, "--", "true"]])
def test_an_id_of_10000_digits_is_one_line(store, argv):
    outcome = invoke(["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, codes=(2,))
    assert len(outcome.lines[0]) < 300   # the value is shortened, not echoed whole


def test_an_empty_file_is_no_store_to_a_reader_and_a_new_one_to_a_writer(tmp_path):
    """A 0-byte file (touched, or left by an interrupted first run): readers say it holds no
    data in one line; a command that records sets it up as a new store."""
    empty = tmp_path / "empty.db"
    empty.touch()
    for argv in (["runs"], ["show", "1"], ["history"], ["alerts"]):
        outcome = invoke(["--db", str(empty), *argv])
        assert_one_line_refusal(argv, outcome, codes=(2,))
        assert "holds no perflab data yet" in outcome.lines[0], outcome.lines
    assert empty.stat().st_size == 0   # a reader made nothing of it
    assert invoke(["--db", str(empty), "run", "-q", "-n", "2", "--label", "first", "--", "true"]).code == 0
    assert invoke(["--db", str(empty), "show", "first"]).code == 0


def test_the_dashboard_answers_404_for_an_id_of_10000_digits(store):
    app = create_app(store, token="sesame-sesame")
    content = [(b"content-type", b"application/x-www-form-urlencoded")]
    assert _asgi(app, "GET", f"/runs/{LONG_ID}") == 404
    assert _asgi(app, "GET", f"/alerts/{LONG_ID}") == 404
    assert _asgi(app, "POST", f"/alerts/{LONG_ID}", b"action=ack&token=sesame-sesame", content) == 404
    form = f"action=duplicate-of&target={LONG_ID}&token=sesame-sesame".encode()
    assert _asgi(app, "POST", "/alerts/1", form, content) == 404


@pytest.mark.parametrize("url", ["postgresql://u@[::1:1/x", "postgresql://u@h:abc/x", "postgres://u@h:1:2/x",
                                 "postgresql://" + "a" * 10_000 + "/x"])
def test_a_malformed_postgresql_url_is_one_line(url):
    outcome = invoke(["--db", url, "runs"])
    assert_one_line_refusal(["runs"], outcome, codes=(2,))
    assert "bad database URL" in outcome.lines[0]


@pytest.mark.parametrize("argv", [["--db", "/tmp/" + "x" * 10_000, "show", "1"],
                                  ["--db", "/tmp/" + "x" * 10_000, "run", "-n", "1", "--", "true"],
                                  ["--db", "/tmp/" + "y" * 300, "show", "1"],
                                  ["run", "-n", "1", "--", "x" * 10_000], ["run", "-n", "1", "x" * 10_000],
                                  ["changepoints", "/tmp/" + "x" * 10_000], ["x" * 10_000]])
def test_a_name_longer_than_the_file_system_holds_is_one_line(store, argv):
    outcome = invoke(argv if argv[0] == "--db" else ["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, codes=(2,))


def _digest(path: str) -> str:
    import hashlib
    from pathlib import Path
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _damaged_copy(store: str, directory, seed: int) -> str:
    import random
    import shutil
    copy = directory / f"damaged-{seed}.db"
    shutil.copy(store, copy)
    size, draw = copy.stat().st_size, random.Random(seed)
    with open(copy, "r+b") as handle:   # the 100-byte header stays valid: pages are overwritten
        for _ in range(draw.randint(1, 20)):
            handle.seek(draw.randrange(100, size))
            handle.write(draw.randbytes(draw.randint(1, 3000)))
    return str(copy)


def test_a_damaged_store_is_named_in_one_line_and_never_written_by_a_reader(store, tmp_path):
    """Readers never change the file; a writer that finds the damage on opening (the schema's
    pages) writes nothing either. (Damage in pages a run first reads mid-way is found there:
    what it committed before stays, as after any failure, and nothing more is written.)"""
    invoke(["--db", store, "runs"])   # checkpointed: the copy holds every page
    said = set()
    for seed in range(40):
        copy = _damaged_copy(store, tmp_path, seed)
        for argv in (["runs"], ["show", "1"], ["export", "1"], ["run", "-q", "-n", "1", "--", "true"]):
            before = _digest(copy)
            outcome = invoke(["--db", copy, *argv])
            if outcome.code:
                assert_one_line_refusal(argv, outcome, codes=(2, 3))
                said.add(outcome.code)
                if outcome.code == 3:
                    assert f"the database {copy} is damaged" in outcome.lines[0]
            if argv[0] != "run":
                assert _digest(copy) == before, (seed, argv)
    assert 3 in said   # the seeds do damage what is read
    schema = _damaged_copy(store, tmp_path, 0)
    with open(schema, "r+b") as handle:   # the schema's page, after the valid header
        handle.seek(100)
        handle.write(b"\xff" * 3000)
    before = _digest(schema)
    outcome = invoke(["--db", schema, "run", "-q", "-n", "1", "--", "true"])
    assert_one_line_refusal([], outcome, codes=(3,))
    assert _digest(schema) == before


@pytest.mark.parametrize("edit", ["abc", "", "0", "-1", "1.5", "delete"])
def test_an_edited_schema_version_is_a_damaged_store_left_as_it_is(store, tmp_path, edit):
    import hashlib
    import shutil
    import sqlite3
    copy = tmp_path / "edited.db"
    invoke(["--db", store, "runs"])
    shutil.copy(store, copy)
    with sqlite3.connect(copy) as conn:
        if edit == "delete":
            conn.execute("DELETE FROM perflab_meta WHERE key = 'schema_version'")
        else:
            conn.execute("UPDATE perflab_meta SET value = ? WHERE key = 'schema_version'", (edit,))
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    for argv in (["runs"], ["run", "-q", "-n", "1", "--", "true"]):
        outcome = invoke(["--db", str(copy), *argv])
        assert_one_line_refusal(argv, outcome, codes=(3,))
        assert f"the database {copy} is damaged" in outcome.lines[0] and "schema_version" in outcome.lines[0]
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("cpus", ["0-99999999999", "0-99999999", "99999999999999999999999", "", "0,,,", ",",
                                  "1-0", "a", "0-", "-1", "٣"])
def test_a_cpu_list_is_bounded_before_it_is_expanded(store, cpus):
    argv = ["run", "-n", "1", "--cpu", cpus, "--", "true"]
    outcome = invoke(["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, codes=(2,))


SUITES = {
    "suite = 5\n[[benchmark]]\nworkload = 'hackbench'\n": "suite must be a table",
    "benchmark = [1, 2]\n": "each benchmark must be a table",
    "[[benchmark]]\nworkload = 'command'\ncommand = 'true'\nname = 5\n": "name must be a non-empty string",
    "[[benchmark]]\nworkload = 'command'\ncommand = 'true'\n[benchmark.params]\nx = " + "[" * 5000 + "1"
    + "]" * 5000 + "\n": "nested too deeply",
    "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n": "nested too deeply",
    "[[benchmark]]\nworkload = 'command'\ncommand = 'true {x}'\n[benchmark.params]\nx = nan\n": "not a finite number",
    "[[benchmark]]\nworkload = 'command'\ncommand = 'true'\n[benchmark.params]\n\"\" = 1\n": "needs a name",
    "[[benchmark]]\nworkload = 'command'\ncommand = 'true'\ntimeout = nan\n": "positive number of seconds",
}


@pytest.mark.parametrize("text", SUITES, ids=[f"suite{i}" for i in range(len(SUITES))])
def test_a_suite_of_wrong_types_or_deep_nesting_is_one_line(store, tmp_path, text):
    suite = tmp_path / "s.toml"
    suite.write_text(text)
    outcome = invoke(["--db", store, "run", "-n", "1", str(suite)])
    assert_one_line_refusal([str(suite)], outcome, codes=(2,))
    assert SUITES[text] in outcome.lines[0]


@pytest.mark.parametrize("content, said", [(b"{bad", "not JSON"), (b"[1, 2]", "expected a JSON object"),
                                           (b'{"version": 3, "repetitions": "a"}', "not a RunRequest"),
                                           (b'{"version": "x"}', "not a RunRequest"),
                                           (bytes(range(256)), "not UTF-8")])
def test_a_request_file_that_is_no_run_request_is_one_line(store, tmp_path, content, said):
    request = tmp_path / "request.json"
    request.write_bytes(content)
    outcome = invoke(["--db", store, "run", "--request", str(request)])
    assert_one_line_refusal([], outcome, codes=(2,))
    assert said in outcome.lines[0]


def test_a_build_cache_that_cannot_be_made_is_refused_before_the_store(tmp_path):
    import subprocess
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for message in ("a", "b"):
        subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q",
                        "--allow-empty", "-m", message], check=True)
    db = tmp_path / "new.db"
    argv = ["--db", str(db), "bisect", "--repo", str(repo), "--good", "HEAD~1", "--bad", "HEAD", "--build", "true",
            "--build-cache", "/proc/1/nope", "--run", "true"]
    outcome = invoke(argv)
    assert_one_line_refusal(argv, outcome, codes=(3,))
    assert "--build-cache /proc/1/nope" in outcome.lines[0] and not db.exists()


@pytest.mark.parametrize("kind", ["hyperfine", "pyperf"])
@pytest.mark.parametrize("text", ["[" * 65_536 + "]" * 65_536, '{"results": ' + "[" * 100_000,
                                  '{"a":' * 30_000 + "1" + "}" * 30_000,
                                  # past the pre-scan's 64 KiB (a string of brackets first): the parser's limit
                                  '{"pad": "' + "[" * 70_000 + '", "results": ' + "[" * 100_000],
                         ids=["arrays", "open", "objects", "late"])
def test_a_file_nested_65536_deep_is_refused_at_the_depth_limit(store, tmp_path, kind, text):
    """bench/nested_import.py measures the time and memory of the refusal."""
    path = tmp_path / "nested.json"
    path.write_text(text)
    gzipped = tmp_path / "nested.json.gz"
    gzipped.write_bytes(gzip.compress(text.encode()))
    for given in (path, gzipped):   # a gzip file is left to the parser's limit
        argv = ["--db", store, "import", kind, str(given), "--label", "nested"]
        outcome = invoke(argv)
        assert_one_line_refusal(argv, outcome, codes=(2,))
        assert "nested too deeply" in outcome.lines[0]


# -- issue 42: odd answers ---------------------------------------------------------------------
@pytest.mark.parametrize("argv, said", [
    (["run", "-n", "1", "--monitor", "", "--", "true"], "--monitor needs at least one name"),
    (["run", "-n", "1", "--shell=", "--", "true"], "--shell= names no shell"),
    (["run", "-n", "1", "--label", "", "--", "true"], "'--label': is empty"),
    (["run", "-n", "1", "--label", "  ", "--", "true"], "'--label': is empty"),
    (["run", "-n", "1", "--name", "", "--", "true"], "'--name': is empty"),
    (["alert", "1", "ack", "--who", ""], "'--who': is empty"),
    (["run", "-n", "1", "--label", "5", "--", "true"], "reads as a run id"),
    (["run", "-n", "1", "--label", "007", "--", "true"], "reads as a run id"),
    (["ab", "--label", "12", "--base", "true", "--cand", "true"], "reads as a run id"),
    (["run", "-n", "1", "hackbench", "-p", "groups=1e23"], "too large"),
    (["run", "-n", "1", "hackbench", "-p", "groups=100000000"], "must be at most"),
    (["verdict", "1", "2", "--metric", "nope"], "neither run has a metric nope"),
])
def test_odd_values_get_a_clear_refusal(store, argv, said):
    before = invoke(["--db", store, "runs"]).stdout
    outcome = invoke(["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, codes=(2,))
    assert said in outcome.lines[0]
    assert invoke(["--db", store, "runs"]).stdout == before   # nothing was recorded


@pytest.mark.parametrize("db", ["foo://x", "postgresql://u@h:abc/x", "sqlite:///:memory:", "/" + "x" * 300])
def test_doctor_refuses_a_db_that_names_no_store(db):
    """found by bench/fuzz_cli.py: doctor took any refusal of --db for 'no store yet'."""
    outcome = invoke(["--db", db, "doctor"])
    assert_one_line_refusal(["doctor"], outcome, codes=(2,))
    assert outcome.stdout == ""


def test_doctor_says_an_unreachable_store_before_any_report():
    outcome = invoke(["--db", "postgresql://perflab@127.0.0.1:1/none", "doctor"])
    assert_one_line_refusal(["doctor"], outcome, codes=(3,))
    assert outcome.stdout == ""


def test_a_hyperfine_parameter_past_float_stays_text_and_a_zero_time_is_no_value(tmp_path):
    import json
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"results": [{"command": "x", "times": [0.0, 0.2, 0.3],
                                             "parameters": {"n": "1e400"}}]}))
    db = str(tmp_path / "db")
    assert invoke(["--db", db, "import", "hyperfine", str(path), "--label", "h"]).code == 0
    exported = invoke(["--db", db, "export", "1"]).stdout
    json.loads(exported, parse_constant=lambda name: pytest.fail(f"export wrote {name}"))
    assert '"n": "1e400"' in exported
    csv = invoke(["--db", db, "export", "1", "--format", "csv"]).stdout
    assert "invalid" in csv and "shorter than hyperfine's shell start-up" in csv


def test_bench_nested_import_smoke():
    """bench/nested_import.py at its smallest size: every file refused, its figures printed."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "bench" / "nested_import.py"
    done = subprocess.run([sys.executable, str(script), "--depth", "1024", "--kinds", "hyperfine"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("exit 2, wall") == 3 and "peak RSS" in done.stdout
