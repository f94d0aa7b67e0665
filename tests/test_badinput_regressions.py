"""The invocations issue 31's audit found failing (tracebacks, unbounded work, values
that mean nothing), each as it was typed: now one line and exit 2 (3 for the
environment), or the answer the issue asks for. In-process (tests/clifuzz.py)."""

from __future__ import annotations

import asyncio

import pytest

from clifuzz import assert_one_line_refusal, invoke
from perflab.web.app import create_app

H = str(2**63)   # the first id no 64-bit key holds


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("regressions")
    db = str(directory / "perflab.db")
    for label in ("a", "b"):
        assert invoke(["--db", db, "run", "-q", "-n", "3", "--label", label, "--", "true"]).code == 0
    (directory / "s.csv").write_text("commit,value\n" + "".join(f"c{i},{10 + (i >= 20) + i % 3 / 10}\n"
                                                                for i in range(40)))
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
    assert "is not in the range 1<=x<=1000000" in outcome.lines[0]
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
