"""perflab as a user without root (issue 31 items 3 and 6), run for real as `nobody`:
without cgroups a kill -9 of perflab leaves nothing of the sample, and a store that user
cannot write (root-owned, 0644) is read without writing it.

`nobody` runs this checkout's source with this venv's packages through a Python it may
execute (root's pyenv is not reachable by it: the system python of the same minor
version is used then); the store lives in a /tmp directory with the right modes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PERFLAB, ROOT
from proc import cmdline, processes, running, wait_for

GONE_WITHIN_S = 2.0
USER = "nobody"


def _as_user(*argv: str) -> list[str]:
    return ["runuser", "-u", USER, "--", *argv]


def _python_for_nobody() -> str | None:
    """A Python of this minor version that `nobody` may execute, with this venv's packages."""
    if os.geteuid() != 0 or not shutil.which("runuser"):
        return None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/python{version}"):
        probe = subprocess.run(_as_user("env", f"PYTHONPATH={_pythonpath()}", python, "-c",
                                        "import perflab.cli.main, sqlalchemy, numpy"),
                               capture_output=True, cwd="/tmp", check=False)
        if probe.returncode == 0:
            return python
    return None


def _pythonpath() -> str:
    return f"{ROOT / 'src'}:{sysconfig.get_paths()['purelib']}"


PYTHON = _python_for_nobody()
pytestmark = pytest.mark.skipif(PYTHON is None, reason="needs root, runuser and a Python `nobody` can run "
                                                       "this checkout with")


def _perflab_as_nobody(home: Path, *args: str, env: tuple[str, ...] = ()) -> list[str]:
    assert PYTHON is not None
    return _as_user("env", f"HOME={home}", *env, f"PYTHONPATH={_pythonpath()}", "LC_ALL=C.UTF-8",
                    PYTHON, "-m", "perflab.cli.main", *args)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory `nobody` may write (the store of its runs)."""
    directory = Path(tempfile.mkdtemp(prefix="perflab-nonroot-", dir="/tmp"))
    directory.chmod(0o777)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _sleeps(tag: str) -> list[int]:
    return [pid for pid in processes() if cmdline(pid)[:2] == ["sleep", tag] and running(pid)]


# each case sleeps its own length: on two xdist workers at once, one case took the other's
# sleep for its sample's, killed its own perflab before it had warned, and swept the other's
@pytest.mark.parametrize("tag, command", [("600.25", ["--", "sleep", "600.25"]),
                                          ("600.26", ["--shell", "--", "sleep 600.26; true"])],   # a grandchild
                         ids=["command", "shell-grandchild"])
def test_kill_9_of_perflab_as_nobody_leaves_no_process_of_the_sample(open_dir, tag, command):
    _kill_9_leaves_nothing(open_dir, open_dir, tag, command)


def test_without_a_writable_home_the_guard_is_built_in_a_private_temporary_directory(open_dir):
    """issue 42, case 11: HOME=/nonexistent (no ~/.cache to build the deathsig shim in)."""
    uid = pwd.getpwnam(USER).pw_uid
    _kill_9_leaves_nothing(open_dir, Path("/nonexistent"), "600.27", ["--", "sleep", "600.27"],
                           env=(f"TMPDIR={open_dir}",))
    own = open_dir / f"perflab-{uid}" / "bin"
    assert own.is_dir() and own.stat().st_uid == uid and not own.stat().st_mode & 0o022
    assert any(p.name.startswith("deathsig-") for p in own.iterdir())


def test_with_no_guard_built_the_janitor_alone_kills_the_sample(open_dir):
    """No compiler and no home: the deathsig shim cannot be built; the group janitor still
    knows each sample's group and kills it when perflab is killed."""
    _kill_9_leaves_nothing(open_dir, Path("/nonexistent"), "600.28", ["--", "sleep", "600.28"],
                           env=(f"TMPDIR={open_dir}", "CC=/nonexistent/cc"), guarded=False)


def _kill_9_leaves_nothing(open_dir: Path, home: Path, tag: str, command: list[str], env: tuple[str, ...] = (),
                           guarded: bool = True) -> None:
    perflab = subprocess.Popen(_perflab_as_nobody(home, "--db", str(open_dir / "s.db"), "run", "-n", "1",
                                                  *command, env=env),
                               cwd=open_dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: _sleeps(tag), timeout=60), "the sample never started"
        inner = [pid for pid in processes() if "perflab.cli.main" in (words := cmdline(pid))
                 and str(open_dir / "s.db") in words and words[0] not in ("runuser", "env")]
        assert len(inner) == 1, inner
        os.kill(inner[0], signal.SIGKILL)
        gone = wait_for(lambda: not _sleeps(tag), timeout=GONE_WITHIN_S)
        left = _sleeps(tag)
        assert gone and not left, f"left behind: {left}"
    finally:
        for pid in _sleeps(tag):
            os.kill(pid, signal.SIGKILL)
        perflab.kill()
        _, stderr = perflab.communicate(timeout=30)
    assert b"a sample's process dies with perflab" in stderr, stderr   # the warning says what is guarded
    assert (b"cannot build its guard" not in stderr) == guarded, stderr


def test_a_root_owned_0644_store_is_read_by_another_user_without_writing(open_dir, tmp_path):
    store_dir = Path(tempfile.mkdtemp(prefix="perflab-ro-", dir="/tmp"))
    try:
        store_dir.chmod(0o755)
        db = store_dir / "s.db"
        done = subprocess.run([*PERFLAB, "--db", str(db), "run", "-q", "-n", "3", "--label", "rootrun", "--", "true"],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        db.chmod(0o644)
        before = {p.name: p.stat().st_mtime_ns for p in store_dir.iterdir()}
        for args in (["runs"], ["show", "rootrun"], ["export", "1", "--format", "csv"], ["compare", "1", "1"]):
            read = subprocess.run(_perflab_as_nobody(open_dir, "--db", str(db), *args), cwd=open_dir,
                                  capture_output=True, text=True, check=False)
            assert read.returncode == 0, (args, read.stderr)
        assert "rootrun" in subprocess.run(_perflab_as_nobody(open_dir, "--db", str(db), "runs"), cwd=open_dir,
                                           capture_output=True, text=True, check=False).stdout
        write = subprocess.run(_perflab_as_nobody(open_dir, "--db", str(db), "run", "-n", "1", "--", "true"),
                               cwd=open_dir, capture_output=True, text=True, check=False)
        assert write.returncode == 3 and write.stderr.strip().splitlines() == [
            f"perflab: error: cannot write the database {db}: permission denied"], write.stderr
        assert {p.name: p.stat().st_mtime_ns for p in store_dir.iterdir()} == before   # nothing written
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
