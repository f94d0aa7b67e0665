#!/usr/bin/env python3
"""Fill a perflab store (PostgreSQL or SQLite) with a fleet's recordings, by the bulk paths.

The fleet modelled (docs/fleet.md, "At a fleet's scale"): the robot measures every commit of
one tree on HOSTS machines; one run is one benchmark on one host at one commit (the robot's
and lkp's unit: a job runs a suite, a run per benchmark); each run records METRICS metrics
x REPETITIONS repetitions. Defaults are the timing size on this 2-CPU machine:
5,000 commits x 4 hosts x 20 benchmarks = 400,000 runs, x 5 metrics x 5 repetitions =
10^7 samples, and 400 series of 5,000 commits each. A step of 5-20% (either way) is put in
one benchmark (every host, every metric) every STEP_EVERY commits, so `alerts --update`
finds something to alert on.

Rows go in as perflab writes them (runs, points, samples, the sealed series blobs, metric
metadata), plus a repository of COMMITS commits made by `git fast-import` (subjects and
authors for the dashboard), one job per (commit, host) in the job book and HOSTS workers.
PostgreSQL: COPY FROM STDIN (psycopg 3's write_row), the secondary indexes dropped during the load and
made again after; SQLite: executemany in one transaction per chunk. Prints the row counts,
the database's size on disk and the rate.

Usage: bench/fleet_generate.py --db URL|PATH --repo DIR [--commits 5000] [--hosts 4]
       [--benchmarks 20] [--metrics 5] [--repetitions 5]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)

import numpy as np  # noqa: E402

COMMITS_PER_DAY = 20
STEP_EVERY = 100          # commits between two steps (in some benchmark)
CHUNK_COMMITS = 100       # commits generated and written at once
T0 = time.time() - 0      # the newest commit is "now": the store ends today


def make_repo(repo: Path, commits: int) -> list[str]:
    """A repository of ``commits`` commits on main (git fast-import: seconds for thousands)."""
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = io.StringIO()
    start = int(T0) - commits * 86400 // COMMITS_PER_DAY
    authors = ["Ada Lovelace <ada@example.org>", "Linus Torvalds <torvalds@example.org>",
               "Grace Hopper <grace@example.org>", "Ken Thompson <ken@example.org>"]
    for i in range(commits):
        message = f"subsystem {i % 37}: change {i}\n"
        stream.write(f"commit refs/heads/main\nmark :{i + 1}\n"
                     f"committer {authors[i % len(authors)]} {start + i * 86400 // COMMITS_PER_DAY} +0000\n"
                     f"data {len(message)}\n{message}")
        if i:
            stream.write(f"from :{i}\n")
        stream.write(f"M 644 inline file\ndata {len(str(i))}\n{i}\n\n")
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=stream.getvalue().encode(), check=True)
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "main"], check=True,
                         capture_output=True, text=True).stdout.split()
    return out


def levels(args, rng: np.random.Generator) -> tuple[np.ndarray, list[tuple[int, int, float]]]:
    """Each (host, benchmark, metric)'s base level, and the steps: (commit, benchmark, factor)."""
    base = rng.lognormal(mean=2.0, sigma=1.5, size=(args.hosts, args.benchmarks, args.metrics))
    steps = [(c, int(rng.integers(args.benchmarks)), float(rng.choice([-1, 1]) * rng.uniform(0.05, 0.2)))
             for c in range(STEP_EVERY // 2, args.commits, STEP_EVERY)]
    return base, steps


class Writer:
    """Bulk rows into the store's tables: COPY on PostgreSQL, executemany on SQLite."""

    def __init__(self, target: str):
        from perflab.store import Store
        self.store = Store(target, create=True)
        self.conn = self.store.conn
        self.postgres = self.store.dialect == "postgresql"

    def rows(self, table: str, columns: list[str], rows: list[tuple]) -> None:
        if not rows:
            return
        raw = self.conn.connection.driver_connection
        names = ", ".join(f'"{c}"' for c in columns)
        if self.postgres:   # psycopg's write_row adapts each value in C (its binary build)
            with raw.cursor() as cur, cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            raw.executemany(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})", rows)

    def commit(self) -> None:
        self.conn.connection.driver_connection.commit()


SECONDARY = {"samples": ["ix_samples_run_point_metric"], "series": ["ix_series_point_metric", "ix_series_point_values"],
             "runs": ["ix_runs_label", "ix_runs_started", "ix_runs_commit", "ix_runs_status", "ix_runs_host_light"]}


def drop_secondary(writer: Writer) -> None:
    for names in SECONDARY.values():
        for name in names:
            writer.conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
    writer.conn.commit()


def make_secondary(writer: Writer) -> float:
    """The dropped indexes again, and fresh planner statistics; the seconds it took."""
    from perflab.store import schema
    started = time.monotonic()
    for table, names in SECONDARY.items():
        for index in getattr(schema, table).indexes:
            if index.name in names:
                index.create(writer.conn, checkfirst=True)
    writer.conn.exec_driver_sql("ANALYZE")
    if writer.postgres:
        writer.conn.exec_driver_sql("SELECT setval('runs_id_seq', (SELECT max(id) FROM runs))")
    writer.conn.commit()
    if writer.postgres:   # the visibility map, as autovacuum leaves a live store's: the reads of
        # one host's runs and of a series' values (schema 11's covering indexes) are index-only
        # scans, not 10^5 heap fetches
        driver = writer.conn.connection.driver_connection
        driver.autocommit = True
        driver.execute("VACUUM runs, series")
        driver.autocommit = False
    return time.monotonic() - started


def setup(writer: Writer, args) -> tuple[dict[int, int], list[str]]:
    """Metric metadata and the benchmarks' points: benchmark index -> point id; metric names."""
    from perflab.model.records import Direction, MetricInfo, Point
    names = [f"m{m}" for m in range(args.metrics)]
    point_ids = {}
    for b in range(args.benchmarks):
        bench = f"bench{b:03d}"
        writer.store.metrics.save(bench, [MetricInfo(n, "s" if m % 2 == 0 else "ops/s",
                                                     Direction.LOWER if m % 2 == 0 else Direction.HIGHER)
                                          for m, n in enumerate(names)])
        point_ids[b] = writer.store.samples.point_id(Point(bench, {"size": 64}))
    return point_ids, names


def chunk_rows(args, shas: list[str], c0: int, c1: int, base: np.ndarray, steps, rng, point_ids,
               names, repo: str, first_id: int) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The runs, samples and series rows of commits c0..c1 (run ids from ``first_id``)."""
    from perflab.model.run_request import RunRequest
    spec = json.dumps(RunRequest().to_json())
    shape = (c1 - c0, args.hosts, args.benchmarks, args.metrics, args.repetitions)
    factor = np.ones((c1 - c0, args.benchmarks))
    for at, bench, size in steps:
        factor[max(0, at - c0):, bench] *= 1 + size if at < c1 else 1
    noise = 1 + 0.02 * rng.standard_normal(shape)
    values = base[None, :, :, :, None] * factor[:, None, :, None, None] * noise
    runs, samples, series = [], [], []
    run_id = first_id
    units = ["s" if m % 2 == 0 else "ops/s" for m in range(args.metrics)]
    for ci in range(c1 - c0):
        c = c0 + ci
        at = T0 - (args.commits - c) * 86400 / COMMITS_PER_DAY
        for h in range(args.hosts):
            host = f"host{h:02d}"
            for b in range(args.benchmarks):
                started = at + h * 7 + b * 3
                runs.append((run_id, "nightly", shas[c], shas[c][:12], repo, host, started, started + 2.5,
                             "complete", None, spec, json.dumps({"hostname": host})))
                for m in range(args.metrics):
                    v = values[ci, h, b, m]
                    series.append((run_id, point_ids[b], names[m], units[m], 0, v.astype("<f8").tobytes()))
                    samples.extend((run_id, point_ids[b], r, names[m], float(v[r]), units[m], "ok", "",
                                    started + 0.1 * r) for r in range(args.repetitions))
                run_id += 1
    return runs, samples, series


RUN_COLUMNS = ["id", "label", "commit", "commit_describe", "repo", "host", "started_at", "finished_at", "status",
               "pid", "spec", "environment"]
SAMPLE_COLUMNS = ["run_id", "point_id", "repetition", "metric", "value", "unit", "status", "note", "measured_at"]
SERIES_COLUMNS = ["run_id", "point_id", "metric", "unit", "failures", "ok_values"]


def fleet_book(writer: Writer, args, shas: list[str]) -> None:
    """One done job per (commit, host), a few queued and failed ones, and the workers."""
    now = time.time()
    jobs = []
    for c, sha in enumerate(shas):
        at = T0 - (args.commits - c) * 86400 / COMMITS_PER_DAY
        for h in range(args.hosts):
            jobs.append(("build", f"host.host{h:02d}", json.dumps({"commit": sha}), "done", at - 60, at, at + 300,
                         f"host{h:02d}", f"host{h:02d}:n:1", False, None, None))
    for i in range(3):
        jobs.append(("build", "host.host00", json.dumps({"commit": shas[-1]}), "queued", now - 600 * (i + 1),
                     None, None, None, None, False, None, None))
    jobs.append(("build", "host.host01", json.dumps({"commit": shas[-1]}), "failed", now - 7200, now - 7100,
                 now - 7000, "host01", "host01:n:1", False, "make failed (exit 2)", None))
    writer.rows("jobs", ["kind", "queue", "request", "state", "submitted_at", "started_at", "finished_at", "host",
                         "worker", "cancel_requested", "error", "output"], jobs)
    workers = [(f"host{h:02d}:n:1", f"host{h:02d}", "fleet", 1, "n", now - 86400, now - 5 * h, 30.0, None, "{}")
               for h in range(args.hosts)]
    writer.rows("workers", ["name", "host", "machine_class", "pid", "nodename", "started_at", "heartbeat_at",
                            "heartbeat_s", "stopped_at", "environment"], workers)
    writer.commit()


def size_on_disk(writer: Writer, target: str) -> int:
    if writer.postgres:
        return int(writer.conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar() or 0)
    return sum(p.stat().st_size for p in Path(target).parent.glob(Path(target).name + "*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--repo", required=True, type=Path, help="where to make the repository")
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--benchmarks", type=int, default=20)
    parser.add_argument("--metrics", type=int, default=5)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.monotonic()
    rng = np.random.default_rng(args.seed)
    shas = make_repo(args.repo, args.commits)
    writer = Writer(args.db)
    point_ids, names = setup(writer, args)
    base, steps = levels(args, rng)
    drop_secondary(writer)
    counts = {"runs": 0, "samples": 0, "series": 0}
    first_id = 1 + int(writer.conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM runs").scalar() or 0)
    writer.conn.commit()
    for c0 in range(0, args.commits, CHUNK_COMMITS):
        c1 = min(args.commits, c0 + CHUNK_COMMITS)
        runs, samples, series = chunk_rows(args, shas, c0, c1, base, steps, rng, point_ids, names,
                                           str(args.repo.resolve()), first_id + counts["runs"])
        writer.rows("runs", RUN_COLUMNS, runs)
        writer.rows("samples", SAMPLE_COLUMNS, samples)
        writer.rows("series", SERIES_COLUMNS, series)
        writer.commit()
        for name, rows in (("runs", runs), ("samples", samples), ("series", series)):
            counts[name] += len(rows)
        print(f"  {c1}/{args.commits} commits, {counts['samples']:,} samples, "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    loaded = time.monotonic() - started
    indexing = make_secondary(writer)
    fleet_book(writer, args, shas)
    total = time.monotonic() - started
    print(json.dumps({"db": "postgresql" if writer.postgres else "sqlite", **counts,
                      "series_of_commits": args.hosts * args.benchmarks * args.metrics, "commits": args.commits,
                      "steps": len(steps), "bytes": size_on_disk(writer, args.db),
                      "load_s": round(loaded, 1), "index_s": round(indexing, 1), "total_s": round(total, 1),
                      "samples_per_s": round(counts["samples"] / total)}))
    writer.store.close()


if __name__ == "__main__":
    main()
