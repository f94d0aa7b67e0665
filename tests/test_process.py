"""The executor's spawn-and-time on real processes."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perflab.execute.process import open_devnull_streams, spawn_and_wait

from proc import running, wait_for


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
    assert wait_for(lambda: not running(background), 10)  # the backgrounded grandchild died with the group



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
    """A child must outgrow this process's own peak to be told apart (the test process may
    have grown in a long session): it allocates 300 MiB more than that peak."""
    import resource
    import sys
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    size = own + 300 * 2**20
    result = spawn_and_wait(sys.executable, [sys.executable, "-c", f"b = bytearray({size})"], streams=streams)
    assert result.max_rss_bytes is not None and result.max_rss_bytes > size


def test_peak_rss_below_perflabs_own_is_not_claimed(streams):
    # true's real peak is far below this Python process's: wait4 cannot tell them apart.
    assert spawn_and_wait("/bin/true", ["true"], streams=streams).max_rss_bytes is None


def test_without_cgroups_a_run_says_so_once_and_still_measures(tmp_path, monkeypatch):
    from perflab.execute import cgroups
    from perflab.execute.run_plan import plan_run
    from perflab.execute.runner import Runner
    from perflab.model.run_request import Identity, RunOptions, RunRequest
    from perflab.render.progress import NullProgress
    from perflab.store import Store
    from perflab.workloads.command import CommandWorkload
    monkeypatch.setattr(cgroups, "cgroup2_mount", lambda: None)   # as on a machine without
    warnings: list[str] = []
    with Store(str(tmp_path / "db"), create=True) as store:
        plan = plan_run(CommandWorkload(["true"]), {}, RunOptions(repetitions=3))
        runner = Runner(store, [plan], NullProgress(), warn=warnings.append)
        run_id = runner.start(RunRequest(identity=Identity(label="t")))
        assert len(store.samples.rows(run_id)) > 0
    # two facts, each said once: what can escape without a cgroup, and that the load of
    # other tasks cannot be told apart without one
    assert warnings[0] == ("samples run without a cgroup of their own (no cgroup2 hierarchy is "
                           "mounted): a sample's process dies with perflab and its process group is "
                           "killed, but a process that leaves the group (setsid, a daemon) or runs a "
                           "set-user-ID program can outlive a timeout or a kill of perflab")
    assert len(warnings) == 2
    assert warnings[1].startswith("the load outside the samples' cgroups is not measured")


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_a_sample_cgroup_kills_what_the_child_left_and_is_removed(streams, tmp_path):
    from perflab.execute.cgroups import RunCgroups
    owner, reason = RunCgroups.create()
    assert owner is not None, reason
    marker = tmp_path / "daemon"
    try:
        result = spawn_and_wait("/bin/sh", ["sh", "-c", f"setsid sh -c 'echo $$ > {marker}; "
                                "exec sleep 1000' & sleep 0.2"], streams=streams, cgroups=owner)
        assert result.ok
        assert not running(int(marker.read_text()))
        assert [p.name for p in owner.base.iterdir() if p.is_dir()] == []
    finally:
        owner.close()
    assert not owner.base.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_clean_samples_share_one_cgroup_that_perflab_stays_in_until_closed(streams):
    from perflab.execute.cgroups import RunCgroups
    owner, reason = RunCgroups.create()
    assert owner is not None, reason
    home = Path("/proc/self/cgroup").read_text()
    try:
        for _ in range(3):
            assert spawn_and_wait("/bin/true", ["true"], streams=streams, cgroups=owner).ok
        [group] = [p for p in owner.base.iterdir() if p.is_dir()]
        assert (group / "cgroup.procs").read_text().split() == [str(os.getpid())]
        # something left behind: perflab steps out, and the cgroup goes with what was left
        spawn_and_wait("/bin/sh", ["sh", "-c", "setsid sleep 1000 &"], streams=streams, cgroups=owner)
        assert [p for p in owner.base.iterdir() if p.is_dir()] == []
        assert Path("/proc/self/cgroup").read_text() == home
    finally:
        owner.close()
    assert Path("/proc/self/cgroup").read_text() == home


def test_a_shell_line_no_longer_than_the_shells_start_up_is_invalid_not_zero():
    """hyperfine clamps wall - shell start-up to 0; a 0 s time is a wrong number, so the
    sample is invalid and says why (under load the measured start-up can reach a short
    program's whole time)."""
    from perflab.model.records import ProcessResult, SampleStatus
    from perflab.workloads.command import CommandWorkload
    workload = CommandWorkload(["./prog"], shell=True)
    workload.shell_overhead = (0.004, 0.001, 0.001)
    result = ProcessResult(wall_s=0.0039, user_s=0.002, system_s=0.001, max_rss_bytes=None, exit_code=0,
                           signal=None, timed_out=False)
    [time_row] = workload.measure(result, None)
    assert time_row.status is SampleStatus.INVALID and time_row.value is None
    assert "no longer than the shell's measured start-up" in time_row.note
    longer = workload.measure(ProcessResult(0.0100, 0.002, 0.001, None, 0, None, False), None)
    assert longer[0].value == pytest.approx(0.006) and longer[0].status is SampleStatus.OK


def test_through_the_deathsig_shim_a_sample_is_timed_from_its_exec_and_a_missing_program_raises(streams):
    from perflab.execute.process import GroupJanitor
    from perflab.workloads import native
    with GroupJanitor.running(native.binary("deathsig")):
        outer = time.perf_counter()
        result = spawn_and_wait("/bin/sleep", ["sleep", "0.05"], streams=streams)
        outer = time.perf_counter() - outer
        # the clock covers the sleep and lies within the call: no wall-time bound (bench/ times)
        assert result.exit_code == 0 and 0.05 <= result.wall_s < outer
        with pytest.raises(FileNotFoundError):
            spawn_and_wait("/no/such/program", ["x"], streams=streams)


def _exited_unreaped(argv: list[str]) -> int:
    pid = os.posix_spawn(argv[0], argv, os.environ)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    return pid


def test_a_child_that_created_a_process_is_never_taken_for_alone(tmp_path):
    """The fast leftover check: any process the child's tree created (here a setsid daemon
    that outlives it) moves the pid cursor past the child's held pid."""
    from perflab.execute.process import nothing_created_since
    marker = tmp_path / "daemon"
    pid = _exited_unreaped(["/bin/sh", "-c", f"setsid sh -c 'echo $$ > {marker}; exec sleep 1000' &"])
    try:
        assert not nothing_created_since(pid)
    finally:
        os.waitpid(pid, 0)
        while not marker.exists() or not marker.read_text().strip():
            time.sleep(0.01)
        os.kill(int(marker.read_text()), signal.SIGKILL)


def test_a_child_that_created_nothing_is_seen_alone_when_nothing_else_was_created():
    """On a busy machine another process may be created during a sample (then the slow
    check runs): of many samples of `true`, some are seen alone."""
    from perflab.execute.process import nothing_created_since
    seen = []
    for _ in range(1000):
        pid = _exited_unreaped(["/bin/true"])
        seen.append(nothing_created_since(pid))
        os.waitpid(pid, 0)
        if seen[-1]:
            break
    assert seen[-1]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="mounting needs root and unshare")
def test_a_loadavg_mounted_over_as_lxcfs_does_is_not_trusted(tmp_path):
    """lxcfs mounts a copy of /proc/loadavg refreshed once a second: its last pid may be a
    child's while that child's tree forks. Here the copy names the child: still not alone."""
    fake = tmp_path / "loadavg"
    fake.write_text("0.00 0.00 0.00 1/1 1\n")
    script = (f"import os\nfrom perflab.execute.process import nothing_created_since\n"
              f"pid = os.posix_spawn('/bin/true', ['true'], os.environ)\n"
              f"os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)\n"
              f"open({str(fake)!r}, 'w').write(f'0.00 0.00 0.00 1/1 {{pid}}\\n')\n"
              f"print(open('/proc/loadavg').read().split()[-1] == str(pid), nothing_created_since(pid))\n")
    out = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind {fake} /proc/loadavg && exec "$1" -c "$2"',
                          "sh", sys.executable, script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


def test_a_change_of_perflabs_environment_reaches_the_next_sample(monkeypatch):
    from perflab.execute.process import CapturedOutput
    stdin = os.open(os.devnull, os.O_RDONLY)
    capture = CapturedOutput(stdin)
    try:
        for value in ("one", "two"):
            monkeypatch.setenv("PERFLAB_TEST_VALUE", value)
            spawn_and_wait("/bin/sh", ["sh", "-c", "echo $PERFLAB_TEST_VALUE"], streams=capture.streams())
            assert capture.read()[0] == f"{value}\n"
        monkeypatch.delenv("PERFLAB_TEST_VALUE")
        spawn_and_wait("/bin/sh", ["sh", "-c", "echo ${PERFLAB_TEST_VALUE-unset}"], streams=capture.streams())
        assert capture.read()[0] == "unset\n"
    finally:
        capture.close()
        os.close(stdin)
