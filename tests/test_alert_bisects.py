"""Which alerts the robot bisects, and how an answer names the culprit (analysis/alert_bisects.py),
on a real store and a real repository (the fleet's bisect jobs: tests/test_fleet.py)."""

from __future__ import annotations

from pathlib import Path

from perflab.analysis.alert_bisects import attach_answer, culprit_of, mark_queued, pending_bisects
from perflab.analysis.alerts import list_summaries
from perflab.model.alerts import BISECTED, INVALID, UNTRIAGED
from perflab.model.report.bisect import FOUND, NO_DIFFERENCE, BisectResult, Commit, StepTest
from perflab.model.run_request import Identity, RunRequest
from perflab.render.alerts import render_summaries
from perflab.store import Store

from test_history import commit, new_repo


def _alert(store: Store, change: str, good: str, bad: str, *, host: str = "bm1", method: str = "tip",
           metric: str = "time") -> int:
    values = {"change_id": change, "host": host, "benchmark": "prog", "params": {}, "metric": metric,
              "unit": "s", "direction": "lower", "kind": "regression", "before": 1.0, "after": 2.0,
              "change_pct": 100.0, "oriented_pct": -50.0, "p_value": 0.001, "method": method,
              "state": UNTRIAGED, "duplicate_of": None}
    alert_id = store.alerts.create(values, last_good=good, first_bad=bad, repo=None, who="perflab")
    assert alert_id is not None
    return alert_id


def _result(store: Store, repo: Path, found: str | None) -> BisectResult:
    """A bisect's result as analysis.bisect makes it, with the found commit's stored run."""
    stored: tuple[tuple[str, int], ...] = ()
    if found:
        run = store.runs.create(label="bisect-0", host="bm1", request=RunRequest(identity=Identity(commit=found)),
                                environment={}, commit=found, repo=str(repo))
        stored = ((found, run),)
    first = Commit(sha=found, subject="Sleep longer", index=2) if found else None
    return BisectResult(outcome=FOUND if found else NO_DIFFERENCE,
                        message=f"first slower commit (a regression): {found[:12]} Sleep longer" if found else
                        "good and bad do not differ", first_bad=first, candidates=(), steps=(), ends=None, runs=12,
                        builds=3, commits=4, unit="s", test=StepTest(alpha=0.01, beta=0.01, min_n=3, max_n=100),
                        confidence=0.99, seed=1, paired=True, runs_per_commit=None, typical=1.0, stored=stored)


def test_a_confirmed_alert_over_several_commits_is_bisected_once_per_host_and_range(tmp_path):
    repo = new_repo(tmp_path / "app")
    line = [commit(repo, f"change {i}") for i in range(3)] + [commit(repo, "Sleep longer")] + [commit(repo, "c4")]
    with Store(str(tmp_path / "perflab.db"), create=True) as store:
        time_alert = _alert(store, "a", line[0], line[4])                   # a tip alert over 4 commits
        _alert(store, "b", line[0], line[4], metric="user", method="e-divisive")   # the same range: one bisect
        _alert(store, "c", line[0], line[4], host="bm2")                    # another host: its own bisect
        _alert(store, "d", line[3], line[4])                                # one commit: nothing to bisect
        _alert(store, "e", line[0], line[2], method="tip-suspect")          # a suspect: not yet
        _alert(store, "f", line[0], line[2], host="bm3")                    # not one of the robot's hosts
        noise = _alert(store, "g", line[1], line[3])
        store.alerts.move(store.alerts.get(noise), INVALID, action="invalid", who="t", note="")
        pending = pending_bisects(store, str(repo), ("bm1", "bm2"))
        assert sorted((p.host, p.good, p.bad, p.commits, len(p.alerts)) for p in pending) == [
            ("bm1", line[0], line[4], 4, 2), ("bm2", line[0], line[4], 4, 1)]
        for job, p in enumerate(pending, start=1):
            mark_queued(store, p, job, "perflab")
        assert pending_bisects(store, str(repo), ("bm1", "bm2")) == []      # a range is bisected once
        _alert(store, "h", line[0], line[4], metric="system")                # even for an alert raised later
        assert pending_bisects(store, str(repo), ("bm1", "bm2")) == []
        bm1 = next(p for p in pending if p.host == "bm1")
        attach_answer(store, [a.id for a in bm1.alerts], _result(store, repo, line[3]), job=1, host="bm1",
                      who="perflab")
        culprit = culprit_of(store, store.alerts.get(time_alert))
        assert culprit is not None and culprit.commit == line[3]
        assert (culprit.subject, culprit.author) == ("Sleep longer", "t <t@example.com>")
        assert culprit.named == f'{line[3][:12]} ("Sleep longer", t <t@example.com>)'
        assert culprit.answer.startswith("bisect job 1 on bm1: first slower commit (a regression): ")
        # bm2's alert has no answer of its own yet: its summary's (the same range) names the culprit
        other = culprit_of(store, next(a for a in store.alerts.all() if a.host == "bm2"))
        assert other is not None and (other.commit, other.host) == (line[3], "bm1")
        summaries = {(s.last_good, s.first_bad): s for s in list_summaries(store)}
        assert summaries[line[0], line[4]].culprit == culprit and summaries[line[0], line[2]].culprit is None
    assert f"  bisected: {culprit.named}" in render_summaries([summaries[line[0], line[4]]]).splitlines()[0]


def test_a_bisect_that_found_no_commit_is_attached_and_names_no_culprit(tmp_path):
    repo = new_repo(tmp_path / "app")
    line = [commit(repo, f"change {i}") for i in range(4)]
    with Store(str(tmp_path / "perflab.db"), create=True) as store:
        alert_id = _alert(store, "a", line[0], line[3])
        attach_answer(store, [alert_id], _result(store, repo, None), job=7, host="bm1", who="perflab")
        (answer,) = [e for e in store.alerts.events(alert_id) if e.action == BISECTED]
        assert answer.run_id is None and answer.note == "bisect job 7 on bm1: good and bad do not differ"
        assert culprit_of(store, store.alerts.get(alert_id)) is None
