"""bench/gradual_changes.py's smoke run: its smallest size, on the repository's recordings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "gradual_changes.py"


def test_gradual_changes_bench_runs_at_its_smallest_size():
    result = subprocess.run([sys.executable, str(BENCH), "--trials", "3"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    bisect = re.search(r"^bisect: names a commit of < 20% ([0-9.]+);.* runs per bisect \(median\) (\d+)",
                       result.stdout, re.M)
    history = re.search(r"^history: recall \(2-5 commits, 4-10 sd\) ([0-9.]+); told spread ([0-9.]+); "
                        r"false changes per 1,000 commits ([0-9.]+)", result.stdout, re.M)
    assert bisect and history, result.stdout
    assert 0 <= float(bisect.group(1)) <= 1 and int(bisect.group(2)) > 0
    assert all(0 <= float(history.group(i)) <= 1 for i in (1, 2))
