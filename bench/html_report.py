#!/usr/bin/env python3
"""How big and how fast are the HTML pictures?

1. compare --format html of 10 benchmarks x 3 sides x 1,000 samples: the file's size,
   the time to build the report (analysis) and to render it, and in a headless chromium
   (Debian's chromium + chromium-driver) the time until the charts of the first screen
   are drawn, then the time each other chart takes to draw when scrolled to (the page
   draws a chart as it comes near the viewport).
2. perflab serve over a store of 5,000 commits x 3 metrics (one run per commit, 5
   samples each, SQLite; --postgres URL or --start-postgres for PostgreSQL too): time
   per page over real HTTP (runs list, history of one metric, changes, one change's
   report), the first request and the best of --repeat.

Synthetic samples (seeded lognormal noise, a 5% step at commit 3,000) are written
through the Store API, as a recorder would. Run it as

    PYTHONPATH=src .venv/bin/python bench/html_report.py [--commits 5000] [--postgres URL | --start-postgres]
        [--dashboard-only]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from perflab.analysis.compare import Filters, compare_runs
from perflab.analysis.history import build_history, list_changes
from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.render.compare import render_comparison
from perflab.store import Store


def build_compare_store(db: str, benchmarks: int, sides: int, samples: int) -> list[str]:
    rng = np.random.default_rng(1)
    labels = [f"side{s}" for s in range(sides)]
    with Store(db, create=True) as store:
        for b in range(benchmarks):
            store.metrics.save(f"bench{b}", [MetricInfo("time", "s", Direction.LOWER)])
        for s, label in enumerate(labels):
            run_id = store.runs.create(label=label, host="box", request=RunRequest(),
                                       environment={"kernel": {"release": f"6.{s}"}})
            for b in range(benchmarks):
                point = Point(f"bench{b}", {})
                values = 0.01 * (1 + 0.02 * s) * rng.lognormal(0, 0.03, samples)
                for rep, value in enumerate(values):
                    store.samples.add(run_id, point, rep, [Measurement("time", float(value), "s")])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)
    return labels


def build_history_store(db: str, commits: int) -> None:
    rng = np.random.default_rng(2)
    point = Point("wis", {"test": "poll2"})
    metrics = [MetricInfo("ops", "ops/s", Direction.HIGHER), MetricInfo("time", "s", Direction.LOWER),
               MetricInfo("rss", "B", Direction.LOWER)]
    with Store(db, create=True) as store:
        store.metrics.save("wis", metrics)
        for i in range(commits):
            sha = f"{i:040x}"
            run_id = store.runs.create(label="nightly", host="box", request=RunRequest(), environment={}, commit=sha,
                                       commit_describe=f"v1-{i}")
            step = 1.05 if i >= int(commits * 0.6) else 1.0
            for rep in range(5):
                noise = rng.lognormal(0, 0.01, 3)
                store.samples.add(run_id, point, rep, [Measurement("ops", 1e6 / step * noise[0], "ops/s"),
                                                       Measurement("time", 0.01 * step * noise[1], "s"),
                                                       Measurement("rss", 1e8 * noise[2], "B")])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)


IN_VIEW = """return Array.from(document.querySelectorAll('div.plot')).filter(p => {
    const r = p.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; })"""


def time_in_chromium(url: str) -> tuple[float, float, int, int, list[float]]:
    """(seconds from navigation until the charts of the first screen are drawn in a new
    browser, the same when the page is opened again in it (plotly.js compiled and cached:
    what a reader opening reports sees), charts in that screen, charts in all, seconds to
    draw each of the others when scrolled to it): the page draws a chart when it comes near
    the viewport."""
    from browser import start_chromium
    driver = start_chromium()
    try:
        opened = []
        for _ in range(2):
            start = time.perf_counter()
            driver.get(url)
            while not driver.execute_script(IN_VIEW + ".every(p => p.data);"):
                time.sleep(0.005)
            opened.append(time.perf_counter() - start)
        first, again = opened
        shown = driver.execute_script(IN_VIEW + ".length;")
        plots = driver.find_elements("css selector", "div.plot")
        scrolled = []
        for plot in plots:
            if driver.execute_script("return !!arguments[0].data;", plot):
                continue
            start = time.perf_counter()
            driver.execute_script("arguments[0].scrollIntoView();", plot)
            while not driver.execute_script("return !!arguments[0].data;", plot):
                time.sleep(0.005)
            scrolled.append(time.perf_counter() - start)
        return first, again, shown, len(plots), scrolled
    finally:
        driver.quit()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_times(db: str, repeat: int, extra: tuple[str, ...] = ()) -> dict[str, tuple[float, float, float]]:
    """Per page over real HTTP: (the first request's seconds, the best of ``repeat``, the
    server's least CPU time for it): on a machine others load, the CPU time is what the
    page costs, the wall time what it costs there and then."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "perflab.cli.main", "--db", db, "serve", "--port", str(port)],
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/", timeout=60).read()
                break
            except OSError:
                time.sleep(0.1)
        out = {}
        for page in ("/", "/?page=50", "/history?metric=ops", "/history?metric=ops&format=text", "/changes",
                     *extra):
            times, cpu, failed = [], [], ""
            for _ in range(repeat):
                start, used = time.perf_counter(), cpu_seconds(process.pid)
                try:
                    body = urllib.request.urlopen(url + page, timeout=600).read()
                except urllib.error.HTTPError as error:  # a page this version lacks or fails: timed all the same
                    body, failed = error.read(), f", HTTP {error.code}"
                times.append(time.perf_counter() - start)
                cpu.append(cpu_seconds(process.pid) - used)
            out[f"{page} ({len(body) / 1e6:.2f} MB{failed})"] = (times[0], min(times), min(cpu))
        return out
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", type=int, default=10)
    parser.add_argument("--sides", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", metavar="URL", help="also time the dashboard on this (empty) database")
    parser.add_argument("--start-postgres", action="store_true",
                        help="also time the dashboard on a throwaway PostgreSQL server started on 127.0.0.1")
    parser.add_argument("--dashboard-only", action="store_true",
                        help="time the dashboard only (no compare report, no chromium)")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the servers this script started are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with contextlib.ExitStack() as stack:
        if args.start_postgres:
            from conftest import _new_pg_database, pg_server
            args.postgres = _new_pg_database(stack.enter_context(pg_server()))
        run(args)


def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="perflab-html-bench-"))
    if not args.dashboard_only:
        time_report(args, work)
    time_dashboard(args, work)
    print(f"(files under {work})", file=sys.stderr)


def time_report(args: argparse.Namespace, work: Path) -> None:
    db = str(work / "compare.db")
    labels = build_compare_store(db, args.benchmarks, args.sides, args.samples)
    with Store(db) as store:
        start = time.perf_counter()
        report = compare_runs(store, [store.runs.resolve(label) for label in labels])
        analysis = time.perf_counter() - start
    start = time.perf_counter()
    page = render_comparison(report, "html")
    render = time.perf_counter() - start
    path = work / "cmp.html"
    path.write_text(page)
    first, again, shown, plots, scrolled = time_in_chromium(path.as_uri())
    print(f"compare --format html, {args.benchmarks} benchmarks x {args.sides} sides x {args.samples} samples:")
    print(f"  file size          {path.stat().st_size / 1e6:.2f} MB (of it the head with plotly.js "
          f"{page.index('</head>') / 1e6:.2f} MB)")
    print(f"  analysis           {analysis:.2f} s (compare_runs)")
    print(f"  render             {render:.2f} s")
    print(f"  first screen drawn {first:.2f} s in a new headless chromium, {again:.2f} s opened again "
          f"(from navigation; {shown} of {plots} charts in view)")
    if scrolled:
        print(f"  scrolled to        each other chart drawn in {statistics.median(scrolled):.2f} s median, "
              f"{max(scrolled):.2f} s max ({len(scrolled)} charts, {sum(scrolled):.2f} s in all)")


def time_dashboard(args: argparse.Namespace, work: Path) -> None:
    for name, target in [("SQLite", str(work / "history.db"))] + ([("PostgreSQL", args.postgres)]
                                                                   if args.postgres else []):
        start = time.perf_counter()
        build_history_store(target, args.commits)
        print(f"dashboard over {args.commits} commits x 3 metrics ({name}; store built in "
              f"{time.perf_counter() - start:.0f} s), wall: first request / best of {args.repeat}; "
              "server CPU (best):")
        with Store(target) as store:
            listed = list_changes(build_history(store, filters=Filters.parse([], ["ops"]))).changes
        extra = (f"/changes/{listed[0].change.id}",) if listed else ()
        for page_name, (first, best, cpu) in serve_times(target, args.repeat, extra).items():
            print(f"  {page_name:45s} {first:.3f} s / {best:.3f} s; CPU {cpu:.2f} s")


if __name__ == "__main__":
    main()
