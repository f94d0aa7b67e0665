"""Named output formats: the one registry behind every command's ``--format``.

Each output family (compare, history, changes, alerts, profile, flamegraph,
changepoints, export, hyperfine's ``--export-*``) keeps one ``FormatRegistry`` next to
its renderers: its names are the CLI's choices (the first the default), its one-line
helps the CLI's ``--help``, its entries what lays the family's model out. A family whose
formats need more than a render function subclasses ``OutputFormat`` with the fields it
needs (compare's ``profile``, history's ``linked``). A renderer in a module of its own is
registered by its dotted path (``lazy``): that module may import its family's registry module
(its result types) without an import cycle, and is imported only when its format is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from perflab.model.errors import UsageError

R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class OutputFormat(Generic[R]):
    name: str
    help: str        # one line, shown by --help
    render: R        # the family's renderer: the family fixes its signature


F = TypeVar("F", bound=OutputFormat[Any])


def lazy(home: str) -> Callable[..., Any]:
    """The renderer ``'module:function'``, imported on its first call."""
    module, _, name = home.partition(":")

    def render(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    return render


class FormatRegistry(Generic[F]):
    """The formats of one output family, in the order --help lists them; the first is the default."""

    def __init__(self, *formats: F) -> None:
        if not formats:
            raise ValueError("a format registry needs at least one format")
        self._formats = {f.name: f for f in formats}

    @property
    def names(self) -> list[str]:
        return list(self._formats)

    @property
    def default(self) -> str:
        return next(iter(self._formats))

    def help(self) -> str:
        """``name: help; name: help.``, the --format option's help."""
        return "; ".join(f"{f.name}: {f.help}" for f in self._formats.values()) + "."

    def __getitem__(self, name: str) -> F:
        try:
            return self._formats[name]
        except KeyError:
            raise UsageError(f"unknown format {name!r}; choose from {', '.join(self._formats)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._formats

    def __iter__(self) -> Iterator[str]:
        return iter(self._formats)

    def __len__(self) -> int:
        return len(self._formats)
