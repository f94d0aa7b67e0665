"""The dashboard of ``perflab serve``: read-only pages over one store.

Pages: the runs (filter by label, host, commit, date; paginated), one run, a comparison
of any selection (the same page as ``compare --format html``), the history of a metric
with its change points (the page of ``history --format html``; ``?format=text`` the
text), the list of changes, one change's report (the text of ``perflab report change ID``,
which a click on a change point of the history page opens), the fleet's jobs
(``?state=running``), the alerts (filter by state; paginated) and one alert with its events
and its report. Every page opens the store for the request only. The one write is an
alert's triage (POST /alerts/ID: action, target, note, who), and only when ``serve`` was
given a token and the request carries it (X-Perflab-Token header, a bearer token, or the
form's ``token`` field): without one the dashboard is read-only. Jinja2 autoescapes every
user string; a user's mistake (an unknown run, a bad filter, an illegal triage move) is a
400/404 page saying so in one line.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import math
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from perflab.analysis.alerts import alert_detail, list_alerts, mark_alerts, triage, with_alerted
from perflab.analysis.compare import Filters, compare_named
from perflab.analysis.history import build_history, change_report, list_changes, parse_since, preload
from perflab.analysis.summary import summarize_run
from perflab.model.alerts import ACTIONS, STATES, TRANSITIONS
from perflab.model.errors import PerflabError, UsageError
from perflab.model.jobs import parse_states
from perflab.model.limits import MAX_ID, is_id
from perflab.model.records import RunInfo
from perflab.render.alerts import ALERT_HEADERS, alert_cells, commits_text, event_cells
from perflab.render.change_report import render_change_report
from perflab.render.compare_html import CARTESIAN, FULL, plotly_js, render_html
from perflab.render.history import render_changes, render_history, state_text
from perflab.render.history_html import render_history_html
from perflab.render.jobs import render_jobs
from perflab.render.runs import render_show
from perflab.store import Store
from perflab.vcs import commit_subjects

PAGE_SIZE = 50
TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                               autoescape=True, undefined=jinja2.StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True)


def _day(text: str, name: str) -> float:
    """A date (or date and time) of a filter, UTC unless it names its zone."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise _BadRequest(f"bad {name} {text!r}: expected a date YYYY-MM-DD") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


class _BadRequest(Exception):
    pass


def _page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(TEMPLATES.get_template(template).render(**context), status_code=status)


def _matches(run: RunInfo, label: str, host: str, commit: str, since: float | None, until: float | None) -> bool:
    return ((not label or label in run.label) and (not host or host in run.host)
            and (not commit or (run.commit or "").startswith(commit) or commit in (run.commit_describe or ""))
            and (since is None or run.started_at >= since) and (until is None or run.started_at < until + 86400))


def _paged(request: Request, items: list[Any], name: str) -> dict[str, Any]:
    """One page of ``items`` (?page=N&per_page=M) as the template's context."""
    q = request.query_params
    try:
        page = max(1, int(q.get("page", "1")))
        size = min(500, max(1, int(q.get("per_page", str(PAGE_SIZE)))))
    except ValueError:
        raise _BadRequest("bad page or per_page: expected a whole number") from None
    keep = {k: v for k, v in q.items() if k != "page" and v}
    return {name: items[(page - 1) * size: page * size], "total": len(items), "page": page,
            "pages": max(1, math.ceil(len(items) / size)),
            "page_url": lambda n: "?" + urlencode({**keep, "page": n})}


def _token_of(request: Request, form: dict[str, str]) -> str:
    """The token a request carries: the X-Perflab-Token header, a bearer token, or the form's."""
    bearer = request.headers.get("authorization", "")
    return (request.headers.get("x-perflab-token")
            or (bearer[7:] if bearer.lower().startswith("bearer ") else "")
            or form.get("token", ""))


def _failure(error: Exception) -> HTMLResponse:
    """A one-line page for a user's mistake: 404 for what names nothing, else 400."""
    if isinstance(error, _BadRequest):
        return _page("error.html.j2", 400, message=str(error))
    missing = ("no run", "no change with", "not found", "no alert")
    return _page("error.html.j2", 404 if any(w in str(error) for w in missing) else 400, message=str(error))


def _guarded(handler):  # never a traceback
    def endpoint(request: Request) -> HTMLResponse:
        try:
            return handler(request)
        except (_BadRequest, PerflabError) as error:
            return _failure(error)
    return endpoint


def _guarded_async(handler):
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except (_BadRequest, PerflabError) as error:
            return _failure(error)
    return endpoint


def _alert_id(request: Request) -> int:
    text = request.path_params["id"]
    if not is_id(text):   # names no alert (404), and never reaches the database
        raise UsageError(f"no alert {text[:40]!r}: ids are numbers from 1 to {MAX_ID}, as /alerts lists them")
    return int(text)


class _Dashboard:
    """The pages over the store ``db``: one method a route's handler; ``token`` lets a
    request that carries it triage alerts."""

    def __init__(self, db: str | None, token: str | None):
        self.db, self.token = db, token
        # plotly.js once per browser, not megabytes in every chart page: each bundle is named
        # by its content, so it can be cached for good (the CLI's html files embed it)
        self.bundles = {name: plotly_js(name).encode() for name in (CARTESIAN, FULL)}
        self.plotly_urls = {name: f"/static/plotly-{name}-{hashlib.sha256(data).hexdigest()[:16]}.js"
                            for name, data in self.bundles.items()}

    def store(self) -> Store:
        return Store(self.db, create=False)

    def plotly_route(self, name: str) -> Route:
        def plotly(request: Request) -> Response:
            return Response(self.bundles[name], media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=31536000, immutable"})
        return Route(self.plotly_urls[name], plotly)

    def runs(self, request: Request) -> HTMLResponse:
        q = request.query_params
        label, host, commit = q.get("label", ""), q.get("host", ""), q.get("commit", "")
        since = _day(q["since"], "since") if q.get("since") else None
        until = _day(q["until"], "until") if q.get("until") else None
        with self.store() as s:
            found = [r for r in reversed(s.runs.all()) if _matches(r, label, host, commit, since, until)]
        return _page("runs.html.j2", **_paged(request, found, "runs"),
                     filters={"label": label, "host": host, "commit": commit,
                              "since": q.get("since", ""), "until": q.get("until", "")},
                     started=lambda r: dt.datetime.fromtimestamp(r.started_at, dt.UTC).strftime("%Y-%m-%d %H:%M"))

    def run(self, request: Request) -> HTMLResponse:
        with self.store() as s:
            info = s.runs.resolve(request.path_params["ref"])
            rows = s.samples.rows(info.id)
            infos = {(b, m): i for b in set(rows.benchmark) for m, i in s.metrics.infos(b).items()}
            text = render_show(info, summarize_run(rows, infos))
        return _page("text.html.j2", title=f"run {info.id} {info.label}", text=text)

    def compare(self, request: Request) -> HTMLResponse:
        refs = request.query_params.getlist("run")
        if not refs:
            raise _BadRequest("compare needs a baseline and at least one candidate (?run=A&run=B), "
                              "or a run of several commands (?run=A)")
        metrics = request.query_params.getlist("metric")
        with self.store() as s:   # as `perflab compare RUN...` does
            chosen = [s.runs.resolve(ref) for ref in refs]
            report = compare_named(s, chosen, filters=Filters.parse([], metrics))
        return HTMLResponse(render_html(report, plotly_src=self.plotly_urls[CARTESIAN]))

    def _history(self, request: Request):
        q = request.query_params
        filters = Filters.parse([*q.getlist("filter"), *(f"benchmark={b}" for b in q.getlist("benchmark"))],
                                q.getlist("metric"))
        with self.store() as s:
            return build_history(s, filters=filters, labels=q.getlist("label"))

    def history(self, request: Request) -> HTMLResponse:
        found = self._history(request)
        if request.query_params.get("format") == "text":
            return _page("text.html.j2", title="history", text=render_history(found))
        commits = dict.fromkeys(p.point.commit for s in found.series for p in s.points if p.point.commit)
        return HTMLResponse(render_history_html(found, commit_subjects(found.repo, commits),
                                                change_url="/changes/{id}", plotly_src=self.plotly_urls[FULL]))

    def changes(self, request: Request) -> HTMLResponse:
        since = request.query_params.get("since")
        with self.store() as s:
            listing = mark_alerts(s, list_changes(with_alerted(s, self._history(request)),
                                                  since=parse_since(since) if since else None))
        return _page("text.html.j2", title="changes", text=render_changes(listing))

    def jobs(self, request: Request) -> HTMLResponse:
        states = parse_states(request.query_params.get("state"))
        with self.store() as s:
            text = render_jobs(s.jobs.all(states, limit=PAGE_SIZE))
        return _page("text.html.j2", title="jobs", text=text)

    def alert_list(self, request: Request) -> HTMLResponse:
        state = request.query_params.get("state") or None
        with self.store() as s:
            found = list_alerts(s, state=state)
        return _page("alerts.html.j2", **_paged(request, found, "alerts"), states=STATES, state=state or "",
                     headers=ALERT_HEADERS, cells=alert_cells)

    def alert_page(self, request: Request) -> HTMLResponse:
        with self.store() as s:
            detail = alert_detail(s, _alert_id(request))
        return _page("alert.html.j2", detail=detail, alert=detail.alert, state=state_text(detail.alert),
                     series=detail.alert.series_name, commits=commits_text(detail.alert),
                     events=[event_cells(e) for e in detail.events],
                     report=render_change_report(detail.report) if detail.report else detail.report_missing,
                     actions=[a for a, to in ACTIONS.items() if to in TRANSITIONS[detail.alert.state]],
                     writable=self.token is not None)

    async def alert_triage(self, request: Request) -> Response:
        alert_id = _alert_id(request)
        body = (await request.body()).decode("utf-8", "replace")
        form = {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}
        if self.token is None:
            return _page("error.html.j2", 403, message="the dashboard is read-only: "
                         "start it with 'perflab serve --token T' to triage alerts")
        if not hmac.compare_digest(_token_of(request, form).encode(), self.token.encode()):
            return _page("error.html.j2", 403, message="a wrong or missing token: triage needs the token "
                         "given to 'perflab serve --token'")
        action, target = form.get("action", ""), form.get("target", "").strip()
        if target and not is_id(target):
            raise UsageError(f"no alert {target[:40]!r} for duplicate-of: ids are numbers from 1 to {MAX_ID}")
        with self.store() as s:
            triage(s, alert_id, action, who=form.get("who", "").strip() or "dashboard",
                   note=form.get("note", ""), duplicate_of=int(target) if target else None)
        return RedirectResponse(f"/alerts/{alert_id}", status_code=303)

    def change(self, request: Request) -> HTMLResponse:  # the text of `perflab report change ID`
        change_id = request.path_params["id"]
        with self.store() as s:
            found = change_report(s, change_id, labels=request.query_params.getlist("label"))
        return _page("text.html.j2", title=f"change {found.change.id}", text=render_change_report(found))


def create_app(db: str | None, *, token: str | None = None) -> Starlette:
    """The dashboard over the store ``db`` (a path or a PostgreSQL URL); with ``token``,
    alert triage by POST for requests that carry it (else read-only)."""
    preload()  # the imports of detection now, not in the first history page
    pages = _Dashboard(db, token)
    return Starlette(routes=[
        Route("/", _guarded(pages.runs)), Route("/runs/{ref}", _guarded(pages.run)),
        Route("/compare", _guarded(pages.compare)), Route("/history", _guarded(pages.history)),
        Route("/changes", _guarded(pages.changes)), Route("/jobs", _guarded(pages.jobs)),
        Route("/alerts", _guarded(pages.alert_list)),
        Route("/alerts/{id}", _guarded(pages.alert_page), methods=["GET"]),
        Route("/alerts/{id}", _guarded_async(pages.alert_triage), methods=["POST"]),
        Route("/changes/{id}", _guarded(pages.change)),
        *(pages.plotly_route(name) for name in pages.bundles),
    ])
