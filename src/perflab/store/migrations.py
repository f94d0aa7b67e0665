"""The steps that upgrade a perflab database of an older schema, one per version.

A new schema version adds its step here (a function of the connection, under the version
it makes) and bumps ``schema.SCHEMA_VERSION``; a step creates only what is missing, so a
store another perflab is upgrading at the same time is not harmed.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from perflab.store.schema import (
    SCHEMA_VERSION,
    job_runs,
    jobs,
    meta,
    profile_symbols,
    profile_traces,
    watched_branches,
    workers,
)


def _add_profile_tables(conn: sa.Connection) -> None:
    """Schema 2: the profile tables (a schema-1 database has none)."""
    profile_symbols.create(conn, checkfirst=True)
    profile_traces.create(conn, checkfirst=True)


def _add_alert_tables(conn: sa.Connection) -> None:
    """Schema 3: the alert tables (regression alerts and their triage)."""
    from perflab.store.schema import alert_events, alert_summaries, alerts  # this step's block of the schema
    for table in (alert_summaries, alerts, alert_events):
        table.create(conn, checkfirst=True)


def _add_fleet_tables(conn: sa.Connection) -> None:
    """Schema 4: the fleet's jobs, job_runs, workers and watched_branches."""
    for table in (jobs, job_runs, workers, watched_branches):
        table.create(conn, checkfirst=True)


def _add_host_priors(conn: sa.Connection) -> None:
    """Schema 5: the host model of run-to-run variance."""
    from perflab.store.schema import host_priors
    host_priors.create(conn, checkfirst=True)


def _add_alert_ranges(conn: sa.Connection) -> None:
    """Schema 6: each alert's own commit range, filled from its summary's."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("alerts")}  # made by step 3 of this schema
    for column in ("last_good", "first_bad"):
        if column in have:
            continue
        conn.execute(sa.text(f"ALTER TABLE alerts ADD COLUMN {column} TEXT"))
        conn.execute(sa.text(f"UPDATE alerts SET {column} = (SELECT s.{column} FROM alert_summaries s "
                             "WHERE s.id = alerts.summary_id)"))


def _add_outbox(conn: sa.Connection) -> None:
    """Schema 7: the notifications' outbox and their delivery attempts."""
    from perflab.store.schema import outbox, outbox_attempts
    for table in (outbox, outbox_attempts):
        table.create(conn, checkfirst=True)


def _add_alert_owners_and_indexes(conn: sa.Connection) -> None:
    """Schema 8: an alert's assignee and bug link; the indexes of the fleet's queries."""
    from perflab.store.schema import RUNS_BY_COMMIT, RUNS_BY_START, SERIES_BY_POINT
    have = {c["name"] for c in sa.inspect(conn).get_columns("alerts")}
    for column in ("assignee", "bug_url"):
        if column not in have:
            conn.exec_driver_sql(f"ALTER TABLE alerts ADD COLUMN {column} TEXT")
    for index in (SERIES_BY_POINT, RUNS_BY_START, RUNS_BY_COMMIT):
        index.create(conn, checkfirst=True)


def _add_runs_by_status(conn: sa.Connection) -> None:
    """Schema 9: the index of runs by status and host."""
    from perflab.store.schema import RUNS_BY_STATUS
    RUNS_BY_STATUS.create(conn, checkfirst=True)


def _add_runs_by_host(conn: sa.Connection) -> None:
    """Schema 10: on PostgreSQL, the index of runs by host, and its planner told of it
    (ANALYZE: else it goes on probing every run of a series by its key until autovacuum looks)."""
    from perflab.store.schema import RUNS_BY_HOST
    if conn.dialect.name == "postgresql":
        RUNS_BY_HOST.create(conn, checkfirst=True)
        conn.exec_driver_sql("ANALYZE runs")


def _add_covering_indexes(conn: sa.Connection) -> None:
    """Schema 11: on PostgreSQL, the indexes of runs by host and of series by point with the
    columns a history reads (INCLUDE), in place of schema 8's and 10's (at 10^8 samples:
    10 s, its writes waiting)."""
    from perflab.store.schema import RUNS_BY_HOST, SERIES_VALUES_BY_POINT
    if conn.dialect.name == "postgresql":
        for index in (RUNS_BY_HOST, SERIES_VALUES_BY_POINT):
            index.create(conn, checkfirst=True)
        for replaced in ("ix_runs_host", "ix_series_point_metric"):
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {replaced}")
        conn.exec_driver_sql("ANALYZE runs, series")


def _add_detections(conn: sa.Connection) -> None:
    """Schema 12: the change points kept by series."""
    from perflab.store.schema import detections
    detections.create(conn, checkfirst=True)


# version -> function(connection) upgrading from version-1
MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {
    2: _add_profile_tables, 3: _add_alert_tables, 4: _add_fleet_tables, 5: _add_host_priors,
    6: _add_alert_ranges, 7: _add_outbox, 8: _add_alert_owners_and_indexes, 9: _add_runs_by_status,
    10: _add_runs_by_host, 11: _add_covering_indexes, 12: _add_detections}


def migrate(conn: sa.Connection, version: int) -> None:
    """Upgrade a database of schema ``version`` to this perflab's, step by step."""
    for step in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[step](conn)
    conn.execute(meta.update().where(meta.c.key == "schema_version")
                 .values(value=str(SCHEMA_VERSION)))
