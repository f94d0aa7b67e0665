"""The smoke run of bench/fleet_scale.py (and so bench/fleet_generate.py) at its smallest
size, on PostgreSQL and SQLite: the generator's rows are what perflab reads, and every
timed command and page answers. The figures at the timing size are in docs/fleet.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import require_postgres

ROOT = Path(__file__).resolve().parent.parent


def test_fleet_scale_smallest():
    require_postgres()
    # kept under /tmp itself: a root run's server is the postgres user's, which cannot enter pytest's tmp_path
    with tempfile.TemporaryDirectory(prefix="perflab-fleet-", dir="/tmp") as kept:
        os.chmod(kept, 0o755)
        _scale_then_pages(kept)


def _scale_then_pages(kept: str) -> None:
    size = ["--commits", "60", "--hosts", "2", "--benchmarks", "3", "--repeat", "1", "--dir", kept, "--keep"]
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet_scale.py"), *size],
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    results = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["db"] for r in results] == ["postgresql", "sqlite"]
    for r in results:
        # 60 commits x 2 hosts x 3 benchmarks, 5 metrics x 5 repetitions each
        assert (r["runs"], r["samples"], r["series"], r["commits"]) == (360, 9000, 1800, 60)
        assert r["bytes"] > 0
        timings = r["timings"]
        assert set(timings) == {"alerts --update", "front page", "alert page", "history page (60 commits x 2 hosts)",
                                "history page (60 commits, one host)", "changes", "runs --since 1d"}
        # one host's page: its own series alone
        assert timings["history page (60 commits, one host)"]["bytes"] < timings[
            "history page (60 commits x 2 hosts)"]["bytes"]
        assert all(t["cold_s"] > 0 and t["warm_s"] > 0 for t in timings.values())
        assert timings["front page"]["bytes"] < 300_000
    # the kept stores timed again, their pages alone, without generating
    again = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet_scale.py"), *size, "--pages-only"],
                           capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "kept from an earlier run" in again.stderr
    for first, r in zip(results, (json.loads(line) for line in again.stdout.splitlines()), strict=True):
        assert (r["db"], r["runs"], r["samples"]) == (first["db"], first["runs"], first["samples"])
        assert set(r["timings"]) == set(first["timings"]) - {"alerts --update", "changes", "runs --since 1d"}
