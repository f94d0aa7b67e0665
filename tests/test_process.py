"""The executor's spawn-and-time on real processes."""

import os
import time

import pytest

from perflab.execute.process import open_devnull_streams, spawn_and_wait
from proc import running


@pytest.fixture(scope="module")
def streams():
    return open_devnull_streams()


def test_true_is_fast_and_ok(streams):
    result = spawn_and_wait("/bin/true", ["true"], streams=streams)
    assert result.ok and result.exit_code == 0
    assert 0 < result.wall_s < 0.5


def test_sleep_wall_time_is_measured(streams):
    result = spawn_and_wait("/bin/sleep", ["sleep", "0.05"], streams=streams)
    assert 0.05 <= result.wall_s < 0.5
    assert result.user_s < 0.05  # sleeping is not CPU time


def test_cpu_time_is_the_childs(streams):
    result = spawn_and_wait("/bin/sh", ["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"],
                            streams=streams)
    assert result.user_s + result.system_s > 0.05
    assert result.user_s + result.system_s <= result.wall_s * 1.1 + 0.01


def test_exit_status_and_signal(streams):
    assert spawn_and_wait("/bin/false", ["false"], streams=streams).exit_code == 1
    killed = spawn_and_wait("/bin/sh", ["sh", "-c", "kill -TERM $$"], streams=streams)
    assert killed.exit_code is None and killed.signal == 15
    assert killed.describe_failure() == "killed by SIGTERM"


def test_timeout_kills_the_whole_process_group(streams, tmp_path):
    marker = tmp_path / "pids"
    start = time.monotonic()
    result = spawn_and_wait("/bin/sh", ["sh", "-c", f"sleep 30 & echo $! > {marker}; sleep 30"],
                            streams=streams, timeout=0.3)
    assert time.monotonic() - start < 5
    assert result.timed_out and not result.ok
    assert result.describe_failure().startswith("timed out")
    background = int(marker.read_text())
    time.sleep(0.1)
    assert not running(background)  # the backgrounded grandchild died with the group



def test_pinning_reaches_the_child_and_perflab_gets_its_mask_back(tmp_path):
    out = tmp_path / "out"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT)
    devnull = open_devnull_streams()
    from perflab.execute.process import Streams
    before = os.sched_getaffinity(0)
    cpu = max(before)
    spawn_and_wait("/bin/grep", ["grep", "Cpus_allowed_list", "/proc/self/status"],
                   streams=Streams(devnull.stdin, fd, fd), cpus={cpu})
    os.close(fd)
    assert out.read_text().split()[-1] == str(cpu)
    assert os.sched_getaffinity(0) == before


def test_peak_rss_of_a_large_child_is_recorded(streams):
    import sys
    result = spawn_and_wait(sys.executable, [sys.executable, "-c", "b = bytearray(300 * 2**20)"],
                            streams=streams)
    assert result.max_rss_bytes is not None and result.max_rss_bytes > 300 * 2**20


def test_peak_rss_below_perflabs_own_is_not_claimed(streams):
    # true's real peak is far below this Python process's: wait4 cannot tell them apart.
    assert spawn_and_wait("/bin/true", ["true"], streams=streams).max_rss_bytes is None
