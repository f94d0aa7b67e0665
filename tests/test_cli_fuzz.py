"""Generated bad invocations of every command (issue 31): bad and huge ids, counts beyond
their limits, non-finite numbers, unknown database schemes, mixed with other options. Each
ends in exit 2 or 3 and one line, never a traceback, a Python warning or work begun.

Runs in-process (tests/clifuzz.py) against a small real store, with a bounded, derandomised
number of examples: the figure of invocations tried is printed with -s.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clifuzz import assert_one_line_refusal, invoke
from perflab.model.limits import MAX_ID, MAX_REPETITIONS

pytestmark = pytest.mark.xdist_group("cli_fuzz")   # one worker: TRIED counts every invocation
TRIED = {"invocations": 0}
FUZZ = settings(max_examples=100, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

HUGE = st.integers(MAX_ID + 1, 10**40).map(str)
BAD_ID = st.one_of(HUGE, st.integers(-10**20, 0).map(str),
                   st.sampled_from(["abc", "1.5", "0x10", "²", "1e3", " ", "", "١٢", "+1", "1_000"]))
NON_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e309"])
BAD_COUNT = st.one_of(st.integers(MAX_REPETITIONS + 1, 10**30).map(str), st.integers(-10**6, 0).map(str),
                      NON_FINITE, st.sampled_from(["x", "1.5", "", "²"]))
BAD_ROW_COUNT = st.one_of(HUGE, st.integers(-10**6, 0).map(str), NON_FINITE)   # limit: MAX_ID
BAD_NUMBER = st.one_of(NON_FINITE, st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False).map(repr),
                       st.sampled_from(["x", "", "1,5", "--"]))
BAD_RATE = st.one_of(BAD_NUMBER, st.sampled_from(["0", "1", "1.5", "100", "-0.5"]))
BAD_PCT = st.one_of(NON_FINITE.map(lambda s: s + "%"), NON_FINITE, st.sampled_from(["-1%", "x%", "%", "1e400%"]))
BAD_SCHEME = st.sampled_from(["mysql://x@127.0.0.1/y", "oracle://x@h/y", "mssql+pyodbc://h/y", "foo://x",
                              "postgresql+asyncpg://x@127.0.0.1/y", "redis://h/0", "sqlite://",
                              "sqlite:///:memory:", "MYSQL://h/y", "http://127.0.0.1/"])
# an id after '--', so a negative one is the argument and not an option
ID_ARG = BAD_ID.map(lambda v: ["--", v])

# (command words, strategy of the bad part): every example holds at least one bad value
BAD_PARTS = {
    "show": ID_ARG.map(lambda a: ["show", *a]),
    "export": ID_ARG.map(lambda a: ["export", *a]),
    "profile": ID_ARG.map(lambda a: ["profile", *a]),
    "flamegraph": ID_ARG.map(lambda a: ["flamegraph", *a]),
    "compare-ids": ID_ARG.map(lambda a: ["compare", "1", *a]),
    "verdict-ids": ID_ARG.map(lambda a: ["verdict", "1", *a]),
    "alert": ID_ARG.map(lambda a: ["alert", *a]),
    "alert-action": BAD_ID.map(lambda v: ["alert", "--", v, "ack"]),
    "alert-duplicate": BAD_ID.map(lambda v: ["alert", "1", "duplicate-of", "--", v]),
    "jobs-show": ID_ARG.map(lambda a: ["jobs", "show", *a]),
    "jobs-cancel": ID_ARG.map(lambda a: ["jobs", "cancel", *a]),
    "jobs-wait": ID_ARG.map(lambda a: ["jobs", "wait", *a]),
    "jobs-last": BAD_ROW_COUNT.map(lambda v: ["jobs", "--last", v]),
    "jobs-wait-timeout": BAD_NUMBER.map(lambda v: ["jobs", "wait", "--timeout", v, "1"]),
    "report-change-points": BAD_ROW_COUNT.map(lambda v: ["report", "change", "--points", v, "x"]),
    "report-change-fdr": BAD_RATE.map(lambda v: ["report", "change", "--fdr", v, "x"]),
    "run-n": BAD_COUNT.map(lambda v: ["run", "-n", v, "--", "true"]),
    "run-max-runs": BAD_COUNT.map(lambda v: ["run", "--max-runs", v, "--", "true"]),
    "run-min-runs": BAD_COUNT.map(lambda v: ["run", "--min-runs", v, "--", "true"]),
    "run-warmup": BAD_COUNT.filter(lambda v: v != "0").map(lambda v: ["run", "-w", v, "--", "true"]),
    "run-timeout": BAD_NUMBER.map(lambda v: ["run", "--timeout", v, "--", "true"]),
    "run-duration": BAD_NUMBER.map(lambda v: ["run", "--duration", v, "--", "true"]),
    "run-resume": BAD_ID.filter(lambda v: v.strip()).map(lambda v: ["run", "--resume", v]),
    "run-job": BAD_ID.map(lambda v: ["run", "--job", v, "--", "true"]),
    "run-seed": st.sampled_from(["-1", str(2**64), "x", "nan"]).map(lambda v: ["run", "--seed", v, "--", "true"]),
    "run-list-swallows-dashdash": st.just(["run", "-n", "1", "-L", "x", "--", "echo", "{x}"]),
    "ab-runs": BAD_COUNT.map(lambda v: ["ab", "-M", v, "--base", "true", "--cand", "true"]),
    "ab-alpha": BAD_RATE.map(lambda v: ["ab", "--alpha", v, "--base", "true", "--cand", "true"]),
    "ab-threshold": BAD_PCT.map(lambda v: ["ab", "--threshold", v, "--base", "true", "--cand", "true"]),
    "calibrate-k": BAD_COUNT.map(lambda v: ["calibrate", "-k", v, "--", "true"]),
    "bisect-confidence": BAD_RATE.map(lambda v: ["bisect", "--good", "a", "--bad", "b", "--confidence", v]),
    "bisect-max-runs": BAD_COUNT.map(lambda v: ["bisect", "--good", "a", "--bad", "b", "--max-runs", v]),
    "compare-fdr": BAD_RATE.map(lambda v: ["compare", "1", "2", "--fdr", v]),
    "compare-threshold": BAD_PCT.map(lambda v: ["compare", "1", "2", "--fail-on", "regression", "--threshold", v]),
    "compare-noise-floor": BAD_PCT.map(lambda v: ["compare", "1", "2", "--noise-floor", v]),
    "verdict-threshold": BAD_PCT.map(lambda v: ["verdict", "1", "2", "--threshold", v]),
    "changepoints-penalty": BAD_NUMBER.map(lambda v: ["changepoints", "--method", "pelt", "--penalty", v, "S"]),
    "changepoints-window": BAD_COUNT.map(lambda v: ["changepoints", "--window", v, "S"]),
    "changepoints-pvalue": BAD_RATE.filter(lambda v: v != "1").map(lambda v: ["changepoints", "--max-pvalue", v, "S"]),
    "serve-host": st.sampled_from(["999.1.1.1", "", "a b", "256.0.0.1", "::g", "-"]).map(
        lambda v: ["serve", "--host", v, "--port", "0"]),
    "serve-port": st.one_of(HUGE, st.integers(-10**6, -1).map(str)).map(lambda v: ["serve", "--port", v]),
    "submit-n": BAD_COUNT.map(lambda v: ["submit", "-n", v, "--host", "h", "--", "true"]),
    "submit-timeout": BAD_NUMBER.map(lambda v: ["submit", "--job-timeout", v, "--host", "h", "--", "true"]),
    "worker-heartbeat": BAD_NUMBER.map(lambda v: ["worker", "--heartbeat", v]),
    "watch-interval": BAD_NUMBER.map(lambda v: ["watch", "--interval", v, "--repo", ".", "--build", "true",
                                                "--suite", "s.toml", "--hosts", "h"]),
}
READERS = [["runs"], ["show", "1"], ["export", "1"], ["compare", "1", "2"], ["verdict", "1", "2"],
           ["history"], ["changes"], ["alerts"], ["jobs"], ["alert", "1"], ["profile", "1"]]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A real store with two finished runs (1 and 2), and the series file S."""
    directory = tmp_path_factory.mktemp("fuzz")
    db = str(directory / "perflab.db")
    for label in ("a", "b"):
        done = invoke(["--db", db, "run", "-q", "-n", "3", "--label", label, "--", "true"])
        assert done.code == 0, done.stderr
    (directory / "S").write_text("commit,value\n" + "".join(f"c{i},{10 + (i > 20)}\n" for i in range(40)))
    return db


def _tried(argv: list[str], store: str, **codes) -> None:
    TRIED["invocations"] += 1
    argv = [str(store).rsplit("/", 1)[0] + "/S" if word == "S" else word for word in argv]
    outcome = invoke(["--db", store, *argv])
    assert_one_line_refusal(argv, outcome, **codes)


@FUZZ
@given(data=st.data())
def test_every_command_refuses_bad_values_in_one_line(store, data):
    name = data.draw(st.sampled_from(sorted(BAD_PARTS)), label="command")
    argv = data.draw(BAD_PARTS[name], label="argv")
    # combinations: another bad option of the same command first (whichever is met first says it)
    same = sorted(n for n in BAD_PARTS if n != name and n.split("-")[0] == name.split("-")[0])
    if same and data.draw(st.booleans(), label="combine"):
        other = data.draw(BAD_PARTS[data.draw(st.sampled_from(same), label="other")], label="other argv")
        if other[0] == argv[0] and other[1].startswith("-") and other[1] != "--":
            argv = [argv[0], other[1], other[2], *argv[1:]]
    _tried(argv, store)


@FUZZ
@given(scheme=BAD_SCHEME, reader=st.sampled_from(READERS))
def test_an_unsupported_database_url_is_refused_naming_the_supported(scheme, reader):
    TRIED["invocations"] += 1
    argv = ["--db", scheme, *reader]
    outcome = invoke(argv)
    assert_one_line_refusal(argv, outcome, codes=(2,))
    assert "perflab stores in SQLite" in outcome.stderr or "an SQLite store is a file" in outcome.stderr


@FUZZ
@given(reader=st.sampled_from(READERS), bad=st.one_of(HUGE, st.sampled_from(["²", "0"])))
def test_readers_given_an_id_no_key_holds_say_so(store, reader, bad):
    argv = [bad if word in ("1", "2") else word for word in reader]
    if argv == reader:
        return
    _tried(argv, store, codes=(2,))


# -- issue 42: every command and option drawn from its type -----------------------------------
# (cli_grammar.py reads the grammar from the click commands; bench/fuzz_cli.py is the long
# profile of the same, at least 20,000 invocations)
GRAMMAR = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def pool(tmp_path_factory, store):
    import os

    from cli_grammar import FilePool
    root = tmp_path_factory.mktemp("pool")
    before = os.getcwd()
    os.chdir(root)   # a value an option writes to ("x", "-") lands here, not in the checkout
    try:
        yield FilePool(root)
    finally:
        os.chdir(before)


def test_every_command_drawn_from_its_types_answers_in_one_line(store, pool):
    from cli_grammar import invocation, run_one

    @GRAMMAR
    @given(call=invocation(pool, store))
    def one(call) -> None:
        TRIED["invocations"] += 1
        run_one(call)
    one()


def test_the_dashboard_drawn_from_its_routes_never_answers_500(store):
    from cli_grammar import requests, serve_one
    from perflab.web.app import create_app
    app = create_app(store, token="sesame-sesame")

    @GRAMMAR
    @given(request=requests("sesame-sesame"))
    def one(request) -> None:
        TRIED["invocations"] += 1
        serve_one(app, request)
    one()


def test_the_grammar_covers_every_command_and_option():
    from cli_grammar import commands
    from perflab.cli.main import _COMMANDS
    found = commands()
    assert {words[0] for words in found} == set(_COMMANDS)
    assert ("jobs", "wait") in found and ("report", "change") in found
    assert sum(len(c.params) for c in found.values()) > 200


def test_bench_fuzz_cli_smoke():
    """bench/fuzz_cli.py at its smallest size: it runs, counts and finds nothing."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "bench" / "fuzz_cli.py"
    done = subprocess.run([sys.executable, str(script), "--invocations", "20", "--progress", "0"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CLI: 20 invocations" in done.stdout and "traceback 0, hang 0" in done.stdout


def test_zz_the_figure(capsys):
    with capsys.disabled():   # shown with -n 0 -s
        print(f"\nCLI fuzz: {TRIED['invocations']} invocations tried, 0 tracebacks")
    assert TRIED["invocations"] >= 200
