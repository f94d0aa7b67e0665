"""perflab bisect on a change spread evenly over three commits (issue 38): a real git history
of tests/test_bisect.py's C program whose commits 20, 21 and 22 each add a third of a 30%
step in work (injected noise 2% sd, seeded). The answer is the three commits, each with
its share, not one commit at 100%."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import run_cli
from test_bisect import PROGRAM, WORK_METRIC

FIRST, STEPS = 20, 3      # commits 20, 21, 22 carry the change
COMMITS = 40
pytestmark = pytest.mark.spread


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def work_at(rev: int, work: int = 2_000_000, step: float = 1.3) -> int:
    """The work of revision ``rev``: the old level, a third of the step more at each of the
    STEPS commits from FIRST, then the new level."""
    done = min(max(rev - FIRST + 1, 0), STEPS) / STEPS
    return int(work * (1 + (step - 1) * done))


def make_repo(path: str) -> list[str]:
    subprocess.run(["git", "init", "-q", "-b", "main", path], check=True)
    out = []
    for rev in range(COMMITS):
        src = PROGRAM % dict(rev=rev, work=work_at(rev), sd="0.02", outlier_rate="0", exit="return 0;")
        subject = (f"Do a third more of the work ({rev - FIRST + 1}/{STEPS})" if FIRST <= rev < FIRST + STEPS
                   else f"Change {rev}")
        data, msg = src.encode(), subject.encode()
        makefile = b"prog: prog.c\n\tcc -O1 -o prog prog.c -lm\n"
        out += [b"commit refs/heads/main\n", b"committer T <t@example.com> %d +0000\n" % (1700000000 + rev),
                b"data %d\n%s\n" % (len(msg), msg), b"M 100644 inline prog.c\ndata %d\n%s\n" % (len(data), data),
                b"M 100644 inline Makefile\ndata %d\n%s\n" % (len(makefile), makefile)]
    subprocess.run(["git", "-C", path, "fast-import", "--quiet"], input=b"".join(out), check=True)
    subprocess.run(["git", "-C", path, "checkout", "-q", "main"], check=True)
    shas = subprocess.run(["git", "-C", path, "rev-list", "--reverse", "main"], capture_output=True, text=True,
                          check=True).stdout.split()
    return shas


def test_bisect_names_each_commit_of_a_change_spread_over_three(tmp_path):
    repo = str(tmp_path / "repo")
    shas = make_repo(repo)
    noise = tmp_path / "noise"
    noise.write_text("7 0\n")
    result = run_cli("bisect", "--repo", repo, "--good", "main~39", "--bad", "main", "--build", "make -s",
                     "--run", "./prog", *WORK_METRIC, "--seed", "3", "-q",
                     env={"BISECT_NOISE_FILE": str(noise)}, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # the first commit that carries a part, whichever the search's calls ended on
    assert f"first higher commit (a regression): {shas[FIRST][:12]}" in out, out
    assert "The change is gradual: spread over 3 commits" in out, out
    carried = re.search(r"3 commits carry (\d+)% of the change: (.*)\)", out)
    assert carried and int(carried.group(1)) >= 85, out
    named = dict(re.findall(r"([0-9a-f]{12}) (\d+)%", carried.group(2)))
    assert set(named) == {sha[:12] for sha in shas[FIRST:FIRST + STEPS]}, out
    assert all(15 <= int(share) <= 55 for share in named.values()), out

