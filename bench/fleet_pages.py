#!/usr/bin/env python3
"""The dashboard's heavy pages of a fleet's store, timed warm, this perflab against another.

Times the front page, an alert page and the history page of one benchmark's metric (every
commit, every host) of an existing store (--db, as bench/fleet_generate.py makes it; without
--db a small one is generated under a temporary directory and `alerts --update` run on it).
Each perflab under test is a `perflab serve` of its own: this tree's, and with --against
LABEL=SRC=DB another source tree's (say `git archive` of an older commit) over its own copy of
the store (an older perflab refuses a newer schema). The servers are asked in turn, page by
page, --repeat rounds, so a load that comes and goes on a shared machine falls on all of
them; the first request of each is reported apart (a new server's), the median of the others
is the warm figure. Prints one JSON line: per page and perflab the seconds (and the server
process's CPU seconds: /proc/PID/stat's user and system time, which the shared machine's other
load does not inflate as it does the wall time) and bytes, the
ratio of each other perflab's warm median to this one's, and whether their pages were the
same bytes (the speed-up must not change what a page shows). The history page is timed twice:
as it opens, and with ?samples=all (every sample dot, however many: the page as it was before
the sample budget, so its bytes are comparable with a perflab from before it; the page as it
opens is not, when its samples are over the budget and it draws each commit's median and range).
A history or alert page asked again with nothing written is sent as made (web/page_cache.py):
the rows "made each time" ask with a parameter of their own each time, the page made as after a write.
The rows "of one host" ask for host00's series alone (?host=, which a perflab before it ignores:
their pages differ from such a perflab's).

With --browser, each history page is also drawn in headless chromium (the seconds until its
first screen's charts are drawn, and every chart's).

Usage: bench/fleet_pages.py [--db PATH|URL] [--against LABEL=SRC=DB ...] [--alert ID] [--repeat 7] [--browser]
       [--commits 60 --hosts 1 --benchmarks 3]   (the store generated without --db)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)
sys.path.insert(0, str(ROOT / "bench"))

from commit_excursions import positive  # noqa: E402
from fleet_scale import first_alert, get, serve, uncached  # noqa: E402
from html_report import cpu_seconds, time_in_chromium  # noqa: E402


def small_store(work: Path, args) -> str:
    """A fleet's store of the given size, with its alerts raised."""
    db = str(work / "fleet.db")
    subprocess.run([sys.executable, str(ROOT / "bench" / "fleet_generate.py"), "--db", db, "--repo", str(work / "repo"),
                    "--commits", str(args.commits), "--hosts", str(args.hosts), "--benchmarks", str(args.benchmarks)],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "perflab.cli.main", "--db", db, "alerts", "--update"], check=True,
                   stdout=subprocess.DEVNULL)
    return db


def timed(servers: dict[str, tuple[str, int]], path: str, repeat: int, made: bool = False) -> dict[str, object]:
    """``path`` asked of each server (url, pid) in turn, ``repeat`` + 1 rounds: each one's
    figures, the wall time and the server's CPU time (what a machine of the same CPU without
    the shared machine's other load would take, bar the waits for the disk). ``made``: each
    round asks with a parameter of its own, so that no page cache answers (a page made
    again, as after a write to the store)."""
    seconds: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    bodies: dict[str, int] = {}
    for round_ in range(repeat + 1):
        for name, (url, pid) in servers.items():
            used = cpu_seconds(pid)
            took, size = get(url + (uncached(path, round_) if made else path))
            seconds[name].append(took)
            cpu[name].append(cpu_seconds(pid) - used)
            bodies[name] = size
    this = statistics.median(seconds["this"][1:])
    return {name: {"first_s": round(s[0], 3), "warm_s": round(statistics.median(s[1:]), 3),
                   "first_cpu_s": round(cpu[name][0], 2), "warm_cpu_s": round(statistics.median(cpu[name][1:]), 2),
                   "bytes": bodies[name],
                   **({"ratio": round(statistics.median(s[1:]) / this, 2)} if name != "this" else {})}
            for name, s in seconds.items()}


def drawn(url: str) -> dict[str, float]:
    """Seconds a new headless chromium takes from asking for the page until the charts of its
    first screen are drawn, the same in that browser again, and to draw every chart (each
    scrolled to, as the page draws a chart near the viewport)."""
    first, again, _, _, scrolled = time_in_chromium(url)
    return {"first_screen_s": round(first, 3), "again_s": round(again, 3),
            "every_chart_s": round(again + sum(scrolled), 3)}


def same_pages(servers: dict[str, tuple[str, int]], path: str) -> bool:
    import urllib.request
    pages = set()
    for url, _ in servers.values():
        with urllib.request.urlopen(url + path, timeout=600) as response:
            pages.add(response.read())
    return len(pages) == 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db")
    parser.add_argument("--against", action="append", default=[], metavar="LABEL=SRC=DB")
    parser.add_argument("--alert", type=int)
    parser.add_argument("--repeat", type=positive, default=7)
    parser.add_argument("--commits", type=positive, default=60)
    parser.add_argument("--hosts", type=positive, default=1)
    parser.add_argument("--benchmarks", type=positive, default=3)
    parser.add_argument("--browser", action="store_true",
                        help="also draw this perflab's history pages in headless chromium (tests/browser.py)")
    args = parser.parse_args()
    if any(spec.count("=") < 2 for spec in args.against):
        parser.error("--against wants LABEL=SRC=DB")
    work = Path(tempfile.mkdtemp(prefix="perflab-pages-"))
    processes = []
    try:
        db = args.db or small_store(work, args)
        trees = {"this": (str(ROOT / "src"), db)}
        for spec in args.against:
            label, src, other = spec.split("=", 2)
            trees[label] = (src, other)
        servers: dict[str, tuple[str, int]] = {}
        for label, (src, store) in trees.items():
            try:
                process, url = serve(store, env={**os.environ, "PYTHONPATH": src})
            except RuntimeError as error:
                parser.error(f"{label}: {error}")
            processes.append(process)
            servers[label] = (url, process.pid)
        alert = args.alert or first_alert(db)
        out = {}
        history = "/history?benchmark=bench000&metric=m0"
        for name, path, made in (("front page", "/", False), (f"alert page ({alert})", f"/alerts/{alert}", False),
                                 (f"alert page ({alert}), made each time", f"/alerts/{alert}", True),
                                 ("history page", history, False),
                                 ("history page, made each time", history, True),
                                 ("history page of one host", history + "&host=host00", False),
                                 ("history page of one host, made each time", history + "&host=host00", True),
                                 ("history page, every sample", history + "&samples=all", False)):
            out[name] = {**timed(servers, path, args.repeat, made), "same_page": same_pages(servers, path)}
            if args.browser and path.startswith("/history"):
                out[name]["chromium"] = drawn(servers["this"][0] + path)
            print(f"  {name}: {json.dumps(out[name])}", file=sys.stderr, flush=True)
        print(json.dumps(out))
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
