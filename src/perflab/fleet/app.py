"""The Celery application of the fleet, configured against Celery's traps for long jobs.

- One exclusive job per machine: concurrency 1, prefetch multiplier 1 and the fair
  scheduling of ``perflab worker`` (-O fair): a worker reserves no job beyond its own.
- ``task_acks_late`` + ``task_reject_on_worker_lost``: a job is acknowledged when it ends,
  so a job whose worker dies is not lost in Redis; what happens to it then is the store's
  decision (jobs.py: a job runs only on its one queued -> running move).
- Redis ``visibility_timeout`` = 2 x the longest job a user may submit (MAX_JOB_TIMEOUT_S):
  Redis redelivers an unacknowledged job after that long, so a job still running never
  goes to a second machine (celery#7918, #7651: the 1 h default does exactly that).
- No result backend: results are runs in the store, keyed by job id.
- Per-job soft and hard time limits come from the job's own timeout (``submit``).
"""

from __future__ import annotations

import os

from celery import Celery

from perflab.model.errors import EnvironmentProblem, UsageError

TASK_NAME = "perflab.job"
DEFAULT_JOB_TIMEOUT_S = 3600.0
MAX_JOB_TIMEOUT_S = 6 * 3600.0
VISIBILITY_TIMEOUT_S = 2 * MAX_JOB_TIMEOUT_S
HARD_LIMIT_GRACE_S = 60.0     # after the soft limit's SIGTERM, how long a job has to stop
BROKER_CONNECT_TIMEOUT_S = 3.0


def resolve_broker(broker: str | None) -> str:
    url = broker or os.environ.get("PERFLAB_BROKER")
    if not url:
        raise UsageError("no broker given", hint="pass --broker redis://HOST:6379/0 or set PERFLAB_BROKER; "
                                                 "start one with 'redis-server --port 6379'")
    if not url.startswith(("redis://", "rediss://")):
        raise UsageError(f"bad broker URL {url!r}: perflab's fleet uses Redis (redis://HOST:PORT/DB)")
    return url


def host_queue(host: str) -> str:
    return f"host.{host}"


def class_queue(machine_class: str) -> str:
    return f"class.{machine_class}"


def make_app(broker: str) -> Celery:
    app = Celery("perflab", broker=broker, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        result_backend=None,
        task_ignore_result=True,
        task_create_missing_queues=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=BROKER_CONNECT_TIMEOUT_S,
        task_serializer="json",
        accept_content=["json"],
        enable_utc=True,
    )
    return app


def check_broker(app: Celery) -> None:
    """One line saying what to start when the broker does not answer."""
    url = app.conf.broker_url
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0,
                                         timeout=BROKER_CONNECT_TIMEOUT_S)
    except Exception as error:  # kombu raises its own and redis-py's errors here
        raise EnvironmentProblem(f"cannot reach the broker {url}: {type(error).__name__}",
                                 hint="start Redis there (redis-server --port PORT) or pass "
                                      "--broker / PERFLAB_BROKER") from None


def publish(app: Celery, job_id: int, queue: str, timeout_s: float) -> None:
    app.send_task(TASK_NAME, args=[job_id], queue=queue, task_id=f"perflab-job-{job_id}",
                  soft_time_limit=timeout_s, time_limit=timeout_s + HARD_LIMIT_GRACE_S,
                  retry=True, retry_policy={"max_retries": 2, "interval_start": 0.2,
                                            "interval_step": 0.5})
