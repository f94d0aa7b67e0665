#!/usr/bin/env python3
"""A fleet's store, timed: generate it (bench/fleet_generate.py), then time the dashboard's
front page, an alert page and a history page of every commit, and `perflab alerts --update`
over every series, `perflab changes` and `perflab runs --since 1d`, cold and warm.

For each backend (a throwaway PostgreSQL server on 127.0.0.1, or an SQLite file under
--dir): generate, then per measurement a cold time and the median of --repeat warm ones.
Cold: a new perflab process (a new `perflab serve` for a page) and, on PostgreSQL, the
server restarted first (its shared buffers empty). The OS page cache is not dropped (a
shared machine: that would slow everyone), so a cold read hits memory, not the disk.
With --from-disk (root) the OS page cache is dropped too before each cold measurement: the
cold read then comes from the disk, as after a reboot or for pages no one has read lately.
The PostgreSQL server runs with fsync off (-F), as the tests' does, and shared_buffers at a
quarter of the memory, as a team's server would (`deployed_settings`).

With --keep (and --dir), the stores stay in DIR (PostgreSQL's data in DIR/pg, stopped) with
the generator's counts beside them, and a later run with the same --dir times them again
without generating (a 10^8-sample store takes most of an hour to make).

Usage: bench/fleet_scale.py [--backends postgresql,sqlite] [--commits 5000] [--hosts 4]
       [--benchmarks 20] [--repetitions 5] [--repeat 3] [--dir DIR [--keep [--pages-only]]]
       [--from-disk]
Prints one JSON line per backend: the generator's counts and sizes, then the timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)
sys.path.insert(0, str(ROOT / "tests"))   # conftest.PostgresServer: the tests' throwaway server
PERFLAB = [sys.executable, "-m", "perflab.cli.main"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def perflab(db: str, *args: str) -> float:
    """Seconds one `perflab ARGS` takes (it must succeed)."""
    started = time.monotonic()
    subprocess.run([*PERFLAB, "--db", db, *args], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.monotonic() - started


def get(url: str) -> tuple[float, int]:
    """Seconds a GET of ``url`` takes, and the page's bytes (it must answer 200)."""
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read()
    return time.monotonic() - started, len(body)


def uncached(path: str, i: int) -> str:
    """``path`` with a parameter of its own (the i-th): no page cache of the dashboard answers it."""
    return f"{path}{'&' if '?' in path else '?'}round={i}"


def serve(db: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """A new `perflab serve` over ``db`` (in ``env``: another tree's on PYTHONPATH), answering
    (probed on a path that opens no store)."""
    port = free_port()
    process = subprocess.Popen([*PERFLAB, "--db", db, "serve", "--port", str(port)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/no-such-page", timeout=5)
        except urllib.error.HTTPError:
            return process, url   # it answers (404)
        except (urllib.error.URLError, ConnectionError):
            if process.poll() is not None:
                raise RuntimeError(f"perflab --db {db} serve exited ({process.returncode}): run it to see why") \
                    from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("perflab serve did not start")


def drop_page_cache() -> None:
    """Empty the OS page cache (root): the next read of a store comes from the disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def cold_warm(measure: Callable[[], float], repeat: int, restart: Callable[[], None]) -> dict[str, float]:
    restart()
    cold = measure()
    return {"cold_s": round(cold, 3), "warm_s": round(statistics.median(measure() for _ in range(repeat)), 3)}


def page_times(db: str, path: str, repeat: int, restart: Callable[[], None]) -> dict[str, float]:
    """A page's cold time (a new server, the database restarted), its warm median, and for
    a page the dashboard keeps while nothing is written (web/page_cache.py) the median of it
    made again (asked with a parameter of its own each time, as after a write)."""
    restart()
    process, url = serve(db)
    try:
        cold, size = get(url + path)
        warm = statistics.median(get(url + path)[0] for _ in range(repeat))
        made = (statistics.median(get(url + uncached(path, i))[0] for i in range(repeat))
                if path.startswith(("/history", "/alerts/")) else None)
    finally:
        process.terminate()
        process.wait(timeout=60)
    return {"cold_s": round(cold, 3), "warm_s": round(warm, 3), **({"made_s": round(made, 3)} if made else {}),
            "bytes": size}


def first_alert(db: str) -> int:
    from perflab.store import Store
    with Store(db) as store:
        found = store.alerts.all(state="untriaged") or store.alerts.all()
    if not found:
        raise RuntimeError("alerts --update raised no alert: nothing to time on an alert page")
    return found[0].id


def time_store(db: str, args, restart: Callable[[], None]) -> dict[str, object]:
    """Each measurement, printed to stderr as it is made (a long run shows its progress)."""
    timings: dict[str, object] = {}

    def note(name: str, measured: dict[str, float]) -> None:
        timings[name] = measured
        print(f"  {name}: {json.dumps(measured)}", file=sys.stderr, flush=True)

    if not args.pages_only:
        note("alerts --update", cold_warm(lambda: perflab(db, "alerts", "--update"), 1, restart))
    note("front page", page_times(db, "/", args.repeat, restart))
    note("alert page", page_times(db, f"/alerts/{first_alert(db)}", args.repeat, restart))
    note(f"history page ({args.commits} commits x {args.hosts} hosts)",
         page_times(db, "/history?benchmark=bench000&metric=m0", args.repeat, restart))
    note(f"history page ({args.commits} commits, one host)",
         page_times(db, "/history?benchmark=bench000&metric=m0&host=host00", args.repeat, restart))
    if not args.pages_only:
        note("changes", cold_warm(lambda: perflab(db, "changes"), args.repeat, restart))
        note("runs --since 1d", cold_warm(lambda: perflab(db, "runs", "--since", "1d"), args.repeat, restart))
    return timings


def generate(db: str, repo: Path, args, record: Path) -> dict[str, object]:
    """The generator's counts: read from ``record`` when --keep kept a store made before."""
    if args.keep and record.exists():
        made = json.loads(record.read_text())
        print(f"  kept from an earlier run: {json.dumps(made)}", file=sys.stderr, flush=True)
        return made
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet_generate.py"), "--db", db, "--repo", str(repo),
                          "--commits", str(args.commits), "--hosts", str(args.hosts),
                          "--benchmarks", str(args.benchmarks), "--repetitions", str(args.repetitions)],
                         check=True, stdout=subprocess.PIPE, text=True)
    made = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  generated: {json.dumps(made)}", file=sys.stderr, flush=True)
    if args.keep:
        record.write_text(json.dumps(made))
    return made


def deployed_settings() -> dict[str, str]:
    """The PostgreSQL parameters a team's server of a fleet's store would have beside the
    defaults: shared_buffers at a quarter of the machine's memory, PostgreSQL's documented
    starting point (its default of 128 MB holds a 10^8-sample store's indexes of one page
    view, not of the next)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"shared_buffers": f"{memory // 4 // 2**20}MB"}


def run_backend(backend: str, args, work: Path) -> dict[str, object]:
    def from_disk() -> None:
        if args.from_disk:
            drop_page_cache()
    if backend == "postgresql":
        from conftest import PostgresServer
        server = PostgresServer(kept=work / "pg" if args.keep else None, settings=deployed_settings())
        try:
            def restart() -> None:
                server.stop()
                from_disk()
                server.start()
            db = server.url + "/postgres"
            made = generate(db, work / "repo-pg", args, work / "generated-pg.json")
            return {**made, "timings": time_store(db, args, restart)}
        finally:
            server.close()
    db = str(work / "fleet.db")
    made = generate(db, work / "repo-sqlite", args, work / "generated-sqlite.json")
    return {**made, "timings": time_store(db, args, from_disk)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--benchmarks", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=5, help="samples of each metric in a run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where the SQLite file and the repositories go (default: a "
                        "temporary directory, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the stores in --dir, and time those kept "
                        "there by an earlier run instead of generating them")
    parser.add_argument("--pages-only", action="store_true", help="time the dashboard's pages alone (a kept "
                        "store whose alerts an earlier run raised: not `alerts --update`, `changes`, `runs`)")
    parser.add_argument("--from-disk", action="store_true", help="drop the OS page cache as well before each "
                        "cold measurement (root; slows every process of the machine for a while)")
    args = parser.parse_args()
    if args.from_disk and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        parser.error("--from-disk drops the OS page cache: run it as root")
    if args.pages_only and not args.keep:
        parser.error("--pages-only times a store kept by an earlier run (--keep --dir DIR)")
    if args.keep and args.dir is None:
        parser.error("--keep needs --dir: where the stores are kept")
    work = args.dir or Path(tempfile.mkdtemp(prefix="perflab-fleet-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for backend in args.backends.split(","):
            print(json.dumps(run_backend(backend, args, work)), flush=True)
    except RuntimeError as error:   # a server that cannot start (conftest.PostgresServer says why)
        sys.exit(f"fleet_scale: {error}")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
