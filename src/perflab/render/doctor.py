"""``perflab doctor`` as plain text: fit for a terminal, a bug report or a mailing list.

This layer sits below ``execute``, so it takes plain data: the environment snapshot
dict, and findings and event probes by their attributes (``level``, ``topic``,
``message``, ``fix``; ``supported``, ``reason``), never execute's classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perflab.render.machine import render_machine, table, text

_LEVEL_ORDER = {"warning": 0, "info": 1, "ok": 2}
_LEVEL_LABEL = {"warning": "WARN", "info": "info", "ok": "ok"}


def render_doctor(env: Mapping[str, Any], findings: Sequence[Any],
                  events: Mapping[str, Any], tools: Mapping[str, str | None],
                  catalog: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The full report; ``catalog`` maps a tool to (purpose, Debian package).

    Without ``catalog`` a missing tool is shown without an install hint.
    """
    blocks = [
        render_machine(env),
        _events(events),
        _tools(tools, catalog or {}),
        _findings(findings),
    ]
    return "\n\n".join(blocks) + "\n"


def _events(events: Mapping[str, Any]) -> str:
    if not events:
        return "perf events\n  (not probed)"
    rows = [(name, "works" if probe.supported else f"not supported — {text(probe.reason)}")
            for name, probe in events.items()]
    return "\n".join(["perf events", *table(rows)])


def _tools(tools: Mapping[str, str | None], catalog: Mapping[str, tuple[str, str]]) -> str:
    if not tools:
        return "Tools\n  (not probed)"
    rows = []
    for name, path in tools.items():
        purpose, package = catalog.get(name, ("", ""))
        status = path or (f"missing — apt-get install {package}" if package else "missing")
        rows.append((name, status, purpose))
    return "\n".join(["Tools", *table(rows)])


def _findings(findings: Sequence[Any]) -> str:
    """Warnings first, each followed by the command that fixes it."""
    if not findings:
        return "Findings\n  (none)"
    ordered = sorted(findings, key=lambda f: _LEVEL_ORDER.get(f.level, len(_LEVEL_ORDER)))
    width = max(len(label) for label in _LEVEL_LABEL.values())
    lines = ["Findings"]
    for finding in ordered:
        label = _LEVEL_LABEL.get(finding.level, finding.level)
        lines.append(f"  {label:<{width}}  {finding.topic}: {finding.message}")
        if finding.fix and finding.level != "ok":
            lines.append(f"  {'':<{width}}  fix: {finding.fix}")
    return "\n".join(lines)
