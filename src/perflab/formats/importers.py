"""The registry of result-file importers: ``perflab import KIND``'s choices and help.

Each importer lives in its own module (``perflab.formats.<module>``) with ``NAME``,
``DESCRIPTION`` and ``parse(path, *, ignore_failure=False, progress=None) -> ImportedFile``
(``progress(bytes read, file size)`` while the file is checked). The list
below names them without importing them, so the CLI starts without loading pydantic.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab.model.errors import UsageError

if TYPE_CHECKING:
    from perflab.formats.common import ImportedFile


@dataclass(frozen=True)
class Importer:
    name: str
    description: str
    module: str

    def parse(self, path: str | os.PathLike[str], *, ignore_failure: bool = False,
              progress: Callable[[int, int], None] | None = None) -> ImportedFile:
        parse = importlib.import_module(self.module).parse
        result: ImportedFile = parse(path, ignore_failure=ignore_failure, progress=progress)
        return result


IMPORTERS: dict[str, Importer] = {i.name: i for i in (
    Importer("hyperfine", "hyperfine --export-json: times and memory per run, parameter scans",
             "perflab.formats.hyperfine"),
    Importer("pyperf", "pyperf -o FILE (JSON, .gz too): values of every run, warm-ups dropped",
             "perflab.formats.pyperf"),
)}

KINDS = tuple(IMPORTERS)


def parse_file(kind: str, path: str | os.PathLike[str], *, ignore_failure: bool = False,
               progress: Callable[[int, int], None] | None = None) -> ImportedFile:
    """Parse a ``kind`` result file (a name of IMPORTERS); UsageError if malformed."""
    if kind not in IMPORTERS:
        raise UsageError(f"unknown import kind {kind!r}", hint=f"choose one of {', '.join(KINDS)}")
    return IMPORTERS[kind].parse(path, ignore_failure=ignore_failure, progress=progress)


__all__ = ["IMPORTERS", "KINDS", "Importer", "parse_file"]
