"""What every page of the dashboard shares: its templates, the one-line page of a user's
mistake (never a traceback: ``guarded``, which also makes the page with the cycle collector
paused: ``collector_paused``), and how a write is checked (``refusal``: the token
``perflab serve --token`` was given) and read (``form_of``, ``alert_id``)."""

from __future__ import annotations

import gc
import hmac
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from perflab.model.errors import PerflabError, UsageError
from perflab.model.limits import MAX_ID, is_id

TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                               autoescape=True, undefined=jinja2.StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True)


class BadRequest(Exception):
    pass


def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(TEMPLATES.get_template(template).render(**context), status_code=status)


def _token_of(request: Request, form: dict[str, str]) -> str:
    """The token a request carries: the X-Perflab-Token header, a bearer token, or the form's."""
    bearer = request.headers.get("authorization", "")
    return (request.headers.get("x-perflab-token")
            or (bearer[7:] if bearer.lower().startswith("bearer ") else "")
            or form.get("token", ""))


def _failure(error: Exception) -> HTMLResponse:
    """A one-line page for a user's mistake: 404 for what names nothing, else 400."""
    if isinstance(error, BadRequest):
        return page("error.html.j2", 400, message=str(error))
    missing = ("no run", "no change with", "not found", "no alert")
    return page("error.html.j2", 404 if any(w in str(error) for w in missing) else 400, message=str(error))


def guarded(handler):  # never a traceback; the collector paused while the page is made
    def endpoint(request: Request) -> HTMLResponse:
        try:
            with collector_paused():
                return handler(request)
        except (BadRequest, PerflabError) as error:
            return _failure(error)
    return endpoint


class _Pause:
    """The pages being made now (handlers run on several threads), whether the collector was
    on before the first of them, and since when it has been off."""

    lock = threading.Lock()
    pages = 0
    was_on = False
    since = 0.0


#: pages overlapping for this long without a moment between them: one collection then, so
#: that a busy dashboard's cyclic garbage is freed too
COLLECT_AFTER_S = 30.0


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a page is made, on again when the last page being
    made is done (if it was on). A page builds its model of many thousand objects at once (a
    fleet's history page: 20,000 points, their runs and values): the collector, run every 700
    allocations, walked them and the server's caches again and again and freed nothing (0.4 s
    of a 1.1 s history page); they are freed by their counts when the page is sent, as the
    short CLI commands run with it off (cli/main.py). Pages that keep overlapping get a
    collection every COLLECT_AFTER_S, after one of them is made."""
    with _Pause.lock:
        if not _Pause.pages:
            _Pause.was_on, _Pause.since = gc.isenabled(), time.monotonic()
            gc.disable()
        _Pause.pages += 1
    try:
        yield
    finally:
        collect = False
        with _Pause.lock:
            _Pause.pages -= 1
            if not _Pause.pages:
                if _Pause.was_on:
                    gc.enable()
            elif _Pause.was_on and time.monotonic() - _Pause.since > COLLECT_AFTER_S:
                _Pause.since, collect = time.monotonic(), True
        if collect:
            gc.collect()


def guarded_async(handler):
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except (BadRequest, PerflabError) as error:
            return _failure(error)
    return endpoint


def refusal(request: Request, form: dict[str, str], token: str | None) -> HTMLResponse | None:
    """The 403 page of a write the request may not make (no token set, or not carried), else None."""
    if token is None:
        return page("error.html.j2", 403, message="the dashboard is read-only: "
                     "start it with 'perflab serve --token T' to triage alerts")
    if not hmac.compare_digest(_token_of(request, form).encode(), token.encode()):
        return page("error.html.j2", 403, message="a wrong or missing token: triage needs the token "
                     "given to 'perflab serve --token'")
    return None


async def form_of(request: Request) -> dict[str, str]:
    """A POST's urlencoded form, each field's last value."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


def alert_id(request: Request) -> int:
    text = request.path_params["id"]
    if not is_id(text):   # names no alert (404), and never reaches the database
        raise UsageError(f"no alert {text[:40]!r}: ids are numbers from 1 to {MAX_ID}, as /alerts lists them")
    return int(text)
