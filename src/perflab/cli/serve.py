"""perflab serve: the dashboard (runs, a run, compare, history, changes, alerts); read-only
unless --token allows alert triage."""

from __future__ import annotations

import ipaddress
import os
import socket

import click

from perflab.cli.common import open_store, warn
from perflab.model.errors import EnvironmentProblem, UsageError


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind: loopback by default; the dashboard has no login.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option("--token", envvar="PERFLAB_SERVE_TOKEN", metavar="T",
              help="Allow alert triage (POST) to requests carrying this token (header X-Perflab-Token, "
                   "or the form's token field); without it the dashboard is read-only. "
                   "[env: PERFLAB_SERVE_TOKEN, which 'ps' does not show]")
@click.option("--commit-url", envvar="PERFLAB_COMMIT_URL", metavar="TEMPLATE",
              help="Link every commit to its page: an http(s) URL with {sha} where the full hash goes, "
                   "e.g. https://git.kernel.org/torvalds/c/{sha}. [env: PERFLAB_COMMIT_URL]")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, token: str | None, commit_url: str | None) -> None:
    """A dashboard over the store (--db) at http://HOST:PORT/: read-only unless --token.

    \b
      perflab serve --port 8080     then open http://127.0.0.1:8080/
    """
    import uvicorn

    from perflab.web.app import create_app
    from perflab.web.commits import check_url_template
    from perflab.web.pages import server_collector

    if token is not None and len(token) < 8:
        raise UsageError("--token must be at least 8 characters: it is the only guard of alert triage")
    commit_url = check_url_template(commit_url)
    db = ctx.find_root().obj["db"]
    with open_store(ctx, create=False):  # a missing or unreadable store fails here, in one line
        pass
    address = _address(host)
    try:  # a port in use or an address not ours: one line, before uvicorn logs a traceback
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        with socket.create_server((str(address), port), family=family):
            pass
    except OSError as error:
        raise EnvironmentProblem(f"cannot listen on {host}:{port}: {os.strerror(error.errno or 0)}") from None
    if not address.is_loopback:
        warn(f"{host} is reachable from other machines: the dashboard has no login, anyone there reads the store")
    click.echo(f"perflab: serving the dashboard on http://{host}:{port}/ (Ctrl-C stops)", err=True)
    app = create_app(db, token=token, commit_url=commit_url)
    server_collector()   # after create_app's imports, which it freezes out of every collection
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address --host names: an IP address, or a host name this machine resolves."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UsageError(f"bad --host {host[:60]!r}: not an IP address or host name") from None
    return ipaddress.ip_address(str(found[0][4][0]).partition("%")[0])


COMMANDS = [serve]
