"""``perflab import``: another tool's result file becomes one finished perflab run.

The file is checked completely first (``perflab.formats``, a first reading that keeps no
samples); only a well-formed file reaches the store, and the store writes the run, its
points, samples, metric metadata and series in one transaction (``Store.import_run``) as
the samples are read again: a failed import (or a file changed between the readings)
writes nothing. bench/import_2m measures the memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from perflab.formats.common import ImportedFile
from perflab.formats.importers import parse_file
from perflab.model.errors import UsageError
from perflab.model.records import UNKNOWN_HOSTS, MetricInfo, RunStatus
from perflab.store import Store


def import_file(store: Store, source: str | ImportedFile, *args: str | os.PathLike[str],
                label: str | None = None, ignore_failure: bool = False,
                progress: Callable[[int, int], None] | None = None, host: str | None = None) -> int:
    """Import a result file as one run; the new run's id.

    Either ``import_file(store, kind, path, label)`` (parses, then writes) or
    ``import_file(store, parsed, label)`` with a file already parsed by
    ``formats.importers.parse_file`` (so the CLI can reject a malformed file before it opens
    the database). ``label`` may also be given by keyword; ``progress(written, total)``
    hears of the repetitions written, a batch at a time. ``host``: the machine the file
    was recorded on, where the file does not say (else it stays unknown: such a run is
    never a replicate of another).
    """
    rest = list(args)
    if isinstance(source, ImportedFile):
        parsed = source
    else:
        if not rest:
            raise TypeError("import_file(store, kind, path, label): the path is missing")
        parsed = parse_file(source, rest.pop(0), ignore_failure=ignore_failure)
    if rest:
        if label is not None or len(rest) > 1:
            raise TypeError("import_file: too many arguments")
        label = os.fspath(rest.pop())
    if label is None or not str(label).strip():
        raise UsageError("an imported run needs a label", hint="pass --label NAME")
    if host is not None and host.strip() and parsed.host in UNKNOWN_HOSTS:
        parsed = replace(parsed, host=host.strip())
    return write_import(store, parsed, str(label).strip(), progress)


def write_import(store: Store, parsed: ImportedFile, label: str,
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Write a parsed file as one complete run, all or nothing; the samples are made as
    they are written (a generator), so memory does not grow with their number."""
    samples = ((bench.point, repetition, measurements,
                bench.measured_at[repetition] if repetition < len(bench.measured_at) else None)
               for bench in parsed.benchmarks
               for repetition, measurements in enumerate(bench.repetitions))
    total = sum(bench.n for bench in parsed.benchmarks)
    metric_infos: dict[str, Sequence[MetricInfo]] = {}
    for bench in parsed.benchmarks:
        known = metric_infos.get(bench.point.benchmark, ())
        metric_infos[bench.point.benchmark] = (*known, *(info for info in bench.metrics if info not in known))
    return store.imports.add_run(label=label, host=parsed.host, request=parsed.request,
                                 environment=parsed.environment, samples=samples,
                                 metric_infos=metric_infos, status=RunStatus.COMPLETE,
                                 progress=None if progress is None else lambda written: progress(written, total))
