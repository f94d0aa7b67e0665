"""The dashboard of ``perflab serve``: read-only pages over one store.

Pages: the runs (filter by label, host, commit, date; paginated), one run, a comparison
of any selection (the same page as ``compare --format html``), the history of a metric
with its change points (the page of ``history --format html``; ``?format=text`` the
text), the list of changes and the fleet's jobs (``?state=running``). Every page opens
the store for the request only and never writes. Jinja2 autoescapes every user string;
a user's mistake (an unknown run, a bad filter) is a 400/404 page saying so in one line.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from perflab.analysis.compare import Filters, compare_runs
from perflab.analysis.history import build_history, list_changes, parse_since
from perflab.analysis.summary import summarize_run
from perflab.model.errors import PerflabError
from perflab.model.jobs import parse_states
from perflab.model.records import RunInfo
from perflab.render.compare import render_comparison
from perflab.render.history import render_changes, render_history
from perflab.render.history_html import render_history_html
from perflab.render.jobs import render_jobs
from perflab.render.runs import render_show
from perflab.store import Store
from perflab.store import jobs as job_book
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


def create_app(db: str | None) -> Starlette:
    """The dashboard over the store ``db`` (a path or a PostgreSQL URL)."""

    def store() -> Store:
        return Store(db, create=False)

    def guarded(handler):  # one-line pages for a user's mistake, never a traceback
        def endpoint(request: Request) -> HTMLResponse:
            try:
                return handler(request)
            except _BadRequest as error:
                return _page("error.html.j2", 400, message=str(error))
            except PerflabError as error:
                status = 404 if "no run" in str(error) or "not found" in str(error) else 400
                return _page("error.html.j2", status, message=str(error))
        return endpoint

    def runs(request: Request) -> HTMLResponse:
        q = request.query_params
        label, host, commit = q.get("label", ""), q.get("host", ""), q.get("commit", "")
        since = _day(q["since"], "since") if q.get("since") else None
        until = _day(q["until"], "until") if q.get("until") else None
        try:
            page = max(1, int(q.get("page", "1")))
            size = min(500, max(1, int(q.get("per_page", str(PAGE_SIZE)))))
        except ValueError:
            raise _BadRequest("bad page or per_page: expected a whole number") from None
        with store() as s:
            found = [r for r in reversed(s.list_runs()) if _matches(r, label, host, commit, since, until)]
        pages = max(1, math.ceil(len(found) / size))
        shown = found[(page - 1) * size: page * size]
        keep = {k: v for k, v in q.items() if k != "page" and v}
        return _page("runs.html.j2", runs=shown, total=len(found), page=page, pages=pages,
                     filters={"label": label, "host": host, "commit": commit,
                              "since": q.get("since", ""), "until": q.get("until", "")},
                     page_url=lambda n: "?" + urlencode({**keep, "page": n}),
                     started=lambda r: dt.datetime.fromtimestamp(r.started_at, dt.UTC).strftime("%Y-%m-%d %H:%M"))

    def run(request: Request) -> HTMLResponse:
        with store() as s:
            info = s.resolve_run(request.path_params["ref"])
            rows = s.sample_rows(info.id)
            infos = {(b, m): i for b in set(rows.benchmark) for m, i in s.metric_infos(b).items()}
            text = render_show(info, summarize_run(rows, infos))
        return _page("text.html.j2", title=f"run {info.id} {info.label}", text=text)

    def compare(request: Request) -> HTMLResponse:
        refs = request.query_params.getlist("run")
        if len(refs) < 2:
            raise _BadRequest("compare needs a baseline and at least one candidate: ?run=A&run=B")
        metrics = request.query_params.getlist("metric")
        with store() as s:
            chosen = [s.resolve_run(ref) for ref in refs]
            report = compare_runs(s, chosen, filters=Filters.parse([], metrics))
        return HTMLResponse(render_comparison(report, "html"))

    def _history(request: Request):
        q = request.query_params
        filters = Filters.parse([*q.getlist("filter"), *(f"benchmark={b}" for b in q.getlist("benchmark"))],
                                q.getlist("metric"))
        with store() as s:
            return build_history(s, filters=filters, labels=q.getlist("label"))

    def history(request: Request) -> HTMLResponse:
        found = _history(request)
        if request.query_params.get("format") == "text":
            return _page("text.html.j2", title="history", text=render_history(found))
        commits = dict.fromkeys(p.point.commit for s in found.series for p in s.points if p.point.commit)
        return HTMLResponse(render_history_html(found, commit_subjects(found.repo, commits)))

    def changes(request: Request) -> HTMLResponse:
        since = request.query_params.get("since")
        listing = list_changes(_history(request), since=parse_since(since) if since else None)
        return _page("text.html.j2", title="changes", text=render_changes(listing))

    def jobs(request: Request) -> HTMLResponse:
        states = parse_states(request.query_params.get("state"))
        with store() as s:
            text = render_jobs(job_book.list_jobs(s, states, limit=PAGE_SIZE))
        return _page("text.html.j2", title="jobs", text=text)

    return Starlette(routes=[
        Route("/", guarded(runs)), Route("/runs/{ref}", guarded(run)), Route("/compare", guarded(compare)),
        Route("/history", guarded(history)), Route("/changes", guarded(changes)), Route("/jobs", guarded(jobs)),
    ])
