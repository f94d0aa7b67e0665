"""bench/blocking_rules.py at its smallest size (3 pairs of each benchmark): its table is whole."""

import subprocess
import sys

from conftest import ROOT


def test_blocking_rules_smoke():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "blocking_rules.py"), "--smoke", "--change", "2.0"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "24 pairs a design" in lines[0]
    rows = [line for line in lines if line.startswith("| 3 + prior |")]
    assert len(rows) == 7 and any("without two-groups" in row for row in rows), result.stdout
    assert all(row.count("%") >= 2 and row.count("-") >= 2 for row in rows)   # A/A and power, with intervals
