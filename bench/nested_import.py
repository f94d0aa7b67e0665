#!/usr/bin/env python3
"""The refusal of a deeply nested result file (issue 42, case 10): wall time and peak memory
of `perflab import KIND FILE` as a user runs it, one process per file.

Files: DEPTH '[' then DEPTH ']' (131 kB at 65,536), DEPTH '[' left open, and DEPTH nested
objects. Each must end in exit 2 with "nested too deeply". The process's wall time and its
peak RSS (the kernel's ru_maxrss of the child, what /usr/bin/time -v prints as "Maximum
resident set size") are printed; the bar is < 1 s and < 100 MB. `--baseline` also times
`perflab runs` on the same store: the interpreter's start-up, which any command pays.

Usage: bench/nested_import.py [--depth 65536] [--kinds hyperfine,pyperf]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERFLAB = [sys.executable, "-m", "perflab.cli.main"]


def files(depth: int) -> dict[str, str]:
    return {"arrays": "[" * depth + "]" * depth, "open": '{"results": ' + "[" * depth,
            "objects": '{"a":' * depth + "1" + "}" * depth}


def measure(argv: list[str]) -> tuple[int, float, float, float, str]:
    """(exit code, wall s, CPU s, peak RSS MB, stderr) of one child, from its own rusage."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return (child.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            err.decode(errors="replace").strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=65_536)
    parser.add_argument("--kinds", default="hyperfine,pyperf")
    parser.add_argument("--baseline", action="store_true")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        db = str(Path(scratch) / "perflab.db")
        if args.baseline:
            code, wall, cpu, rss, _ = measure([*PERFLAB, "--db", db, "runs"])
            print(f"baseline `perflab runs`: exit {code}, wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.0f} MB")
        for name, text in files(args.depth).items():
            path = Path(scratch) / f"{name}.json"
            path.write_text(text)
            for kind in args.kinds.split(","):
                code, wall, cpu, rss, said = measure([*PERFLAB, "--db", db, "import", kind, str(path), "--label", "x"])
                ok = code == 2 and "nested too deeply" in said and "\n" not in said
                failed += not ok
                verdict = "" if ok else " FAILED: " + said[:200]
                print(f"{kind:9} {name:7} depth {args.depth:,} ({path.stat().st_size / 1000:.0f} kB): exit {code}, "
                      f"wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.0f} MB{verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
