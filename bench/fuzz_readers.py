#!/usr/bin/env python3
"""Fuzz every reader of user input: 10,000 generated inputs each, counted by outcome.

Readers: hyperfine and pyperf files (perflab import), series CSV and JSON (perflab
changepoints), suite TOML (perflab run SUITE) and the parameter syntax (-p). The inputs
are tests/reader_inputs.py's: shaped like each format with fields replaced by any value,
real files with parts replaced, raw bytes. Each input goes in-process through the parse
function the CLI calls; a few hundred more go through `python -m perflab.cli.main` as a
user runs it. An outcome is parsed, rejected (a one-line error, exit 2) or crashed (any
other exception, a traceback, a message of several lines, another exit code, or a
database left behind by a rejected import). The target is 0 crashed.

Usage: bench/fuzz_readers.py [--inputs 10000] [--cli 300] [--readers hyperfine,pyperf,...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from reader_inputs import READERS, Reader, outcome  # noqa: E402

PERFLAB = [sys.executable, "-m", "perflab.cli.main"]


def _settings(n: int) -> settings:
    return settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck))


def fuzz_in_process(reader: Reader, n: int, workdir: Path) -> tuple[Counter[str], dict[str, str]]:
    counts: Counter[str] = Counter()
    crashes: dict[str, str] = {}

    @_settings(n)
    @given(data=reader.inputs)
    def one(data: object) -> None:
        try:
            counts[outcome(reader, data, workdir)] += 1
        except Exception as error:  # a crash: count it, keep the first input of each kind
            counts["crashed"] += 1
            crashes.setdefault(f"{type(error).__name__}: {str(error)[:80]}", repr(data)[:120])

    one()
    return counts, crashes


def fuzz_cli(reader: Reader, n: int, workdir: Path) -> tuple[Counter[str], dict[str, str]]:
    counts: Counter[str] = Counter()
    crashes: dict[str, str] = {}
    unwritable = workdir / "not-a-directory"
    unwritable.write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("PERFLAB_DB", None)

    @_settings(n)
    @given(data=reader.inputs)
    def one(data: object) -> None:
        if reader.suffix:
            path = workdir / f"cli-input{reader.suffix}"
            path.write_bytes(data)  # type: ignore[arg-type]
            argument = str(path)
        else:
            argument = str(data)
        importing = reader.name in ("hyperfine", "pyperf")
        db = workdir / "cli.db" if importing else unwritable / "perflab.db"  # nothing may run
        for leftover in workdir.glob("cli.db*"):
            leftover.unlink()
        result = subprocess.run([*PERFLAB, *reader.cli(argument, str(db))], capture_output=True, text=True,
                                env=env, stdin=subprocess.DEVNULL, timeout=120)
        one_line = result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        if result.returncode == 2 and one_line and not (importing and db.exists()):
            counts["rejected"] += 1
        elif result.returncode in (0, 3) and "Traceback" not in result.stderr:
            counts["parsed"] += 1  # 3: got as far as the database, which cannot be made here
        else:
            counts["crashed"] += 1
            crashes.setdefault(f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}",
                               repr(data)[:120])

    one()
    return counts, crashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="in-process inputs per reader")
    parser.add_argument("--cli", type=int, default=300, help="inputs through the CLI, over all readers")
    parser.add_argument("--readers", default=",".join(READERS))
    args = parser.parse_args()
    names = [n.strip() for n in args.readers.split(",")]
    rows = []
    all_crashes: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for name in names:
            start = time.perf_counter()
            counts, crashes = fuzz_in_process(READERS[name], args.inputs, workdir)
            rows.append((name, "in-process", counts, time.perf_counter() - start))
            all_crashes[f"{name} in-process"] = crashes
        per_reader = max(1, args.cli // len(names)) if args.cli else 0
        for name in names if per_reader else []:
            start = time.perf_counter()
            counts, crashes = fuzz_cli(READERS[name], per_reader, workdir)
            rows.append((name, "CLI", counts, time.perf_counter() - start))
            all_crashes[f"{name} CLI"] = crashes

    print(f"{'reader':<12} {'path':<11} {'inputs':>7} {'parsed':>7} {'rejected':>9} {'crashed':>8} {'seconds':>8}")
    for name, path, counts, seconds in rows:
        total = sum(counts.values())
        print(f"{name:<12} {path:<11} {total:>7} {counts['parsed']:>7} {counts['rejected']:>9} "
              f"{counts['crashed']:>8} {seconds:>8.1f}")
    for where, crashes in all_crashes.items():
        for kind, example in crashes.items():
            print(f"crash in {where}: {kind}\n    input: {example}")
    sys.exit(1 if any(all_crashes.values()) else 0)


if __name__ == "__main__":
    main()
