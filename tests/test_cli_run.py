"""`perflab run` end to end through the real CLI into SQLite and PostgreSQL."""

import contextlib
import csv
import io
import json
import os
import signal
import time

import pytest

from perflab.execute import settle

from conftest import run_cli


def _export(db, run="1"):
    return json.loads(run_cli("export", run, "--format", "json", db=db, check=True).stdout)


def test_true_records_every_sample(db_target):
    result = run_cli("run", "-n", "5", "--warmup", "2", "--label", "baseline", "--", "true", db=db_target)
    assert result.returncode == 0, result.stderr
    assert "Amean" in result.stdout
    data = _export(db_target)
    assert data["run"]["label"] == "baseline" and data["run"]["status"] == "complete"
    times = [s for s in data["samples"] if s["metric"] == "time"]
    assert sorted(s["repetition"] for s in times) == [0, 1, 2, 3, 4]  # warm-ups not recorded
    assert all(s["status"] == "ok" and 0 < s["value"] < 0.5 and s["unit"] == "s" for s in times)
    assert {s["metric"] for s in data["samples"]} >= {"time", "user", "system"}
    env = data["run"]["environment"]
    assert env["kernel"]["release"] and env["cpu"]["online_count"] >= 1 and env["loadavg_end"]
    assert 0 <= env["settle_s"] <= settle.CAP_S   # the pause after perflab's start-up, stated


def test_settle_pause_is_the_one_asked_for_and_stated(sqlite_db):
    run_cli("run", "-q", "-n", "2", "--settle", "0.2", "--", "true", db=sqlite_db, check=True)
    run_cli("run", "-q", "-n", "2", "--settle", "0", "--", "true", db=sqlite_db, check=True)
    assert [_export(sqlite_db, run)["run"]["environment"]["settle_s"] for run in "12"] == [0.2, 0]
    refused = run_cli("run", "-q", "-n", "2", "--settle", "-1", "--", "true", db=sqlite_db)
    assert refused.returncode == 2 and "--settle" in refused.stderr and "Traceback" not in refused.stderr


def test_a_burst_of_cpu_is_waited_for_and_a_run_ended_restarts_the_count():
    start = time.process_time()
    while time.process_time() - start < 0.05:   # a burst like perflab's imports, smaller
        pass
    assert 0.05 <= settle.pause_for(None) <= settle.CAP_S
    settle.run_ended()
    assert settle.pause_for(None) < 0.05   # no burst since the run ended
    assert settle.pause_for(0.3) == 0.3 and settle.settle(0.0) == 0.0


def test_sleep_time_is_close_to_its_duration(db_target):
    run_cli("run", "-n", "5", "--", "sleep", "0.01", db=db_target, check=True)
    times = [s["value"] for s in _export(db_target)["samples"] if s["metric"] == "time"]
    # a sleep never ends early; a loaded machine may wake it late now and then, so the
    # upper bound (seconds, not ms or ns) is on the median
    assert all(t > 0.0095 for t in times) and sorted(times)[len(times) // 2] < 0.1


def test_label_defaults_to_kernel_release(sqlite_db):
    import os
    run_cli("run", "-n", "1", "-q", "--", "true", db=sqlite_db, check=True)
    assert _export(sqlite_db)["run"]["label"] == os.uname().release


def test_failing_command_gives_failed_samples_not_values(db_target):
    result = run_cli("run", "-n", "3", "--", "false", db=db_target)
    assert result.returncode == 2
    assert "every sample of run 1 failed" in result.stderr
    assert "sample failed" in result.stderr and "exit status 1" in result.stderr
    samples = _export(db_target)["samples"]
    assert len(samples) == 3
    assert all(s["status"] == "failed" and s["value"] is None and s["note"] == "exit status 1"
               for s in samples)
    assert _export(db_target)["run"]["status"] == "failed"


def test_ignore_failure_keeps_values(sqlite_db):
    run_cli("run", "-n", "2", "-i", "--", "false", db=sqlite_db, check=True)
    times = [s for s in _export(sqlite_db)["samples"] if s["metric"] == "time"]
    assert all(s["status"] == "ok" and s["value"] > 0 and s["note"] == "exit status 1" for s in times)


def test_hanging_command_times_out(db_target):
    result = run_cli("run", "-n", "2", "--timeout", "0.2", "--", "sleep", "30", db=db_target, timeout=30)
    assert result.returncode == 2
    samples = _export(db_target)["samples"]
    assert [s["status"] for s in samples] == ["timeout", "timeout"]
    assert all(s["value"] is None for s in samples)


def test_parameters_substitute_and_interleave(sqlite_db, tmp_path):
    log = tmp_path / "order"
    result = run_cli("run", "-n", "2", "-p", "size=small,large", "-L", "k", "1,2", "--shell",
                     "--", f"echo {{size}}-{{k}} >> {log}; sleep 0.02", db=sqlite_db)  # outlasts sh's start-up
    assert result.returncode == 0, result.stderr
    assert log.read_text().split() == ["small-1", "small-2", "large-1", "large-2"] * 2
    samples = _export(sqlite_db)["samples"]
    assert {json.dumps(s["params"], sort_keys=True) for s in samples} == {
        json.dumps({"size": s, "k": k}, sort_keys=True) for s in ("small", "large") for k in (1, 2)}
    spec = _export(sqlite_db)["run"]["spec"]["plans"][0]
    assert spec["shell_overhead"][0] > 0  # the shell's start-up was measured to be subtracted


def test_prepare_setup_cleanup_hooks(sqlite_db, tmp_path):
    log = tmp_path / "hooks"
    result = run_cli("run", "-n", "2", "-p", "x=a,b", "--setup", f"echo setup-{{x}} >> {log}",
                     "--prepare", f"echo prepare-{{x}} >> {log}",
                     "--cleanup", f"echo cleanup-{{x}} >> {log}", "--", "true", db=sqlite_db)
    assert result.returncode == 0, result.stderr
    assert log.read_text().split() == ["setup-a", "setup-b", "prepare-a", "prepare-b",
                                       "prepare-a", "prepare-b", "cleanup-a", "cleanup-b"]


def test_conclude_runs_after_every_sample_warm_ups_too(sqlite_db, tmp_path):
    """hyperfine's --conclude: after each sample, with the point's placeholders, untimed."""
    log = tmp_path / "hooks"
    result = run_cli("run", "-n", "2", "-w", "1", "-p", "x=a,b", "--prepare", f"echo prepare-{{x}} >> {log}",
                     "--conclude", f"echo conclude-{{x}} >> {log}", "--", "true", db=sqlite_db)
    assert result.returncode == 0, result.stderr
    assert log.read_text().split() == [f"{hook}-{x}" for _ in range(3) for x in "ab"
                                       for hook in ("prepare", "conclude")]
    refused = run_cli("run", "--conclude", "echo {y}", "-p", "x=1", "--", "true", db=str(tmp_path / "no.db"))
    assert refused.returncode == 2 and "unknown placeholder {y} in --conclude" in refused.stderr


def test_shuffle_records_its_seed_and_replays(sqlite_db, tmp_path):
    log = tmp_path / "order"
    run_cli("run", "-n", "4", "-p", "v=1..4", "--seed", "11", "--shell", "--",
            f"echo {{v}} >> {log}; sleep 0.02", db=sqlite_db, check=True)   # outlasts the shell's start-up
    first = log.read_text().split()
    assert sorted(first) == sorted(["1", "2", "3", "4"] * 4) and first != ["1", "2", "3", "4"] * 4
    assert _export(sqlite_db)["run"]["spec"]["plans"][0]["options"]["seed"] == 11


def test_cpu_pinning(sqlite_db, tmp_path):
    out = tmp_path / "mask"
    run_cli("run", "-n", "1", "--cpu", "0", "--shell", "--",
            # the sleep: a line as short as the shell's own start-up has nothing left to time
            f"grep Cpus_allowed_list /proc/self/status > {out}; sleep 0.05", db=sqlite_db, check=True)
    assert out.read_text().split()[-1] == "0"


def test_commit_detected_from_repo(sqlite_db, tmp_path):
    import subprocess
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    subprocess.run([*git, "tag", "v1.0"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    run_cli("run", "-n", "1", "--repo", str(repo), "--", "true", db=sqlite_db, check=True)
    run = _export(sqlite_db)["run"]
    assert run["commit"] == sha and run["commit_describe"] == "v1.0"
    listing = run_cli("runs", db=sqlite_db, check=True).stdout
    assert "v1.0" in listing


def test_runs_show_and_csv_export(sqlite_db):
    run_cli("run", "-n", "3", "--label", "a", "-p", "n=1,2", "--shell", "--", "sleep 0.02; true {n}",
            db=sqlite_db, check=True)   # a line as short as the shell's start-up has nothing to time
    run_cli("run", "-n", "2", "--label", "b", "--", "true", db=sqlite_db, check=True)
    listing = run_cli("runs", db=sqlite_db, check=True).stdout.splitlines()
    assert listing[0].split() == ["id", "label", "commit", "host", "started", "status",
                                  "benchmarks", "samples"]
    assert listing[2].split()[1] == "a" and listing[2].split()[-1] == "6"
    assert listing[3].split()[1] == "b" and listing[3].split()[-1] == "2"
    shown = run_cli("show", "a", db=sqlite_db, check=True).stdout
    for word in ("Machine", "kernel", "n=1", "n=2", "median", "stddev", "failures"):
        assert word in shown
    rows = list(csv.DictReader(io.StringIO(run_cli("export", "a", "--format", "csv",
                                                   db=sqlite_db, check=True).stdout)))
    assert {r["param_n"] for r in rows} == {"1", "2"}
    assert len([r for r in rows if r["metric"] == "time"]) == 6


def test_doctor_reports_machine_perf_and_tools():
    result = run_cli("doctor", check=True)
    out = result.stdout
    for word in ("task-clock", "hyperfine", "kernel"):
        assert word in out


def test_plain_progress_when_not_a_terminal_and_none_when_quiet(sqlite_db):
    result = run_cli("run", "-n", "3", "--label", "p", "--", "true", db=sqlite_db, check=True)
    assert "3 samples to run" in result.stderr and "3/3 done in" in result.stderr
    quiet = run_cli("run", "-n", "3", "-q", "--", "true", db=sqlite_db, check=True)
    assert quiet.stderr == "" and quiet.stdout == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_what_a_prepare_hook_leaves_running_outlives_the_samples(sqlite_db, tmp_path):
    """A sample's leftovers are killed (its cgroup); a hook's are not: a --prepare or
    --setup may start a server on purpose, and hooks run outside the samples' cgroup."""
    from proc import running
    pids = tmp_path / "pids"
    # a daemon: detached (setsid) before the hook returns, as a server's start script does
    daemon = f"setsid -f sh -c 'echo $$ >> {pids}; exec sleep 60' >/dev/null 2>&1; sleep 0.1"
    run_cli("run", "-q", "-n", "3", "--prepare", daemon, "--", "true", db=sqlite_db, check=True)
    started = [int(pid) for pid in pids.read_text().split()]
    try:
        assert len(started) == 3 and all(running(pid) for pid in started)
    finally:
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
