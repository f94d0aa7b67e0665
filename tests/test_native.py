"""Building perflab's C programs: the cache, its reuse, and clear errors (real compiler)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from perflab.model.errors import EXIT_ENVIRONMENT, EnvironmentProblem
from perflab.model.records import ProcessResult
from perflab.workloads import native

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CC", raising=False)
    return tmp_path / "cache" / "perflab" / "bin"


@pytest.fixture
def counting_cc(tmp_path, monkeypatch) -> Path:
    """A compiler that logs each call, then is the real cc."""
    log = tmp_path / "cc.log"
    wrapper = tmp_path / "counting-cc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec cc "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    return log


def test_binary_is_cached_by_source_hash_and_reused(cache, counting_cc):
    first = native.binary("wis")
    assert Path(first).parent == cache
    assert Path(first).name.startswith("wis-") and os.access(first, os.X_OK)
    stamp = os.stat(first).st_mtime_ns
    assert native.binary("wis") == first
    assert len(counting_cc.read_text().splitlines()) == 1   # the second call did not compile
    assert os.stat(first).st_mtime_ns == stamp
    assert sorted(p.name for p in cache.iterdir()) == [Path(first).name]  # no temporaries left


def test_changed_source_builds_a_new_binary(cache, tmp_path):
    source = tmp_path / "hello.c"
    source.write_text("int main(void) { return 0; }\n")
    old = native.build(source)
    source.write_text("int main(void) { return 3; }\n")
    new = native.build(source)
    assert old != new and Path(old).exists()
    assert subprocess.run([new]).returncode == 3


def test_the_compiler_is_part_of_the_key(cache, counting_cc, monkeypatch):
    path_with_wrapper = native.binary("wis")
    monkeypatch.setenv("CC", "cc")
    assert native.binary("wis") != path_with_wrapper


def test_concurrent_builds_are_atomic(cache):
    with ThreadPoolExecutor(max_workers=4) as pool:
        paths = list(pool.map(lambda _: native.binary("cgroup_switch"), range(4)))
    assert len(set(paths)) == 1
    assert [p.name for p in cache.iterdir()] == [Path(paths[0]).name]
    assert subprocess.run([paths[0], "-m", "bogus"], capture_output=True).returncode == 2


def test_compile_error_names_the_compilers_first_error(cache):
    with pytest.raises(EnvironmentProblem) as caught:
        native.build(DATA / "native_broken.c")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cannot compile native_broken.c with cc: ")
    assert "error:" in message and "undeclared_variable" in message
    assert caught.value.exit_code == EXIT_ENVIRONMENT
    assert list(cache.iterdir()) == []   # nothing half-built is left in the cache


def test_link_error_names_the_missing_symbol(cache):
    with pytest.raises(EnvironmentProblem, match="undefined reference to `no_such_function'"):
        native.build(DATA / "native_link_error.c")


def test_missing_compiler_is_a_clear_environment_problem(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    expected = "no C compiler: '/nonexistent' not found (apt-get install gcc)"
    assert native.compiler_missing() == expected
    with pytest.raises(EnvironmentProblem) as caught:
        native.binary("wis")
    assert str(caught.value) == expected


def test_no_cc_on_path_says_how_to_install(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))   # an empty directory: no cc anywhere
    assert native.compiler_missing() == "no C compiler (apt-get install gcc)"


def test_unwritable_cache_is_reported(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))   # a file, so no directory below it
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))   # and no temporary directory either
    with pytest.raises(EnvironmentProblem, match="cannot write the build cache"):
        native.binary("wis")


def test_without_a_writable_cache_home_the_build_goes_to_a_private_temporary_directory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    built = Path(native.binary("deathsig"))
    assert built.parent == tmp_path / f"perflab-{os.getuid()}" / "bin"
    assert built.parent.stat().st_mode & 0o777 == 0o700 and os.access(built, os.X_OK)
    assert native.binary("deathsig") == str(built)   # found there the next time


def test_another_users_temporary_directory_is_never_used(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"perflab-{os.getuid()}" / "bin"
    planted.mkdir(parents=True)
    planted.parent.chmod(0o777)   # anyone could have put a program in it
    with pytest.raises(EnvironmentProblem, match="cannot write the build cache"):
        native.binary("deathsig")


@pytest.mark.parametrize("source", sorted((Path(native.CSRC)).glob("*.c")), ids=lambda p: p.name)
def test_c_sources_are_warning_free(source):
    done = subprocess.run([shutil.which("cc") or "cc", *native.FLAGS, "-Wall", "-Wextra", "-Werror",
                           "-fsyntax-only", str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_complaint_is_the_programs_own_line_not_the_usage():
    stderr = (DATA / "cgroup_switch_usage_bad_monitor.err").read_text()
    assert native.complaint("cgroup_switch", stderr) == "-m must be one or all"
    killed = ProcessResult(1.0, 0.0, 0.0, None, None, 9, False)
    assert native.failure_reason("cgroup_switch", "", killed) == "killed by SIGKILL"
