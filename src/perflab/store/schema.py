"""The one schema, in SQLAlchemy Core, for SQLite and PostgreSQL alike.

Samples are in long format (one row per value). Parameter points are kept once in
``points`` and referenced by id, so a million samples group on an integer.
"""

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

# Bump when the schema changes, and add the step to MIGRATIONS in migrations.py.
SCHEMA_VERSION = 12
APPLICATION = "perflab"

metadata = sa.MetaData()

meta = sa.Table(
    "perflab_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.Text, nullable=False),
    sa.Column("commit", sa.Text),
    sa.Column("commit_describe", sa.Text),
    sa.Column("repo", sa.Text),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),   # Unix time, seconds
    sa.Column("finished_at", sa.Float),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("pid", sa.Integer),                        # to tell a live run from a killed one
    sa.Column("spec", sa.JSON, nullable=False),          # what was asked: enough to --resume
    sa.Column("environment", sa.JSON, nullable=False),
    sa.Index("ix_runs_label", "label", "started_at"),
)

points = sa.Table(
    "points", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),        # normalised JSON (sorted keys)
    sa.UniqueConstraint("benchmark", "params", name="uq_points_benchmark_params"),
)

samples = sa.Table(
    "samples", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("point_id", sa.Integer, sa.ForeignKey("points.id"), nullable=False),
    sa.Column("repetition", sa.Integer, nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("value", sa.Float),                        # NULL when the sample failed
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("note", sa.Text, nullable=False, default=""),
    sa.Column("measured_at", sa.Float, nullable=False),
    # one value per run, point, metric and repetition; compare reads them in this order
    sa.Index("ix_samples_run_point_metric", "run_id", "point_id", "metric", "repetition", unique=True),
)

# Derived, never the only truth: a finished run's ok values per point and metric as one
# float64 blob in repetition order, so a comparison reads 1,000 blobs, not 1,000,000 rows.
# Written when a run finishes; dropped when it is resumed; rebuilt from samples at will.
series = sa.Table(
    "series", metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("point_id", sa.Integer, sa.ForeignKey("points.id"), primary_key=True),
    sa.Column("metric", sa.Text, primary_key=True),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("ok_values", sa.LargeBinary, nullable=False),
)

metrics = sa.Table(
    "metrics", metadata,
    sa.Column("benchmark", sa.Text, primary_key=True),
    sa.Column("metric", sa.Text, primary_key=True),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("direction", sa.String(8), nullable=False),
    sa.Column("noise_floor", sa.Float, nullable=False),
    sa.Column("description", sa.Text, nullable=False, default=""),
)

artifacts = sa.Table(
    "artifacts", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("point_id", sa.Integer, sa.ForeignKey("points.id")),
    sa.Column("repetition", sa.Integer),
    sa.Column("kind", sa.Text, nullable=False),          # e.g. "perf.data", "log"
    sa.Column("sha256", sa.String(64), nullable=False),  # content address beside the DB
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)


# Profiles (schema 2). One row per symbol of one sample's profile, as lkp names them:
# self % (leaf frame) and children % (anywhere on the stack) of the samples of ``event``.
profile_symbols = sa.Table(
    "profile_symbols", metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("point_id", sa.Integer, sa.ForeignKey("points.id"), nullable=False),
    sa.Column("repetition", sa.Integer, nullable=False),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("symbol", sa.Text, nullable=False),
    sa.Column("self_pct", sa.Float, nullable=False),
    sa.Column("children_pct", sa.Float, nullable=False),
    sa.Index("ix_profile_symbols", "run_id", "point_id", "repetition", "event", "symbol", unique=True),
)

# Call chains of one sample's profile, frames joined by ";":
#   kind "calltrace": at most five frames, callee first (lkp), value = % of samples;
#   kind "stack": a whole stack, root first (folded, for flame graphs), value = weight.
profile_traces = sa.Table(
    "profile_traces", metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("point_id", sa.Integer, sa.ForeignKey("points.id"), nullable=False),
    sa.Column("repetition", sa.Integer, nullable=False),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("frames", sa.Text, nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Index("ix_profile_traces", "run_id", "point_id", "repetition", "event", "kind"),
)


# Regression alerts (schema 3): one alert per detected change (unique change id), grouped
# in summaries by commit range, with every triage move in alert_events.
alert_summaries = sa.Table(
    "alert_summaries", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("last_good", sa.Text, nullable=False),     # history point key: commit sha or run-<id>
    sa.Column("first_bad", sa.Text, nullable=False),
    sa.Column("repo", sa.Text),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("last_good", "first_bad", name="uq_alert_summaries_range"),
)

alerts = sa.Table(
    "alerts", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("summary_id", sa.Integer, sa.ForeignKey("alert_summaries.id"), nullable=False),
    sa.Column("change_id", sa.String(40), nullable=False, unique=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),        # normalised JSON, as points.params
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("direction", sa.String(8), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),    # regression / improvement
    sa.Column("before", sa.Float),
    sa.Column("after", sa.Float),
    sa.Column("change_pct", sa.Float),
    sa.Column("oriented_pct", sa.Float),
    sa.Column("p_value", sa.Float),
    sa.Column("method", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("duplicate_of", sa.Integer, sa.ForeignKey("alerts.id")),
    sa.Column("recovered", sa.Boolean, nullable=False, default=False),
    sa.Column("recovered_by", sa.String(40)),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    # schema 6: the alert's own commit range (its host may have placed the change apart from
    # its summary's first alert: one summary per change across hosts, each host's range its own)
    sa.Column("last_good", sa.Text),
    sa.Column("first_bad", sa.Text),
    sa.Column("assignee", sa.Text),                      # schema 8: who looks into it (the dashboard's field)
    sa.Column("bug_url", sa.Text),                       # schema 8: the bug that tracks it
    sa.Index("ix_alerts_state", "state"),
)

alert_events = sa.Table(
    "alert_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("alert_id", sa.Integer, sa.ForeignKey("alerts.id"), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("who", sa.Text, nullable=False),
    sa.Column("action", sa.String(16), nullable=False),  # created / a triage action / recovered / evidence
    sa.Column("from_state", sa.String(16)),
    sa.Column("to_state", sa.String(16)),
    sa.Column("note", sa.Text, nullable=False, default=""),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL")),
    sa.Index("ix_alert_events_alert", "alert_id", "at"),
)


# -- the fleet (schema 4): jobs, the runs they made, workers, the robot's last seen commits --
# A job's request is JSON (see model/jobs.py); its state changes by conditional UPDATEs, so
# of two deliveries of one job only the one that moves it from queued to running runs it.
jobs = sa.Table(
    "jobs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("queue", sa.Text, nullable=False),            # host.NAME or class.NAME
    sa.Column("request", sa.JSON, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("submitted_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float),
    sa.Column("finished_at", sa.Float),
    sa.Column("host", sa.Text),
    sa.Column("worker", sa.Text),
    sa.Column("cancel_requested", sa.Boolean, nullable=False, default=False),
    sa.Column("error", sa.Text),                           # one line: why it failed
    sa.Column("output", sa.Text),                          # the tail of its standard output
    sa.Index("ix_jobs_state", "state", "submitted_at"),
)

# The runs a job made; a run belongs to at most one job.
job_runs = sa.Table(
    "job_runs", metadata,
    sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.UniqueConstraint("run_id", name="uq_job_runs_run"),
)

workers = sa.Table(
    "workers", metadata,
    sa.Column("name", sa.Text, primary_key=True),            # HOST:NODENAME:PID
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("machine_class", sa.Text),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("nodename", sa.Text, nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("heartbeat_at", sa.Float, nullable=False),
    sa.Column("heartbeat_s", sa.Float, nullable=False),      # its interval: stale after MISSED_BEATS
    sa.Column("stopped_at", sa.Float),
    sa.Column("environment", sa.JSON, nullable=False),
)

# `perflab watch`: the last commit of a branch it has queued jobs for
watched_branches = sa.Table(
    "watched_branches", metadata,
    sa.Column("repo", sa.Text, primary_key=True),
    sa.Column("branch", sa.Text, primary_key=True),
    sa.Column("last_commit", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)


# The host model (schema 5): per host and kind of metric, the prior of run-to-run variance
# fitted on every replicate group there (stats.host_prior). Derived, refitted when the
# host's replicate runs change (``stamp``: their count and newest id).
host_priors = sa.Table(
    "host_priors", metadata,
    sa.Column("host", sa.Text, primary_key=True),
    sa.Column("kind", sa.String(16), primary_key=True),    # wall time, cpu time, rate, count
    sa.Column("s0_squared", sa.Float, nullable=False),     # log scale
    sa.Column("d0", sa.Float, nullable=False),
    sa.Column("groups", sa.Integer, nullable=False),
    sa.Column("benchmarks", sa.Integer, nullable=False),
    sa.Column("data_df", sa.Float, nullable=False),
    sa.Column("slope", sa.Float, nullable=False),
    sa.Column("centre", sa.Float, nullable=False),
    sa.Column("low", sa.Float),                            # NULL: no covariate range
    sa.Column("high", sa.Float),
    sa.Column("stamp", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)


# The outbox (schema 7, notify/): one row per event per channel, unique by (channel, event
# key), so two robots, a restart or a fleet of watch processes never queue an event twice.
# A sender claims a row by a conditional UPDATE (state and lease), records each attempt in
# outbox_attempts, and retries with backoff until its last try. No secret is stored: a
# webhook's channel names its host and a hash of its URL.
outbox = sa.Table(
    "outbox", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("channel", sa.Text, nullable=False),          # mail, or webhook HOST#HASH
    sa.Column("event_key", sa.Text, nullable=False),        # summary N reported / bisected / recovered ...
    sa.Column("event", sa.String(16), nullable=False),
    sa.Column("summary_id", sa.Integer, sa.ForeignKey("alert_summaries.id"), nullable=False),
    sa.Column("note", sa.Text, nullable=False, default=""),
    sa.Column("since_event", sa.Integer, nullable=False, default=0),   # the newest alert event then
    sa.Column("state", sa.String(16), nullable=False),      # pending / sending / sent / failed
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("next_at", sa.Float, nullable=False),         # due from then on
    sa.Column("claimed_by", sa.Text),
    sa.Column("claimed_until", sa.Float),
    sa.Column("sent_at", sa.Float),
    sa.Column("message_id", sa.Text),                       # mail: the Message-ID it went with
    sa.Column("last_error", sa.Text),
    sa.UniqueConstraint("channel", "event_key", name="uq_outbox_channel_event"),
    sa.Index("ix_outbox_state", "state", "next_at"),
)

outbox_attempts = sa.Table(
    "outbox_attempts", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("notification_id", sa.Integer, sa.ForeignKey("outbox.id", ondelete="CASCADE"), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("channel", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),     # sent / error
    sa.Column("error", sa.Text),
    sa.Column("by", sa.Text, nullable=False),               # the sender: HOST:PID
    sa.Index("ix_outbox_attempts_notification", "notification_id", "at"),
)
# Change points kept (schema 12): what the detector found on one series (host, benchmark,
# point, metric; its spread search apart), with the digest of what it read (its own code,
# the method, the noise floor and every value): a reader whose values have that digest takes
# the change points from here, any other detects again. Derived, never the only truth; written by the
# robot's pass (`alerts --update`), one row a series, replaced when the values move.
detections = sa.Table(
    "detections", metadata,
    sa.Column("series_key", sa.String(40), primary_key=True),   # analysis.series.series_key
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("found", sa.Text, nullable=False),                 # JSON: the change points
    sa.Column("made_at", sa.Float, nullable=False),
)

# Schema 8 (docs/database.md, "Indexes the fleet's figures call for"): a series' values by
# point and metric in the order their runs were recorded (an alert's sparkline and page read
# one series, not every run's), runs by start time (the newest runs, `runs --since`), runs by
# commit (a commit's runs).
SERIES_BY_POINT = sa.Index("ix_series_point_metric", series.c.point_id, series.c.metric,
                           series.c.run_id).ddl_if(dialect="sqlite")
RUNS_BY_START = sa.Index("ix_runs_started", runs.c.started_at)
RUNS_BY_COMMIT = sa.Index("ix_runs_commit", runs.c.commit)
# Schema 9: runs by status and host (the runs not complete, which every history reads beside
# the series it selects, and this host's running runs, which opening a store checks).
RUNS_BY_STATUS = sa.Index("ix_runs_status", runs.c.status, runs.c.host)
# Schema 10, PostgreSQL only: runs by host (an alert's page and a history of one host: the
# host's run ids joined to its series' by hash, not each of every host's runs probed by its
# key). SQLite probes cheaply, and without statistics its planner takes this index for any
# query naming a host (a commit's first run on a host: 0.6 ms -> 24 ms).
# Schema 11, PostgreSQL only: that index and the series' by point carry what a history reads
# (INCLUDE): a history of one host is two index-only range scans, not 5,000 runs and 5,000
# series rows each on its own heap page (each run's rows lie together): at 10^8 samples
# its reads 0.48 s -> 0.10 s after a restart, for 1.1 GB of index beside 16 GB of store.
# SQLite keeps schema 8's index of a series by point: its pages are already under a second.
_LIGHT_RUN_COLUMNS = [c.name for c in runs.c if c.name not in ("host", "id", "spec", "environment")]
RUNS_BY_HOST = sa.Index("ix_runs_host_light", runs.c.host, runs.c.id,
                        postgresql_include=_LIGHT_RUN_COLUMNS).ddl_if(dialect="postgresql")
SERIES_VALUES_BY_POINT = sa.Index("ix_series_point_values", series.c.point_id, series.c.metric, series.c.run_id,
                                  postgresql_include=["unit", "failures", "ok_values"]).ddl_if(dialect="postgresql")


def run_ids_on(hosts: Iterable[str]) -> sa.Select[Any]:
    """The ids of the runs of ``hosts``, read from RUNS_BY_HOST alone (PostgreSQL's): a
    query of a series on one host filters its run ids by this (joined by hash or merge)
    rather than by the host of each of every host's run of the series, probed by key (0.4 s
    for 50,000 runs)."""
    mine = runs.alias("on_host")
    return sa.select(mine.c.id).where(mine.c.host.in_(sorted(hosts)))
