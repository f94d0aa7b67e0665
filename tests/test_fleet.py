"""The fleet on real parts: a Redis broker, a PostgreSQL store and `perflab worker` processes
with different host names on this machine (fixtures start and stop them all)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from perflab.analysis.alert_bisects import culprit_of
from perflab.fleet.execution import WorkerContext, execute
from perflab.fleet.watch import WatchOptions, rerun_request
from perflab.model.alerts import (
    BISECTED,
    EVIDENCE,
    INVALID,
    REPRODUCED,
    RERUN_REQUESTED,
    RERUN_UNDECIDED,
    RERUN_VERDICTS,
    TIP_METHOD,
    TIP_SUSPECT_METHOD,
    WITHDRAWN,
    detector_of,
)
from perflab.model.jobs import Job, JobKind, JobState
from perflab.stats.rerun import ROUNDS
from perflab.store import Store
from perflab.store.schema import runs

import services
from conftest import PERFLAB, _die_with_parent, _new_pg_database, perflab_shell, run_cli

WORKER_START_S = 90     # a worker on a loaded 2-CPU machine: Python, Celery, the first connection
JOB_WAIT_S = 120


class Fleet:
    """One broker, one store, and the workers a test starts (all stopped at the end)."""

    def __init__(self, broker: str, db: str, directory: Path):
        self.broker, self.db, self.directory = broker, db, directory
        self.workers: dict[str, subprocess.Popen] = {}

    def start_worker(self, host: str, machine_class: str | None = None, heartbeat: float = 0.5) -> subprocess.Popen:
        err = open(self.directory / f"worker-{host}.err", "w+")  # noqa: SIM115 (read while the worker lives)
        command = [*PERFLAB, "--db", self.db, "worker", "--broker", self.broker, "--host", host,
                   "--force-unfit", "--heartbeat", str(heartbeat), "--workdir", str(self.directory / f"work-{host}")]
        if machine_class:
            command += ["--class", machine_class]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                   start_new_session=True, preexec_fn=_die_with_parent)
        self.workers[host] = process
        deadline = time.monotonic() + WORKER_START_S
        while time.monotonic() < deadline:
            err.seek(0)
            text = err.read()
            if f"perflab worker {host}: ready" in text:
                return process
            if process.poll() is not None:
                raise AssertionError(f"worker {host} exited {process.returncode}:\n{text}")
            time.sleep(0.1)
        raise AssertionError(f"worker {host} not ready after {WORKER_START_S} s")

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return run_cli(*args, db=self.db, env={"PERFLAB_BROKER": self.broker}, timeout=timeout)

    def submit(self, *args: str) -> int:
        result = self.cli("submit", *args)
        assert result.returncode == 0, result.stderr
        return int(result.stdout.strip())

    def job(self, job_id: int):
        with Store(self.db) as store:
            return store.jobs.get(job_id)

    def wait_state(self, job_id: int, *states: JobState, timeout: float = JOB_WAIT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job.state in states:
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} is {job.state.value}, not {[s.value for s in states]}")

    def run_rows(self):
        with Store(self.db) as store:
            return store.conn.execute(sa.select(runs.c.id, runs.c.host, runs.c.status)).all()

    def stop(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.workers.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture
def fleet(redis_server, postgres_server, tmp_path):
    lab = Fleet(redis_server.url, _new_pg_database(postgres_server), tmp_path)
    try:
        yield lab
    finally:
        lab.stop()


def _processes_with(text: str) -> list[int]:
    """Processes whose command line starts with ``text`` (the benchmark, not perflab running it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().startswith(text):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for_process(text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not _processes_with(text):
        assert time.monotonic() < deadline, f"no process {text!r} after {timeout} s"
        time.sleep(0.1)


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_jobs_go_to_their_host_and_class_and_land_as_runs(fleet):
    fleet.start_worker("bm1", "2cpu")
    fleet.start_worker("bm2", "big")
    on_host = fleet.submit("--host", "bm2", "-n", "3", "--label", "routed", "--", "true")
    on_class = fleet.submit("--class", "2cpu", "-n", "2", "--", "true")
    assert fleet.cli("jobs", "wait", str(on_host)).returncode == 0
    assert fleet.cli("jobs", "wait", str(on_class)).returncode == 0
    host_job, class_job = fleet.job(on_host), fleet.job(on_class)
    assert (host_job.state, host_job.host) == (JobState.DONE, "bm2")
    assert (class_job.state, class_job.host) == (JobState.DONE, "bm1")
    assert len(host_job.run_ids) == len(class_job.run_ids) == 1
    hosts = {run_id: host for run_id, host, _ in fleet.run_rows()}
    assert hosts == {host_job.run_ids[0]: "bm2", class_job.run_ids[0]: "bm1"}
    shown = fleet.cli("show", str(host_job.run_ids[0]))
    assert "routed" in shown.stdout and " 3 " in shown.stdout
    listed = fleet.cli("jobs", "--state", "done")
    assert listed.returncode == 0 and f" {on_host}  done" in listed.stdout


def test_a_failing_job_is_failed_with_its_reason_and_wait_exits_1(fleet):
    fleet.start_worker("bm1")
    job_id = fleet.submit("--host", "bm1", "-n", "2", "--", "/no/such/program")
    waited = fleet.cli("jobs", "wait", str(job_id))
    assert waited.returncode == 1
    job = fleet.job(job_id)
    assert job.state is JobState.FAILED and job.error and job.error.startswith("run exited 2")
    assert f"job {job_id} failed on bm1" in waited.stdout


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_cancel_kills_the_running_jobs_process_group(fleet):
    fleet.start_worker("bm1")
    job_id = fleet.submit("--host", "bm1", "-n", "1", "--", "sleep", "31.25")
    fleet.wait_state(job_id, JobState.RUNNING)
    _wait_for_process("sleep 31.25")
    cancelled = fleet.cli("jobs", "cancel", str(job_id))
    assert cancelled.returncode == 0, cancelled.stderr
    assert fleet.job(job_id).state is JobState.CANCELLED
    assert _processes_with("sleep 31.25") == []
    # the worker is free again
    after = fleet.submit("--host", "bm1", "-n", "1", "--", "true")
    assert fleet.cli("jobs", "wait", str(after)).returncode == 0


def test_a_queued_job_cancelled_never_runs(fleet):
    job_id = fleet.submit("--host", "bm1", "-n", "1", "--", "true")   # no worker yet
    assert fleet.cli("jobs", "cancel", str(job_id)).returncode == 0
    fleet.start_worker("bm1")
    later = fleet.submit("--host", "bm1", "-n", "1", "--", "true")
    assert fleet.cli("jobs", "wait", str(later)).returncode == 0   # the queue went past the cancelled one
    job = fleet.job(job_id)
    assert job.state is JobState.CANCELLED and job.run_ids == ()


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_a_job_past_its_timeout_is_stopped_and_failed(fleet):
    fleet.start_worker("bm1")
    job_id = fleet.submit("--host", "bm1", "--job-timeout", "3", "-n", "1", "--", "sleep", "33.75")
    assert fleet.cli("jobs", "wait", str(job_id)).returncode == 1
    job = fleet.job(job_id)
    assert job.state is JobState.FAILED and job.error == "timed out after 3 s (the job's --job-timeout)"
    assert _processes_with("sleep 33.75") == []
    after = fleet.submit("--host", "bm1", "-n", "1", "--", "true")     # the worker took the next job
    assert fleet.cli("jobs", "wait", str(after)).returncode == 0


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_a_killed_worker_fails_its_job_and_a_redelivery_never_makes_a_second_run(fleet):
    fleet.start_worker("bm1")
    victim = fleet.start_worker("bm2")
    job_id = fleet.submit("--host", "bm2", "-n", "1", "--", "sleep", "32.5")
    _wait_for_process("sleep 32.5")                 # its run has begun
    os.kill(victim.pid, signal.SIGKILL)             # the worker's main process, mid-job
    job = fleet.wait_state(job_id, JobState.FAILED, timeout=60)   # bm1's heartbeat applies the policy
    assert "worker died" in (job.error or "")
    assert len(job.run_ids) == 1
    deadline = time.monotonic() + 30
    while _processes_with("sleep 32.5") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with("sleep 32.5") == []       # the benchmark died with its worker
    # Redis redelivers the unacknowledged job (after its visibility timeout) to a new bm2
    # worker: here the same message is sent again, at once
    fleet.start_worker("bm2")
    from perflab.fleet.app import make_app, publish
    publish(make_app(fleet.broker), job_id, "host.bm2", 60)
    check = fleet.submit("--host", "bm2", "-n", "1", "--", "true")   # queued behind the redelivery
    assert fleet.cli("jobs", "wait", str(check)).returncode == 0
    job = fleet.job(job_id)
    assert job.state is JobState.FAILED and len(job.run_ids) == 1
    assert [r for r in fleet.run_rows() if r[0] not in (job.run_ids[0], fleet.job(check).run_ids[0])] == []


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_two_long_jobs_on_two_workers_run_at_once(fleet):
    fleet.start_worker("bm1", "pair")
    fleet.start_worker("bm2", "pair")
    first = fleet.submit("--class", "pair", "-n", "1", "--", "sleep", "6")
    second = fleet.submit("--class", "pair", "-n", "1", "--", "sleep", "6")
    a = fleet.wait_state(first, JobState.RUNNING, JobState.DONE)
    b = fleet.wait_state(second, JobState.RUNNING, JobState.DONE)
    assert {a.host, b.host} == {"bm1", "bm2"}      # neither worker reserved both
    assert fleet.cli("jobs", "wait", str(first)).returncode == 0
    assert fleet.cli("jobs", "wait", str(second)).returncode == 0


def test_an_ab_job_interleaves_both_arms_in_one_run_on_one_host(fleet):
    fleet.start_worker("bm1")
    job_id = fleet.submit("--host", "bm1", "--ab", "--base", "true", "--cand", "sleep 0.01", "-n", "3")
    assert fleet.cli("jobs", "wait", str(job_id)).returncode == 0
    (run_id,) = fleet.job(job_id).run_ids
    exported = fleet.cli("export", str(run_id), "--format", "csv").stdout
    rows = [r for r in csv.DictReader(io.StringIO(exported)) if r["metric"] == "time"]
    assert sorted((r["benchmark"], r["repetition"]) for r in rows) == sorted(
        (arm, str(rep)) for arm in ("base", "cand") for rep in range(3))
    # interleaved round by round: each round has both arms before the next round begins
    order = [(int(r["repetition"]), r["benchmark"]) for r in sorted(rows, key=lambda r: float(r["measured_at"]))]
    assert [rep for rep, _ in order] == [0, 0, 1, 1, 2, 2]
    compared = fleet.cli("compare", str(run_id))           # cand against base, inside the one run
    assert compared.returncode == 0 and "base" in compared.stdout and "cand" in compared.stdout


# -- bad input --------------------------------------------------------------------------------
def test_unknown_state_is_a_usage_error(sqlite_db):
    result = run_cli("jobs", "--state", "finished", db=sqlite_db)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "perflab: error: unknown job state 'finished': expected one of queued, running, done, failed, cancelled"]


def test_no_broker_says_what_to_start(sqlite_db):
    port = __import__("conftest")._free_port()
    result = run_cli("submit", "--broker", f"redis://127.0.0.1:{port}/0", "--host", "bm1", "--", "true",
                     db=sqlite_db)
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perflab: error: cannot reach the broker redis://127.0.0.1:{port}/0")
    worker = run_cli("worker", "--broker", f"redis://127.0.0.1:{port}/0", "--force-unfit", db=sqlite_db, timeout=60)
    assert worker.returncode == 3
    assert worker.stderr.strip().splitlines()[-1].startswith("perflab: error: cannot reach the broker")
    missing = run_cli("submit", "--host", "bm1", "--", "true", db=sqlite_db)
    assert missing.returncode == 2 and "PERFLAB_BROKER" in missing.stderr
    # nothing was left queued
    assert "no jobs" in run_cli("jobs", db=sqlite_db).stdout


def test_a_malformed_suite_is_refused_before_it_is_queued(redis_server, sqlite_db, tmp_path):
    suite = tmp_path / "bad.toml"
    suite.write_text("[[benchmark]]\nworkload = 'no-such-workload'\n")
    result = run_cli("submit", "--broker", redis_server.url, "--host", "bm1", str(suite), db=sqlite_db)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_bad_sweep_is_refused_before_it_is_queued(redis_server, sqlite_db):
    result = run_cli("submit", "--broker", redis_server.url, "--host", "bm1", "-p", "n=5..1", "--", "true",
                     db=sqlite_db)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not Path(sqlite_db).exists()    # refused before the store was even opened


def test_an_unknown_host_is_queued_with_a_warning(redis_server, sqlite_db):
    result = run_cli("submit", "--broker", redis_server.url, "--host", "nowhere", "--", "true", db=sqlite_db)
    assert result.returncode == 0
    assert "no worker has served host.nowhere yet: job queued" in result.stderr
    assert "queued" in run_cli("jobs", "--state", "queued", db=sqlite_db).stdout


def test_a_worker_refuses_an_unfit_machine_unless_forced(redis_server, sqlite_db):
    from perflab.execute import environment, tuning
    unfit = [f for f in tuning.check(environment.capture(), is_root=os.geteuid() == 0) if f.level == "warning"]
    result = run_cli("worker", "--broker", redis_server.url, "--host", "bm1", db=sqlite_db, timeout=60) \
        if unfit else None
    if result is None:
        pytest.skip("this machine is fit for benchmarks: nothing to refuse")
    assert result.returncode == 3
    assert result.stderr.startswith("perflab: error: this machine is unfit for benchmarks: ")
    assert "--force-unfit" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_queued_jobs_survive_a_restart_of_redis(postgres_server, tmp_path):
    from conftest import RedisServer
    redis = RedisServer(persistent=True)   # append-only file, fsync always: what docs/fleet.md asks of a lab
    lab = Fleet(redis.url, _new_pg_database(postgres_server), tmp_path)
    try:
        lab.start_worker("bm1")
        waiting = [lab.submit("--host", "bm9", "-n", "1", "--", "true") for _ in range(2)]
        redis.restart()                                    # SIGKILL, then a new server on the same port
        after = lab.submit("--host", "bm1", "-n", "1", "--", "true")
        assert lab.cli("jobs", "wait", str(after)).returncode == 0   # bm1's worker reconnected
        lab.start_worker("bm9")
        for job_id in waiting:
            assert lab.cli("jobs", "wait", str(job_id)).returncode == 0
            assert len(lab.job(job_id).run_ids) == 1
    finally:
        lab.stop()
        redis.close()


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_a_job_outlives_an_outage_of_postgresql_and_keeps_every_sample(redis_server, tmp_path):
    from conftest import PostgresServer, require_postgres
    require_postgres()
    server = PostgresServer()                       # its own server: this test stops it
    lab = Fleet(redis_server.url, _new_pg_database(server.url), tmp_path)
    try:
        lab.start_worker("bm1", heartbeat=2.0)       # dead only after 20 s of silence
        job_id = lab.submit("--host", "bm1", "-n", "12", "--", "sleep", "0.52")
        _wait_for_process("sleep 0.52")
        server.stop()                               # down for a while, mid-run
        time.sleep(4)
        server.start()
        assert lab.cli("jobs", "wait", str(job_id)).returncode == 0
        (run_id,) = lab.job(job_id).run_ids
        shown = lab.cli("show", str(run_id)).stdout
        assert "status complete" in shown and " 12 " in shown, shown
    finally:
        lab.stop()
        server.close()


# -- the robot ------------------------------------------------------------------------------------
BUILD = "cc -O1 -o prog prog.c"     # the robot's build line: a C benchmark, built per commit
STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [a-z]")   # the watch log's UTC time


def _commit(repo: Path, delay: float, subject: str) -> str:
    """A commit of the C benchmark ``prog.c``: one sleep of ``delay`` seconds."""
    (repo / "prog.c").write_text(f"/* {subject} */\n#include <time.h>\nint main(void) {{\n"
                                 f"    struct timespec t = {{0, {round(delay * 1e9)}L}};\n"
                                 "    return nanosleep(&t, 0);\n}\n")
    subprocess.run(["git", "-C", str(repo), "add", "prog.c"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com",
                    "commit", "-q", "-m", subject], check=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


# its hosts' short histories (4 commits before a 20x step of a 10 ms sleep) are what the
# detectors judge: another worker's tests widened them enough to hide the step on one host.
# 20x: the tip detector's bar for one commit against 4 is ~30 history sds (stats/tip.py),
# and the first round's medians spread by ~4 ms (its two workers share two CPUs).
# The machine is held alone while the jobs measure (services.alone); the workers start and stop,
# and the last watch (which measures nothing), with the machine shared.
@pytest.mark.alone
def test_watch_queues_each_commit_and_bisects_a_change_that_spans_several(fleet, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    suite = tmp_path / "prog.toml"
    # the wall time alone, where the step is: the CPU times of this 2 ms program are whole
    # ticks that move with the machine's load (a full test run once raised a second alert on
    # one host over the step's range; they are the benchmark's only other series)
    suite.write_text('[suite]\nrepetitions = 5\n\n[[benchmark]]\nworkload = "command"\nname = "prog"\n'
                     'command = "./prog"\nmetrics = ["time"]\n')
    commits = [_commit(repo, 0.01, f"Change {i}") for i in range(4)]
    fleet.start_worker("bm1")
    fleet.start_worker("bm2")
    watch = ["watch", "--repo", str(repo), "--branch", "main", "--build", BUILD,
             "--suite", str(suite), "--hosts", "bm1,bm2", "--bisect-run", "./prog", "--once", "--job-timeout", "600"]
    with services.alone():
        bisects, output = _watch_the_step_arrive(fleet, repo, watch, commits)
    for job_id in bisects:   # --once waited for them: answered, and their answers attached
        _assert_bisected(fleet, job_id, commits, output)
    assert {fleet.job(j).host for j in bisects} == {"bm1", "bm2"}
    with Store(fleet.db) as store:   # the tip alerts over the 4 commits are among them: named by the bisect
        tips = [a for a in store.alerts.all() if a.method == TIP_METHOD and (a.last_good, a.first_bad) == (
            commits[3], commits[7]) and a.state != INVALID]
        named = [c.commit if (c := culprit_of(store, a)) else None for a in tips]
    assert named == [commits[5]] * len(tips), (named, tips)
    _assert_reruns_judged(fleet, output, commits[3], commits[7])
    with Store(fleet.db) as store:
        built = [r for job in store.jobs.all() if job.kind is JobKind.BUILD for r in job.run_ids]
    assert len(built) == 14
    _assert_recorded_as_the_robot_made_them(fleet, built)
    _assert_the_culprit_is_named(fleet, commits[5])
    _assert_reproduce_lines_measure_the_commit(fleet, tmp_path, commits[5])
    _assert_one_summary_with_both_hosts(fleet, commits[3], commits[7])
    # the robot remembers: nothing new, nothing queued
    again = fleet.cli(*watch, timeout=300)
    assert again.returncode == 0 and "queued" not in again.stdout and "bisect job" not in again.stdout
    assert "rerun job" not in again.stdout
    _assert_the_way_back_recovers_both_hosts(fleet, repo, watch, commits)


def _assert_one_summary_with_both_hosts(fleet: Fleet, good: str, bad: str) -> None:
    """The step on two hosts is one alert summary, both hosts' alerts in it (as `alerts
    --summary` prints it), with the bisected commit in its headline."""
    with Store(fleet.db) as store:
        step = [a for a in store.alerts.all() if (a.last_good, a.first_bad) == (good, bad)
                and a.kind == "regression" and a.state != INVALID]
    assert {a.host for a in step} == {"bm1", "bm2"} and len({a.summary_id for a in step}) == 1, step
    summaries = fleet.cli("alerts", "--summary", "--format", "json")
    assert summaries.returncode == 0, summaries.stderr
    (mine,) = [s for s in json.loads(summaries.stdout)["summaries"] if s["id"] == step[0].summary_id]
    assert {a["host"] for a in mine["alerts"]} == {"bm1", "bm2"}, mine


def _assert_the_way_back_recovers_both_hosts(fleet: Fleet, repo: Path, watch: list[str],
                                             commits: list[str]) -> None:
    """Five commits after the step's last, the sleep is restored: one more watch round, and
    the step's alert is marked recovered on both hosts."""
    commits += [_commit(repo, 0.01, "Sleep as before")] + [_commit(repo, 0.01, f"Change {i}") for i in range(11, 16)]
    with services.alone():
        back = fleet.cli(*watch, timeout=900)
    assert back.returncode == 0, back.stderr
    with Store(fleet.db) as store:
        step = [a for a in store.alerts.all() if (a.last_good, a.first_bad) == (commits[3], commits[7])
                and a.kind == "regression" and a.state != INVALID]
        shown = [(a.id, a.host, a.method, a.recovered) for a in store.alerts.all()]
    assert {a.host for a in step if a.recovered} == {"bm1", "bm2"}, (shown, back.stdout)


@pytest.mark.long   # 20-60 s: started early (tests/scheduling.py)
def test_the_polling_watch_logs_each_event_as_it_comes(fleet, tmp_path):
    """Without --once the watch polls: each new commit is logged queued, then measured when
    its job lands, every line stamped with its UTC time as it happens."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    suite = tmp_path / "prog.toml"
    suite.write_text('[suite]\nrepetitions = 3\n\n[[benchmark]]\nworkload = "command"\nname = "prog"\n'
                     'command = "./prog"\n')
    first = _commit(repo, 0.01, "Change 0")
    fleet.start_worker("bm1")
    out = open(tmp_path / "watch.out", "w+")  # noqa: SIM115 (read while the watch lives)
    watch = subprocess.Popen([*PERFLAB, "--db", fleet.db, "watch", "--broker", fleet.broker, "--repo", str(repo),
                              "--build", BUILD, "--suite", str(suite), "--hosts", "bm1", "--interval", "0.5"],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True, preexec_fn=_die_with_parent)
    try:
        _wait_for_line(out, f"Z measured: build job 1 on bm1 (build {first[:10]} + prog.toml); runs: ")
        second = _commit(repo, 0.01, "Change 1")
        _wait_for_line(out, f'Z queued: {second[:12]} "Change 1": build job 2 on bm1')
        _wait_for_line(out, f"Z measured: build job 2 on bm1 (build {second[:10]} + prog.toml); runs: ")
    finally:
        os.killpg(watch.pid, signal.SIGTERM)
        watch.wait(timeout=30)
    out.seek(0)
    lines = out.read().splitlines()
    assert lines and all(STAMPED.match(line) for line in lines), lines


def _wait_for_line(out, text: str, timeout: float = JOB_WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        out.seek(0)
        found = out.read()
        if text in found:
            return
        assert time.monotonic() < deadline, f"no {text!r} after {timeout} s:\n{found}"
        time.sleep(0.2)


def _watch_the_step_arrive(fleet: Fleet, repo: Path, watch: list[str],
                           commits: list[str]) -> tuple[list[int], str]:
    """Three watch rounds over ``commits`` (4, extended here to 10; the 20x step at commits[5]):
    each queues a build job per new commit and host (and the rerun jobs of its tip alerts);
    the last raises one alert per host. The bisect jobs the rounds queued (one per host that
    saw the step over the 4 commits --tip-only skipped), and the three rounds' output (a rerun
    the first queued, of a suspect two loaded workers made, is judged in it);
    every line of the watch's log stamped with its UTC time."""
    first = fleet.cli(*watch, "--since", commits[0], timeout=600)
    assert first.returncode == 0, first.stderr
    queued = [line for line in first.stdout.splitlines() if "Z queued: " in line]
    assert len(queued) == 4 and sum(line.count("build job ") for line in queued) == 8, first.stdout
    commits.append(_commit(repo, 0.01, "Change 4"))
    commits.append(_commit(repo, 0.2, "Sleep twenty times as long"))     # the step: commits[5]
    commits += [_commit(repo, 0.2, f"Change {i}") for i in (6, 7)]
    skipped = fleet.cli(*watch, "--tip-only", timeout=900)                 # measures commits[7] only
    assert skipped.returncode == 0, skipped.stderr
    assert f"queued: {commits[7][:12]} \"Change 7\": build job " in skipped.stdout, skipped.stdout
    commits += [_commit(repo, 0.2, f"Change {i}") for i in (8, 9)]
    last = fleet.cli(*watch, timeout=900)
    assert last.returncode == 0, last.stderr
    output = first.stdout + skipped.stdout + last.stdout
    assert all(STAMPED.match(line) for line in output.splitlines()), output
    for event in ("queued", "measured", "rerun verdict", "bisect queued", "bisect answer"):
        assert f"Z {event}: " in output, (event, output)
    alerts = [line for line in fleet.cli("alerts").stdout.splitlines()
              if f"{commits[3][:12]}..{commits[7][:12]}" in line and "regression" in line]
    assert sorted(line.split("@")[1].split()[0] for line in alerts) == ["bm1", "bm2"], \
        fleet.cli("alerts").stdout + "\n" + output   # one alert per host (a text: pytest shows it whole)
    bisects = sorted({int(m) for m in re.findall(r"Z bisect queued: .*: bisect job (\d+) on ", output)})
    assert len(bisects) == 2, output                                       # one per host that saw it
    return bisects, output


def _assert_bisected(fleet: Fleet, job_id: int, commits: list[str], output: str) -> None:
    """The bisect of 3..7 named commits[5], its runs are the job's, its answer is on its alerts."""
    job = fleet.job(job_id)
    assert job.state is JobState.DONE, job.error
    assert (job.request["good"], job.request["bad"]) == (commits[3], commits[7])
    found = f"first slower commit (a regression): {commits[5][:12]}"   # bisect names the change
    assert found in (job.output or ""), job.output
    shown = fleet.cli("jobs", "show", str(job_id)).stdout
    assert f"job {job_id} (bisect) done" in shown and found in shown
    assert len(job.run_ids) >= 4 and f"runs: {', '.join(map(str, job.run_ids))}" in shown, shown
    with Store(fleet.db) as store:
        stored = {store.runs.resolve(str(r)).commit for r in job.run_ids}
        assert {commits[3], commits[5], commits[7]} <= stored
        for alert_id in job.request["alerts"]:
            answer = [e for e in store.alerts.events(alert_id) if e.action == BISECTED]
            assert len(answer) == 1 and found in answer[0].note, answer
            assert store.runs.resolve(str(answer[0].run_id)).commit == commits[5]
            assert f"Z bisect answer: alert {alert_id} " in output


def _assert_the_culprit_is_named(fleet: Fleet, culprit: str) -> None:
    """`alert ID` and `report change` name the bisected commit, its subject and author."""
    with Store(fleet.db) as store:
        alert = next(a for a in store.alerts.all() if any(
            e.action == BISECTED for e in store.alerts.events(a.id)))
    shown = fleet.cli("alert", str(alert.id))
    assert shown.returncode == 0, shown.stderr
    named = f'{culprit[:12]} ("Sleep twenty times as long", T <t@example.com>)'
    assert f"at commit {named}" in shown.stdout.splitlines()[0], shown.stdout
    report = fleet.cli("report", "change", alert.change_id, "--method", detector_of(alert))
    assert report.returncode == 0, report.stderr
    first = report.stdout.splitlines()[0]
    assert f"on commit {culprit[:10]} (Sleep twenty times as long, by T <t@example.com>)" in first, first
    assert f"commit: {culprit} (\"Sleep twenty times as long\")" in report.stdout
    assert f"bisected: {named}" in fleet.cli("alerts", "--summary").stdout


def _assert_reproduce_lines_measure_the_commit(fleet: Fleet, tmp_path: Path, culprit: str) -> None:
    """A robot run's "To reproduce": its recorded build and `perflab run` lines, with no
    worker's path, run in a fresh clone of the repository, build and measure the commit
    the report names (the bisected one)."""
    with Store(fleet.db) as store:
        alert = next(a for a in store.alerts.all() if a.host == "bm1" and culprit_of(store, a))
    report = fleet.cli("report", "change", alert.change_id, "--method", detector_of(alert)).stdout
    lines = [line.strip() for line in report.split("To reproduce:")[1].strip().splitlines()]
    assert lines[2] == f"{BUILD}   # the build line its runs recorded", lines
    assert "work-bm" not in report.split("To reproduce:")[1] and "make" not in lines[2]
    where, db = tmp_path / "reader", tmp_path / "reader.db"
    where.mkdir()
    script = "\n".join([f"perflab() {{ {perflab_shell()} \"$@\"; }}", "set -e", *lines])
    done = subprocess.run(["sh", "-c", script], cwd=where, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PERFLAB_DB=str(db)))
    assert done.returncode == 0, (script, done.stderr)
    with Store(str(db)) as store:
        (run,) = store.runs.all()
    assert run.commit == culprit and run.status.value == "complete"
    assert (where / f"perflab-{culprit[:12]}" / "prog").exists()   # built in the clone


def _assert_reruns_judged(fleet, output: str, good: str, bad: str) -> None:
    """Each rerun request of a tip alert (suspect or confirmed) was rerun on the alert's host
    (both commits built, 2 x ROUNDS runs attached) and judged in the same --once pass: on the
    real 20x step, never withdrawn. (Two workers measure at once on 2 CPUs: a suspect at
    another commit can come of that, and its rerun is judged alike, whatever it finds.)"""
    queued = {int(m.group(1)): m.group(0) for m in re.finditer(r"Z rerun queued: rerun job (\d+) .*", output)}
    with Store(fleet.db) as store:
        events = store.alerts.all_events()
        tip = [a for a in store.alerts.all() if a.method in (TIP_METHOD, TIP_SUSPECT_METHOD)]
        jobs = {job.id: job for job in store.jobs.all() if job.kind is JobKind.RERUN}
    assert any((a.last_good, a.first_bad) == (good, bad) for a in tip) and sorted(queued) == sorted(jobs), output
    for a in tip:
        mine = [job for job in jobs.values() if a.id in job.request["alerts"]]
        actions = [e.action for e in events[a.id]]
        assert len(mine) == actions.count(RERUN_REQUESTED) >= 1, actions      # one job per request
        for job in mine:
            assert f"rerun job {job.id} on {a.host} for alert(s) " in queued[job.id]
            assert job.state is JobState.DONE and job.host == a.host, job.error
            assert (job.request["good"], job.request["bad"]) == (a.last_good, a.first_bad)
            assert len(job.run_ids) == 2 * ROUNDS
            _assert_recorded_as_the_robot_made_them(fleet, job.run_ids)
        assert actions.count(EVIDENCE) == 2 * ROUNDS * len(mine)
        verdicts = [x for x in actions if x in RERUN_VERDICTS]
        assert len(verdicts) == len(mine), actions
        if (a.last_good, a.first_bad) == (good, bad):
            assert set(verdicts) <= {REPRODUCED, RERUN_UNDECIDED}, actions
        said = {WITHDRAWN: "not reproduced"}.get(verdicts[-1], verdicts[-1].removeprefix("rerun "))
        assert re.search(rf"Z (rerun verdict|withdrawn): alert {a.id} \(.*\): {said}: rerun of {ROUNDS} round", output)


def _assert_recorded_as_the_robot_made_them(fleet: Fleet, run_ids) -> None:
    """Each run records the build line and a `perflab run` line with its own label and no
    worker's path."""
    with Store(fleet.db) as store:
        for run_id in run_ids:
            run = store.runs.resolve(str(run_id))
            line = list(run.request.identity.command_line or ())
            assert run.request.identity.build == BUILD and line[:2] == ["perflab", "run"], run.request.identity
            assert line[line.index("--label") + 1] == run.label and "work-bm" not in " ".join(line)
            assert run.repo and "work-bm" not in run.repo


def test_a_rerun_that_cannot_build_a_side_fails_with_one_line_and_attaches_nothing(sqlite_db, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    good = _commit(repo, 0.01, "Builds")
    subprocess.run(["git", "-C", str(repo), "rm", "-q", "prog.c"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com",
                    "commit", "-q", "-m", "Does not build"], check=True)
    bad = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    suite = tmp_path / "prog.toml"
    suite.write_text('[[benchmark]]\nworkload = "command"\nname = "prog"\ncommand = "./prog"\n')
    options = WatchOptions(repo=str(repo), branch="main", build=BUILD,
                           suite=str(suite), hosts=("bm1",), label="robot-main", timeout_s=60)
    job = Job(id=1, kind=JobKind.RERUN, queue="host.bm1", request=rerun_request(options, good, bad, [7]),
              state=JobState.RUNNING, submitted_at=time.time())
    ctx = WorkerContext("w", "bm1", None, sqlite_db, tmp_path / "work")
    outcome = execute(job, ctx, cancelled=lambda: False)
    assert outcome.kind == "failed"
    assert (outcome.error or "").startswith("build of the bad side exited 1: compilation terminated"), outcome.error
    assert "\n" not in (outcome.error or "")
    assert (tmp_path / "work" / "rerun-good" / "prog").exists()          # the good side built
    assert not list((tmp_path / "work" / "job-1").glob("rounds.log"))    # no round measured: nothing attached
    assert not Path(sqlite_db).exists()       # the rounds step never opened the store: no run, no evidence


def test_a_schema_3_database_gains_the_fleet_tables(tmp_path):
    import sqlite3
    db = tmp_path / "old.db"
    Store(str(db), create=True).close()
    with sqlite3.connect(db) as conn:  # make it look like a schema-3 file
        for table in ("job_runs", "jobs", "workers", "watched_branches"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE perflab_meta SET value='3' WHERE key='schema_version'")
    listed = run_cli("jobs", db=str(db))
    assert listed.returncode == 0 and "no jobs" in listed.stdout
    with Store(str(db)) as store:
        assert {"jobs", "job_runs", "workers", "watched_branches"} <= set(sa.inspect(store.engine).get_table_names())
