"""The dashboard of ``perflab serve``: read-only pages over one store.

Pages: the front page (what needs a person: untriaged alerts, suspects awaiting their
rerun, recent changes, the fleet's health, then the newest runs: web/front.py), the runs
(filter by label, host, commit, date; paginated), one run, a comparison of any selection
(the same page as ``compare --format html``), the history of a metric with its change
points (the page of ``history --format html``; ``?host=NAME`` one machine's series, as
``--host``; ``?format=text`` the text; ``?samples=all`` every sample of a page over its
budget, as ``--samples all``), the list of changes, one change's report (the text of
``perflab report change ID``, which a click on a change point of the history page opens),
the fleet's jobs (``?state=running``), the alerts (filter by state; paginated) and one alert with its events
and its report. Every page opens the store for the request only. The writes are an
alert's triage (POST /alerts/ID: action, target, note, who), its rerun request (POST
/alerts/ID/rerun) and its assignee and bug link (POST /alerts/ID/owner), and only when
``serve`` was given a token and the request carries it (X-Perflab-Token header, a bearer
token, or the form's ``token`` field): without one the dashboard is read-only. One
stylesheet (web/static/perflab.css) is served with the pages: nothing is fetched elsewhere.
Jinja2 autoescapes every user string; a user's mistake (an unknown run, a bad filter, an
illegal triage move) is a 400/404 page saying so in one line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import importlib
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from perflab.analysis.alerts import list_alerts, mark_alerts, triage, with_alerted
from perflab.analysis.compare import Filters, compare_named
from perflab.analysis.history import build_history, change_report, list_changes, parse_since, preload
from perflab.analysis.summary import summarize_run
from perflab.model.alerts import STATES
from perflab.model.errors import PerflabError, UsageError
from perflab.model.jobs import parse_states
from perflab.model.limits import MAX_ID, is_id
from perflab.model.methods import CHANGE_POINT_METHODS, COMPARE_TESTS
from perflab.model.records import RunInfo
from perflab.render.alerts import ALERT_HEADERS, alert_cells
from perflab.render.change_report import render_change_report
from perflab.render.compare_html import CARTESIAN, FULL, plotly_js, render_html
from perflab.render.compare_html import environment as report_templates
from perflab.render.history import CHANGES_LEGEND, change_cells, render_history
from perflab.render.history_html import render_history_html
from perflab.render.jobs import render_jobs
from perflab.render.runs import render_show
from perflab.store import Store
from perflab.store.data_version import DataVersion
from perflab.vcs import commit_subjects
from perflab.web.commits import CommitNames
from perflab.web.page_cache import PageCache
from perflab.web.pages import TEMPLATES, BadRequest, alert_id, form_of, guarded, guarded_async, page, refusal

PAGE_SIZE = 50
CACHE_HEADER = "X-Perflab-Cache"


def _day(text: str, name: str) -> float:
    """A date (or date and time) of a filter, UTC unless it names its zone."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"bad {name} {text!r}: expected a date YYYY-MM-DD") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


def _matches(run: RunInfo, label: str, host: str, commit: str, since: float | None, until: float | None) -> bool:
    return ((not label or label in run.label) and (not host or host in run.host)
            and (not commit or (run.commit or "").startswith(commit) or commit in (run.commit_describe or ""))
            and (since is None or run.started_at >= since) and (until is None or run.started_at < until + 86400))


def _every_sample(request: Request) -> bool:
    """?samples=all: the history page draws every sample, over its budget too (its chart
    only: refused with ?format=text, as `history --samples all` is with text)."""
    given = set(request.query_params.getlist("samples")) - {""}
    bad = sorted(given - {"budget", "all"})
    if bad or len(given) > 1:
        shown = bad[0] if bad else " and ".join(sorted(given))
        raise BadRequest(f"bad samples {shown[:40]!r}: expected all (every sample, however many) or budget")
    if given == {"all"} and request.query_params.get("format") == "text":
        raise BadRequest("samples=all is for the chart: the text page has no sample dots")
    return given == {"all"}


def _paged(request: Request, items: list[Any], name: str) -> dict[str, Any]:
    """One page of ``items`` (?page=N&per_page=M) as the template's context."""
    q = request.query_params
    try:
        page = max(1, int(q.get("page", "1")))
        size = min(500, max(1, int(q.get("per_page", str(PAGE_SIZE)))))
    except ValueError:
        raise BadRequest("bad page or per_page: expected a whole number") from None
    keep = {k: v for k, v in q.items() if k != "page" and v}
    return {name: items[(page - 1) * size: page * size], "total": len(items), "page": page,
            "pages": max(1, math.ceil(len(items) / size)),
            "page_url": lambda n: "?" + urlencode({**keep, "page": n})}


class _Dashboard:
    """The pages over the store ``db``: one method a route's handler; ``token`` lets a
    request that carries it triage alerts; ``commit_url`` links commits (web/commits.py)."""

    def __init__(self, db: str | None, token: str | None, commit_url: str | None = None):
        self.db, self.token = db, token
        self.commits = CommitNames(commit_url)
        # plotly.js once per browser, not megabytes in every chart page: each bundle is named
        # by its content, so it can be cached for good (the CLI's html files embed it)
        self.bundles = {name: plotly_js(name).encode() for name in (CARTESIAN, FULL)}
        self.bundles[STYLE] = (Path(__file__).parent / "static" / "perflab.css").read_bytes()
        self.urls = {name: f"/static/{_PREFIX[name]}{name}-{hashlib.sha256(data).hexdigest()[:16]}.{_KIND[name][0]}"
                     for name, data in self.bundles.items()}
        TEMPLATES.globals["css_url"] = self.urls[STYLE]
        self.pages = PageCache()
        self._versions: DataVersion | None = None
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()

    def store(self) -> Store:
        """The store for one request; of PostgreSQL, on the engine the server keeps (its
        pooled connections and compiled statements: 0.05 s of an alert page at 10^8)."""
        store = Store(self.db, create=False, engine=self._engine)
        if store.is_server and self._engine is None:
            with self._engine_lock:   # of two first requests at once, one engine is kept
                if self._engine is None:
                    self._engine = store.keep_engine()
        return store

    def data_version(self) -> str | None:
        """The store's data version now (store/data_version.py); None: unknown, cache nothing."""
        try:
            if self._versions is None:
                self._versions = DataVersion(self.db)
            return self._versions.now()
        except PerflabError:   # no store yet, or one perflab cannot read: the page says why
            return None

    def static_route(self, name: str) -> Route:
        def serve(request: Request) -> Response:
            return Response(self.bundles[name], media_type=_KIND[name][1],
                            headers={"Cache-Control": "public, max-age=31536000, immutable"})
        return Route(self.urls[name], serve)

    def runs(self, request: Request) -> HTMLResponse:
        q = request.query_params
        label, host, commit = q.get("label", ""), q.get("host", ""), q.get("commit", "")
        since = _day(q["since"], "since") if q.get("since") else None
        until = _day(q["until"], "until") if q.get("until") else None
        with self.store() as s:
            found = [r for r in reversed(s.runs.all()) if _matches(r, label, host, commit, since, until)]
        context = _paged(request, found, "runs")
        self.commits.prefetch((r.repo, r.commit) for r in context["runs"])
        return page("runs.html.j2", **context, here="runs", commits=self.commits,
                    filters={"label": label, "host": host, "commit": commit,
                             "since": q.get("since", ""), "until": q.get("until", "")},
                    started=lambda r: dt.datetime.fromtimestamp(r.started_at, dt.UTC).strftime("%Y-%m-%d %H:%M"))

    def run(self, request: Request) -> HTMLResponse:
        with self.store() as s:
            info = s.runs.resolve(request.path_params["ref"])
            rows = s.samples.rows(info.id)
            infos = {(b, m): i for b in set(rows.benchmark) for m, i in s.metrics.infos(b).items()}
            text = render_show(info, summarize_run(rows, infos))
        return page("text.html.j2", title=f"run {info.id} {info.label}", text=text, here="runs")

    def compare(self, request: Request) -> HTMLResponse:
        refs = request.query_params.getlist("run")
        if not refs:
            raise BadRequest("compare needs a baseline and at least one candidate (?run=A&run=B), "
                              "or a run of several commands (?run=A)")
        metrics = request.query_params.getlist("metric")
        with self.store() as s:   # as `perflab compare RUN...` does
            chosen = [s.runs.resolve(ref) for ref in refs]
            report = compare_named(s, chosen, filters=Filters.parse([], metrics))
        return HTMLResponse(render_html(report, plotly_src=self.urls[CARTESIAN]))

    def _history(self, request: Request):
        q = request.query_params
        filters = Filters.parse([*q.getlist("filter"), *(f"benchmark={b}" for b in q.getlist("benchmark"))],
                                q.getlist("metric"))
        with self.store() as s:
            return build_history(s, filters=filters, labels=q.getlist("label"),
                                 hosts=frozenset(q.getlist("host")) - {""})

    def kept_or_made(self, request: Request, make: Callable[[], tuple[HTMLResponse, bool]]) -> HTMLResponse:
        """The page of ``request`` as made before for the store's data as it is now
        (web/page_cache.py), else ``make()``'s (kept when it says so); the X-Perflab-Cache
        header says which: "hit" (sent as made before) or "miss" (made now). For pages that
        show nothing but the store's data (no age, no clock)."""
        version, key = self.data_version(), f"{request.url.path}?{request.url.query}"
        kept = self.pages.get(key, version)
        if kept is not None:
            return HTMLResponse(kept, headers={CACHE_HEADER: "hit"})
        made, keep = make()
        if keep and made.status_code == 200:
            self.pages.put(key, version, bytes(made.body))
        made.headers[CACHE_HEADER] = "miss"
        return made

    def history(self, request: Request) -> HTMLResponse:
        every = _every_sample(request)   # a bad one refused before the history is built
        return self.kept_or_made(request, lambda: self._history_page(request, every))

    def _history_page(self, request: Request, every: bool) -> tuple[HTMLResponse, bool]:
        """The history page, and whether to keep it (not when it names a commit git does not
        know yet: a fetch may teach git its subject)."""
        found = self._history(request)
        if request.query_params.get("format") == "text":
            return page("text.html.j2", title="history", text=render_history(found), here="history"), True
        commits = dict.fromkeys(p.point.commit for s in found.series for p in s.points if p.point.commit)
        subjects = commit_subjects(found.repo, commits)
        made = HTMLResponse(render_history_html(
            found, subjects, change_url="/changes/{id}", plotly_src=self.urls[FULL],
            every_sample=every, every_sample_url="?" + urlencode(
                [*((k, v) for k, v in request.query_params.multi_items() if k != "samples"), ("samples", "all")])))
        return made, found.repo is None or len(subjects) == len(commits)

    def changes(self, request: Request) -> HTMLResponse:
        since = request.query_params.get("since")
        with self.store() as s:
            listing = mark_alerts(s, list_changes(with_alerted(s, self._history(request)),
                                                  since=parse_since(since) if since else None))
        headers, rows = change_cells(listing)
        return page("changes.html.j2", here="changes", headers=headers, legend=CHANGES_LEGEND,
                    numeric={"before", "after", "change", "p", "samples p"},
                    rows=[{"id": r[0], "verdict": item.change.verdict.value, "cells": list(zip(headers[1:], r[1:]))}
                          for item, r in zip(listing.changes, rows)],
                    warnings=[w.message for w in listing.warnings])

    def jobs(self, request: Request) -> HTMLResponse:
        states = parse_states(request.query_params.get("state"))
        with self.store() as s:
            text = render_jobs(s.jobs.all(states, limit=PAGE_SIZE))
        return page("text.html.j2", title="jobs", text=text, here="jobs")

    def alert_list(self, request: Request) -> HTMLResponse:
        state = request.query_params.get("state") or None
        with self.store() as s:
            found = list_alerts(s, state=state)
            context = _paged(request, found, "alerts")
            repos = {a.summary_id: s.alerts.repo_of(a.summary_id) for a in context["alerts"]}
        self.commits.prefetch((repos[a.summary_id], a.first_bad) for a in context["alerts"])
        return page("alerts.html.j2", **context, states=STATES, state=state or "", here="alerts",
                    headers=ALERT_HEADERS, cells=alert_cells, repos=repos, commits=self.commits)

    async def alert_triage(self, request: Request) -> Response:
        number = alert_id(request)
        form = await form_of(request)
        refused = refusal(request, form, self.token)
        if refused is not None:
            return refused
        action, target = form.get("action", ""), form.get("target", "").strip()
        if target and not is_id(target):
            raise UsageError(f"no alert {target[:40]!r} for duplicate-of: ids are numbers from 1 to {MAX_ID}")
        with self.store() as s:
            triage(s, number, action, who=form.get("who", "").strip() or "dashboard",
                   note=form.get("note", ""), duplicate_of=int(target) if target else None)
        return RedirectResponse(f"/alerts/{number}", status_code=303)

    def change(self, request: Request) -> HTMLResponse:  # the text of `perflab report change ID`
        change_id = request.path_params["id"]
        with self.store() as s:
            found = change_report(s, change_id, labels=request.query_params.getlist("label"))
        return page("text.html.j2", title=f"change {found.change.id}", text=render_change_report(found),
                    here="changes")


STYLE = "perflab"
_KIND = {CARTESIAN: ("js", "text/javascript"), FULL: ("js", "text/javascript"), STYLE: ("css", "text/css")}
_PREFIX = {CARTESIAN: "plotly-", FULL: "plotly-", STYLE: ""}


#: what a history page or an alert's report imports on first use (beside detection's own,
#: analysis.series.preload): a new server's first page would pay for them (0.1-0.2 s of an alert page)
_FIRST_PAGE_MODULES = ("perflab.analysis.profile", "perflab.render.compare_lkp", "perflab.stats.commit_series",
                       "perflab.stats.tip", "perflab.workloads.registry")


def _warm_up(pages: _Dashboard) -> None:
    """Pay at start what a new server's first page would: detection's and the report's
    imports, every registered method's module, the pages' templates compiled, and the store's
    driver and first connection (the data version's, and the pages' pooled one)."""
    preload()
    for module in (*_FIRST_PAGE_MODULES, *(m.home for m in CHANGE_POINT_METHODS), *(t.home for t in COMPARE_TESTS)):
        importlib.import_module(module.split(":")[0])
    for templates in (TEMPLATES, report_templates()):
        for name in templates.list_templates():
            templates.get_template(name)
    pages.data_version()
    with contextlib.suppress(PerflabError), pages.store() as store:   # no store yet: its pages say so
        store.runs.recent(1)   # the kept engine's first connection, its server process's catalog read


def create_app(db: str | None, *, token: str | None = None, commit_url: str | None = None) -> Starlette:
    """The dashboard over the store ``db`` (a path or a PostgreSQL URL); with ``token``,
    alert triage by POST for requests that carry it (else read-only); with ``commit_url``
    (an http(s) template with {sha}), every commit links to its page."""
    from perflab.web.front import FrontPages
    pages = _Dashboard(db, token, commit_url)
    _warm_up(pages)
    front = FrontPages(pages)
    return Starlette(routes=[
        Route("/", guarded(front.front)), Route("/runs", guarded(pages.runs)),
        Route("/runs/{ref}", guarded(pages.run)),
        Route("/compare", guarded(pages.compare)), Route("/history", guarded(pages.history)),
        Route("/changes", guarded(pages.changes)), Route("/jobs", guarded(pages.jobs)),
        Route("/alerts", guarded(pages.alert_list)),
        Route("/alerts/{id}", guarded(front.alert), methods=["GET"]),
        Route("/alerts/{id}", guarded_async(pages.alert_triage), methods=["POST"]),
        Route("/alerts/{id}/spark.svg", guarded(front.sparkline)),
        Route("/alerts/{id}/rerun", guarded_async(front.rerun), methods=["POST"]),
        Route("/alerts/{id}/owner", guarded_async(front.owner), methods=["POST"]),
        Route("/changes/{id}", guarded(pages.change)),
        *(pages.static_route(name) for name in pages.bundles),
    ])
