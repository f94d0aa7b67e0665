"""The formats of ``perflab history`` and ``perflab changes``: one registry each.

``HISTORY_FORMATS``: text and json (render.history) and the html page
(render.history_html, imported only when asked for), which also takes each commit's
subject and each change's report text. ``CHANGES_FORMATS``: text and json.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.report.history import ChangeList, History
from perflab.render.history import changes_json, history_json, render_changes, render_history

HistoryLayout = Callable[[History, Mapping[str, str], Mapping[str, str], bool], str]


@dataclass(frozen=True, kw_only=True)
class HistoryFormat(OutputFormat[HistoryLayout]):
    """A layout of ``history``: ``render(history, subjects, reports, every_sample)``, the last
    three (commit -> subject, change id -> its 'report change' text, every sample drawn however
    many) asked for only where ``linked``."""

    linked: bool = False


def _history_text(history: History, subjects: Mapping[str, str], reports: Mapping[str, str],
                  every_sample: bool) -> str:
    return render_history(history)


def _history_json(history: History, subjects: Mapping[str, str], reports: Mapping[str, str],
                  every_sample: bool) -> str:
    return history_json(history)


def _history_html(history: History, subjects: Mapping[str, str], reports: Mapping[str, str],
                  every_sample: bool) -> str:
    from perflab.render.history_html import render_history_html
    return render_history_html(history, subjects, reports=reports, every_sample=every_sample)


HISTORY_FORMATS: FormatRegistry[HistoryFormat] = FormatRegistry(
    HistoryFormat(name="text", help="a sparkline and a table of commits per series, with change points",
                  render=_history_text),
    HistoryFormat(name="json", help="every point, segment and change, stable keys", render=_history_json),
    HistoryFormat(name="html", help="every sample (each commit's median and range past a budget of "
                          "samples), segment centres and change points (a click on one shows its report), "
                          "one self-contained page", render=_history_html, linked=True),
)

CHANGES_FORMATS: FormatRegistry[OutputFormat[Callable[[ChangeList], str]]] = FormatRegistry(
    OutputFormat(name="text", help="one line per change, largest first", render=render_changes),
    OutputFormat(name="json", help="every change with its segments, test and alert, stable keys", render=changes_json),
)
