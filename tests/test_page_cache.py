"""The dashboard's history page is made once for the store's data as it is (web/page_cache.py,
store/data_version.py): asked again with nothing written, it is sent as made (X-Perflab-Cache:
hit); a write by another process, or a running run whose perflab died, has it made again
with what changed. A real `perflab serve` over SQLite and over a PostgreSQL server of its own
(a shared server's other databases, written by other tests, move its snapshot too)."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from perflab.model.records import Measurement, Point, RunStatus, SampleStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store, this_host

from conftest import _new_pg_database, new_alert, serving
from test_history import long_history

PAGE = "/history?metric=ops"


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "perflab.db")
        return
    from conftest import PostgresServer, require_postgres
    require_postgres()
    server = PostgresServer()
    try:
        yield _new_pg_database(server.url)
    finally:
        server.close()


def get(url: str) -> tuple[str, str]:
    """(X-Perflab-Cache, body) of a 200 page."""
    with urllib.request.urlopen(url, timeout=120) as response:
        assert response.status == 200
        return response.headers["X-Perflab-Cache"], response.read().decode()


def add_run(db: str, sha: str, repo: str, status: RunStatus, pid: int | None = None) -> None:
    """One 'wis' run of ops at ``sha``, written by this process (another connection than the server's)."""
    with Store(db) as store:
        run_id = store.runs.create(label="nightly", host=this_host(), request=RunRequest(), environment={},
                                   commit=sha, commit_describe=sha[:7], repo=repo)
        for rep in range(3):
            store.samples.add(run_id, Point("wis", {"test": "poll2", "mode": "thread"}), rep,
                              [Measurement("ops", 250.0, "ops/s", SampleStatus.OK)])
        if status is RunStatus.COMPLETE:
            store.series.seal(run_id)
            store.runs.set_status(run_id, status)
        elif pid is not None:   # a running run owned by ``pid`` on this host
            from perflab.store.schema import runs
            store.runs.db.conn.execute(runs.update().where(runs.c.id == run_id).values(pid=pid))
            store.runs.db.conn.commit()


def test_a_history_page_is_made_again_only_when_the_data_it_shows_may_have_changed(db, tmp_path):
    _, repo, shas = long_history(tmp_path, commits=24, step_at=15, db=db)
    with serving(db) as (url, _, _):
        first = get(url + PAGE)
        assert first[0] == "miss"
        assert get(url + PAGE) == ("hit", first[1])        # nothing written: the page as made
        # another process measures a commit again: the page is made again, with its run
        add_run(db, shas[5], str(repo), RunStatus.COMPLETE)
        again = get(url + PAGE)
        assert again[0] == "miss" and again[1] != first[1]
        assert get(url + PAGE) == ("hit", again[1])
        # a run recorded running is left out while its perflab lives; when it dies, the run
        # reads as interrupted with no write to say so: the page is made again
        owner = subprocess.Popen(["sleep", "600"])
        try:
            add_run(db, shas[7], str(repo), RunStatus.RUNNING, pid=owner.pid)
            running = get(url + PAGE)
            assert running[0] == "miss" and get(url + PAGE) == ("hit", running[1])
        finally:
            owner.kill()
            owner.wait()
        assert get(url + PAGE)[0] == "miss"
        assert get(url + PAGE + "&format=text")[0] == "miss"   # another page: made on its own
        assert get(url + PAGE + "&format=text")[0] == "hit"


def test_a_long_lived_reader_sees_other_processes_commits_after_this_process_opens_the_store(tmp_path):
    """Opening a Store read the file's header with a file object of its own; closing it dropped
    the POSIX locks of this process's other SQLite connections on the file, and their reader
    stopped seeing commits made elsewhere (the page cache then sent a page of old data)."""
    from perflab.store.data_version import DataVersion
    db = str(tmp_path / "perflab.db")
    Store(db, create=True).close()
    versions = DataVersion(db)
    seen = [versions.now()]
    for label in ("one", "two", "three"):
        Store(db).close()                    # this process opens the store again, as every page does
        subprocess.run([sys.executable, "-c", "import sys; from perflab.store import Store; "
                        "from perflab.model.run_request import RunRequest\n"
                        "with Store(sys.argv[1]) as s: s.runs.create(label=sys.argv[2], host='h', "
                        "request=RunRequest(), environment={})", db, label], check=True)
        seen.append(versions.now())
    versions.close()
    assert None not in seen and len(set(seen)) == 4, seen


def test_an_alert_page_is_kept_until_its_triage_is_written(tmp_path):
    """The alert page is kept like the history page; the triage a person posts (a write through
    the dashboard itself) has it made again with the new state."""
    import urllib.parse
    db, _, _ = long_history(tmp_path, commits=24, step_at=15)
    with Store(db) as store:
        alert = new_alert(store, host="box", benchmark="wis", metric="ops", unit="ops/s", direction="higher",
                          before=100.0, after=90.0, change_pct=-10.0, oriented_pct=-10.0)
    with serving(db, "--token", "sesame-sesame") as (url, _, _):
        first = get(f"{url}/alerts/{alert}")
        assert first[0] == "miss" and get(f"{url}/alerts/{alert}") == ("hit", first[1])
        form = urllib.parse.urlencode({"action": "ack", "who": "ann", "token": "sesame-sesame"}).encode()
        # the POST answers with a redirect to the alert's page: that page is made again
        with urllib.request.urlopen(urllib.request.Request(f"{url}/alerts/{alert}", data=form), timeout=60) as answer:
            after = answer.headers["X-Perflab-Cache"], answer.read().decode()
        assert after[0] == "miss" and after[1] != first[1] and "acknowledged" in after[1]
        assert get(f"{url}/alerts/{alert}") == ("hit", after[1])
