"""Change points kept by series (schema 12's detections): the robot's pass keeps what it
found; a history whose values are those very values takes them instead of searching, and
searches again where they moved or where a row does not read; on SQLite and PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa

from test_history_hosts import OTHER, with_other_host

from conftest import run_cli


class Searches(list):
    """The detector's searches in this process (the detector itself runs), counted from an
    empty in-memory cache, as in a new dashboard or CLI process; ``forget`` starts again."""

    def __init__(self, monkeypatch):
        super().__init__()
        self.monkeypatch = monkeypatch

    def forget(self) -> None:
        from perflab.analysis import series
        self.clear()
        self.monkeypatch.setattr(series, "_DETECTED", series._DetectionCache())


@pytest.fixture
def searches(monkeypatch) -> Searches:
    from perflab.stats import changepoints
    counted = Searches(monkeypatch)
    counted.forget()
    search = changepoints.detect

    def counting(values, **options):
        counted.append(len(values))
        return search(values, **options)

    monkeypatch.setattr(changepoints, "detect", counting)
    return counted


def _history(db: str):
    from perflab.analysis.history import build_history
    from perflab.store import Store
    with Store(db) as store:
        return build_history(store)


def _changes(history) -> list[tuple]:
    return [(c.id, c.index, c.change_pct, c.p_value, c.parts) for s in history.series for c in s.changes]


def _kept(db: str) -> dict[str, str]:
    from perflab.store import Store
    from perflab.store.schema import detections
    with Store(db) as store:
        return dict(store.conn.execute(sa.select(detections.c.series_key, detections.c.digest)).all())


def test_a_history_takes_what_the_robots_pass_found_on_the_same_values(db_target, tmp_path, searches):
    db, _ = with_other_host(tmp_path, db_target)
    searched = _changes(_history(db))
    assert len(searches) == 2 and _kept(db) == {}, "a reader keeps nothing"
    run_cli("alerts", "--update", db=db, check=True)
    assert len(_kept(db)) == 2   # one row a series: the two hosts' ops
    searches.forget()
    taken = _history(db)
    assert searches == [] and _changes(taken) == searched and any(searched)


def test_a_series_whose_values_moved_is_searched_again_and_kept_anew(db_target, tmp_path, searches):
    from perflab.model.records import Measurement, Point, RunStatus
    from perflab.model.run_request import RunRequest
    from perflab.store import Store
    db, shas = with_other_host(tmp_path, db_target)
    run_cli("alerts", "--update", db=db, check=True)
    before = _kept(db)
    with Store(db) as store:   # one more run of the other host's series
        repo = store.runs.all()[0].repo
        run_id = store.runs.create(label="nightly", host=OTHER, request=RunRequest(), environment={},
                                   commit=shas[-1], commit_describe=shas[-1][:7], repo=repo)
        for rep in range(3):
            store.samples.add(run_id, Point("wis", {"test": "poll2", "mode": "thread"}), rep,
                              [Measurement("ops", 60.0 + 0.1 * rep, "ops/s")])
        store.series.seal(run_id)
        store.runs.set_status(run_id, RunStatus.COMPLETE)
    history = _history(db)
    assert len(searches) == 1   # the other host's series only
    assert {s.host for s in history.series} == {"box", OTHER}
    run_cli("alerts", "--update", db=db, check=True)
    after = _kept(db)
    assert after.keys() == before.keys()
    assert sum(after[k] != before[k] for k in after) == 1


def test_a_kept_row_that_does_not_read_as_change_points_is_searched_again(db_target, tmp_path, searches):
    from perflab.store import Store
    from perflab.store.schema import detections
    db, _ = with_other_host(tmp_path, db_target)
    run_cli("alerts", "--update", db=db, check=True)
    expected = _changes(_history(db))
    with Store(db) as store:
        store.conn.execute(detections.update().values(found='[{"index": "not a number"}]'))
        store.conn.commit()
    searches.forget()
    assert _changes(_history(db)) == expected and len(searches) == 2


def test_kept_change_points_read_back_exactly():
    """What is kept is what was found, float for float (NaN, infinities and a spread change's parts)."""
    from perflab.analysis.series import KeptDetections
    from perflab.stats.detectors.points import ChangePoint
    found = [ChangePoint(3, 1.0 / 3, 0.1, np.inf, 0.2, -9.999999999999998, np.nan, "mosum",
                         parts=((3, 0.25), (5, 0.75))),
             ChangePoint(9, -np.inf, 0.0, 2.0, np.nan, 1e-300, 0.5, "mosum", kind="spread", magnitude=1.5)]
    written = KeptDetections({}, writing=True)
    written.note("k", "d", found)
    read = KeptDetections(dict(written.found)).take("k", "d")
    assert read is not None
    assert [repr(x) for x in read] == [repr(x) for x in found]
    assert KeptDetections(dict(written.found)).take("k", "other digest") is None
    reader = KeptDetections({})   # a reader collects nothing to keep (no JSON made for it)
    reader.note("k", "d", found)
    assert reader.found == {}


def test_change_points_kept_by_another_perflab_are_searched_again(db_target, tmp_path, searches, monkeypatch):
    """The digest covers the detector's code: after an upgrade the robot's rows of the same
    values are not taken for what this perflab would find."""
    from perflab.analysis import series
    db, _ = with_other_host(tmp_path, db_target)
    run_cli("alerts", "--update", db=db, check=True)
    expected = _changes(_history(db))
    searches.forget()
    monkeypatch.setattr(series, "_detector_code", lambda: b"another perflab's detector")
    assert _changes(_history(db)) == expected and len(searches) == 2
