"""The dashboard's front page and an alert's page, with the alert's writes (rerun, owner).

The front page answers "what needs me?" (analysis/frontpage.py): untriaged alerts by commit
range with a sparkline each, the suspects awaiting their rerun, the recent confirmed
changes, the fleet's health, and only then the newest runs. An alert's page draws its
series with the range, the first bad commit and the report's two levels marked, then its
events, its rerun's rounds and its report. Commits show their subject and author.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from perflab.analysis.alert_reruns import ask_rerun, awaiting_rerun, rerun_rounds
from perflab.analysis.alerts import alert_detail, assign
from perflab.analysis.frontpage import front_page, report_levels, series_window
from perflab.model.alerts import ACTIONS, TRANSITIONS, Alert
from perflab.model.params import format_value
from perflab.render.alerts import event_cells
from perflab.render.change_report import render_change_report
from perflab.render.history import pct, state_text
from perflab.render.svg import series_svg, sparkline_svg
from perflab.store import Store
from perflab.web.pages import alert_id, form_of, page, refusal

ALERT_BEFORE, ALERT_AFTER = 150, 60   # commits drawn either side of an alert's first bad commit


def age(seconds: float) -> str:
    """A duration as people say it: 40 s, 12 min, 5 h, 3 d."""
    seconds = max(0.0, seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def history_url(alert: Alert) -> str:
    """The history page of ``alert``'s series alone: its benchmark, point, metric and host."""
    point = [("filter", f"{key}={format_value(value)}") for key, value in alert.params.items()]
    return "/history?" + urlencode([("benchmark", alert.benchmark), *point, ("metric", alert.metric),
                                    ("host", alert.host)])


def stamp(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M")


class FrontPages:
    """The front page and the alert pages over ``dashboard``'s store."""

    def __init__(self, dashboard: Any):
        self.dashboard = dashboard

    def front(self, request: Request) -> HTMLResponse:
        with self.dashboard.store() as s:
            front = front_page(s)
        groups = (*front.untriaged, *front.suspects)
        commits = self.dashboard.commits
        commits.prefetch([(g.repo, g.commit) for g in groups] + [(r.repo, r.commit) for r in front.runs])
        return page("front.html.j2", here="front", front=front, commits=commits, age=age, stamp=stamp, pct=pct,
                    now=front.now)

    def sparkline(self, request: Request) -> Response:
        """An alert's series around its first bad commit as a small SVG (the front page's)."""
        number = alert_id(request)
        with self.dashboard.store() as s:
            window = series_window(s, s.alerts.get(number))
        return Response(sparkline_svg(window, standalone=True), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=60"})

    def alert(self, request: Request) -> HTMLResponse:
        """An alert's page, kept while the store's data holds (its times are dates, not ages)."""
        number = alert_id(request)
        return self.dashboard.kept_or_made(request, lambda: (self._alert_page(number), True))

    def _alert_page(self, number: int) -> HTMLResponse:
        with self.dashboard.store() as s:
            detail = alert_detail(s, number)
            window = series_window(s, detail.alert, ALERT_BEFORE, ALERT_AFTER)
            if detail.culprit is not None and detail.culprit.commit in window.keys:   # the culprit marked
                window = replace(window, marked=window.keys.index(detail.culprit.commit))
            rounds = rerun_rounds(s, detail.alert, detail.events)
            repo = s.alerts.repo_of(detail.alert.summary_id)
        a = detail.alert
        levels = report_levels(detail.report, window) if detail.report is not None else ()
        self.dashboard.commits.prefetch([(repo, a.last_good), (repo, a.first_bad)]
                                        + ([(repo, detail.culprit.commit)] if detail.culprit else []))
        return page("alert.html.j2", here="alerts", detail=detail, alert=a, state=state_text(a), repo=repo,
                    commits=self.dashboard.commits, pct=pct, stamp=stamp, rounds=rounds, history=history_url(a),
                    awaiting=awaiting_rerun(detail.events), levels=levels,
                    picture=series_svg(window, levels, unit=a.unit),
                    events=[event_cells(e) for e in detail.events],
                    report=render_change_report(detail.report) if detail.report else detail.report_missing,
                    actions=[x for x, to in ACTIONS.items() if to in TRANSITIONS[a.state]],
                    writable=self.dashboard.token is not None)

    async def rerun(self, request: Request) -> Response:
        """Ask for a rerun of the alert's range (``perflab watch`` queues it)."""
        return await self._write(request, lambda s, number, form, who: ask_rerun(
            s, number, who=who, note=form.get("note", "")))

    async def owner(self, request: Request) -> Response:
        """Set the alert's assignee and bug link."""
        return await self._write(request, lambda s, number, form, who: assign(
            s, number, assignee=form.get("assignee", ""), bug_url=form.get("bug", ""), who=who))

    async def _write(self, request: Request, act: Callable[[Store, int, Any, str], object]) -> Response:
        """``act`` on the alert of the request's path with its form, if the form carries the
        token; then back to the alert's page."""
        number = alert_id(request)
        form = await form_of(request)
        refused = refusal(request, form, self.dashboard.token)
        if refused is not None:
            return refused
        with self.dashboard.store() as s:
            act(s, number, form, form.get("who", "").strip() or "dashboard")
        return RedirectResponse(f"/alerts/{number}", status_code=303)
