#!/usr/bin/env python3
"""The long profile of the CLI and dashboard fuzzer (issue 42): N invocations of every
command drawn from the types of its options (tests/cli_grammar.py), in-process against a
scratch store, and N/4 dashboard requests; counted by outcome.

An invocation fails on a traceback (any exception but the exit), a hang (no answer within
cli_grammar.HANG_S), an exit code other than 0, 1, 2, 3, 125 or 130, an error of more than
one line, or exit 0 on a value its type must refuse; a request fails on a traceback (HTTP
500) or a 2xx/3xx answer to an id no key holds. The first few failures of each kind are
printed with the invocation. The target: 0 failures.

Usage: bench/fuzz_cli.py [--invocations 20000] [--seed 0] [--progress 1000]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

import cli_grammar  # noqa: E402
from clifuzz import invoke  # noqa: E402


def _settings(n: int) -> settings:
    return settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck))


def _kind(error: BaseException) -> str:
    if isinstance(error, cli_grammar.Hang):
        return "hang"
    if isinstance(error, AssertionError):
        text = str(error)
        return "exit 0 on hostile" if "exit 0 on a value" in text else "bad answer"
    return "traceback"


def fuzz_cli(n: int, store: str, pool: cli_grammar.FilePool, every: int, random_seed: int):
    counts: collections.Counter[str] = collections.Counter()
    failures: dict[str, list[str]] = collections.defaultdict(list)
    started = time.monotonic()

    @seed(random_seed)
    @_settings(n)
    @given(call=cli_grammar.invocation(pool, store))
    def one(call: cli_grammar.Invocation) -> None:
        counts["invocations"] += 1
        try:
            outcome = cli_grammar.run_one(call)
            counts[f"exit {outcome.code}"] += 1
            counts["hostile refused" if call.hostile else "good"] += 1
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            kind = _kind(error)
            counts[kind] += 1
            if len(failures[kind]) < 5:
                failures[kind].append(f"{cli_grammar.shown(call)}: {type(error).__name__}: {str(error)[:300]}")
                print(f"  {kind}: {failures[kind][-1]}", flush=True)
        if every and counts["invocations"] % every == 0:
            print(f"  {counts['invocations']:,} invocations, {time.monotonic() - started:.0f} s, "
                  f"failures {sum(counts[k] for k in ('traceback', 'hang', 'bad answer', 'exit 0 on hostile'))}",
                  flush=True)
    one()
    return counts, failures


def fuzz_dashboard(n: int, store: str, random_seed: int):
    from perflab.web.app import create_app
    app = create_app(store, token="sesame-sesame")
    counts: collections.Counter[str] = collections.Counter()
    failures: list[str] = []

    @seed(random_seed)
    @_settings(n)
    @given(request=cli_grammar.requests("sesame-sesame"))
    def one(request: cli_grammar.Request) -> None:
        counts["requests"] += 1
        try:
            counts[f"HTTP {cli_grammar.serve_one(app, request)}"] += 1
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            counts["HTTP 500 or traceback" if not isinstance(error, cli_grammar.Hang) else "hang"] += 1
            if len(failures) < 5:
                failures.append(f"{str(request)[:300]}: {type(error).__name__}: {str(error)[:300]}")
    one()
    return counts, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        store = str(Path(scratch) / "perflab.db")
        for label in ("a", "b"):
            assert invoke(["--db", store, "run", "-q", "-n", "3", "--label", label, "--", "true"]).code == 0
        pool = cli_grammar.FilePool(Path(scratch) / "pool")
        os.chdir(pool.root)   # what an option writes to lands in the scratch directory
        started = time.monotonic()
        counts, failures = fuzz_cli(args.invocations, store, pool, args.progress, args.seed)
        cli_s = time.monotonic() - started
        web, web_failures = fuzz_dashboard(max(args.invocations // 4, 1), store, args.seed)
        os.chdir(ROOT)
    print(f"CLI: {counts['invocations']:,} invocations in {cli_s:.0f} s "
          f"({counts['hostile refused']:,} with a hostile value, all refused if no failure below)")
    print("  " + ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items()) if k.startswith("exit")))
    bad = {k: counts[k] for k in ("traceback", "hang", "bad answer", "exit 0 on hostile")}
    print("  failures: " + ", ".join(f"{k} {v}" for k, v in bad.items()))
    for kind, shown in failures.items():
        for line in shown:
            print(f"  {kind}: {line}")
    print(f"dashboard: {web['requests']:,} requests: " + ", ".join(
        f"{k}: {v:,}" for k, v in sorted(web.items()) if k != "requests"))
    for line in web_failures:
        print(f"  failure: {line}")
    return 1 if sum(bad.values()) or web_failures else 0


if __name__ == "__main__":
    sys.exit(main())
