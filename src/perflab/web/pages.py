"""What every page of the dashboard shares: its templates, the one-line page of a user's
mistake (never a traceback: ``guarded``), the server's cycle collector
(``server_collector``), and how a write is checked (``refusal``: the token
``perflab serve --token`` was given) and read (``form_of``, ``alert_id``)."""

from __future__ import annotations

import gc
import hmac
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


def guarded(handler):  # never a traceback
    def endpoint(request: Request) -> HTMLResponse:
        try:
            return handler(request)
        except (BadRequest, PerflabError) as error:
            return _failure(error)
    return endpoint


#: the young generation's size before a collection in the server: a page builds its model of
#: many thousand objects at once (a fleet's history page: 20,000 points, their runs and
#: values), and at Python's 700 the collector walked them again and again and freed nothing
GC_THRESHOLDS = (100_000, 50, 100)


def server_collector() -> None:
    """The cycle collector as a long-lived dashboard wants it (call once, after start-up's
    imports): what start-up made is frozen out of every collection, and young objects are
    collected per GC_THRESHOLDS. History page at 10^7 samples, warm: 0.93-0.98 s with
    Python's defaults, 0.69-0.71 s so (bench/README.md, "The collector")."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


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
