"""Progress of a run: a rich bar on a terminal, sparse plain lines otherwise, or nothing."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from perflab.model.report.live import LiveView
from perflab.render.units import format_scaled

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class NullProgress:
    def start(self, total: int, title: str) -> None:
        pass

    def advance(self, description: str) -> None:
        pass

    def stop(self) -> None:
        pass


class PlainProgress:
    """A line at most every ``interval`` seconds, for logs and CI."""

    def __init__(self, stream: TextIO = sys.stderr, interval: float = 5.0):
        self.stream = stream
        self.interval = interval
        self.total = 0
        self.done = 0
        self.started = 0.0
        self.last = 0.0
        self.title = ""

    def start(self, total: int, title: str) -> None:
        self.total, self.done, self.title = total, 0, title
        self.started = self.last = time.monotonic()
        print(f"{title}: {total} samples to run", file=self.stream, flush=True)

    def advance(self, description: str) -> None:
        self.done += 1
        now = time.monotonic()
        if now - self.last >= self.interval and self.done < self.total:
            self.last = now
            rate = self.done / (now - self.started)
            eta = (self.total - self.done) / rate if rate > 0 else 0.0
            print(f"{self.title}: [{self.done}/{self.total}] {description}, eta {eta:.0f} s",
                  file=self.stream, flush=True)

    def stop(self) -> None:
        print(f"{self.title}: {self.done}/{self.total} done in "
              f"{time.monotonic() - self.started:.1f} s", file=self.stream, flush=True)


class BarProgress:
    """rich's bar with the current point and an ETA; refreshed by rich's own thread."""

    def __init__(self) -> None:
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def start(self, total: int, title: str) -> None:
        # imported here: only a terminal pays rich's import time
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
        self.bar.start()
        self.title = title
        self.task = self.bar.add_task(title, total=total)

    def advance(self, description: str) -> None:
        assert self.bar is not None and self.task is not None
        self.bar.update(self.task, advance=1, description=f"{self.title} {description}")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


class LiveProgress(BarProgress):
    """The bar, and under it each command's n, running median and its interval, and the
    current decision of `perflab ab` (the runner sends them at most ~10 times a second)."""

    def start(self, total: int, title: str) -> None:
        super().start(total, title)
        self.view: LiveView | None = None
        assert self.bar is not None
        self.bar.stop()
        from rich.console import Console, Group
        from rich.live import Live
        outer = self

        class _Renderable:
            def __rich__(self):
                assert outer.bar is not None
                return Group(outer.bar.get_renderable(), *(_lines(outer.view) if outer.view else []))

        self.live = Live(_Renderable(), console=Console(stderr=True), transient=True, refresh_per_second=8)
        self.live.start()

    def show(self, view: LiveView) -> None:
        self.view = view

    def stop(self) -> None:
        if getattr(self, "live", None) is not None:
            self.live.stop()
        self.bar = None


def _lines(view: LiveView) -> list[str]:
    out = []
    for row in view.rows:
        (median, low, high), unit = format_scaled([row.median, row.ci_low, row.ci_high], row.unit, row.median)
        ci = "" if row.ci_low != row.ci_low else f"  95% CI [{low}, {high}]"
        out.append(f"  {row.name}: n={row.n}  median {median} {unit}{ci}")
    if view.decision:
        out.append(f"  decision: {view.decision}")
    return out


def choose_live(quiet: bool, stream: TextIO = sys.stderr):
    """Like ``choose``, with the live numbers on a terminal."""
    if not quiet and stream.isatty():
        return LiveProgress()
    return choose(quiet, stream)


def choose(quiet: bool, stream: TextIO = sys.stderr):
    """Nothing with --quiet, a bar on a terminal, plain lines otherwise."""
    if quiet:
        return NullProgress()
    if stream.isatty():
        return BarProgress()
    return PlainProgress(stream)
