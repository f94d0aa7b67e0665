"""A bisect job's step: the alerts' range bisected on this host, its answer attached to them.

Run by a worker as ``python -m perflab.fleet.bisect_job SPEC`` (a child process, as every
step of a job: fleet/execution.py), SPEC a JSON file: the store, the repository, good and
bad, the build and run lines, the run timeout, the job's id (bisect's runs are stored as the
job's: ``perflab jobs show``) and the alerts, with who, the answer is attached to
(analysis/alert_bisects.py). Prints the bisect as `perflab bisect` does; exit 0 when it found
the commit, 1 when it found none (the answer is attached either way), a mistake as one line.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def bisect_and_attach(spec: dict[str, Any]) -> bool:
    """Bisect the spec's range, print the result, attach it to the spec's alerts; found?"""
    from perflab.analysis.alert_bisects import attach_answer
    from perflab.analysis.bisect import BisectOptions, bisect, stored_metric
    from perflab.execute.bisect_record import BisectRecorder, new_label
    from perflab.model.report.bisect import FOUND
    from perflab.render.bisect import render_bisect
    from perflab.store import Store

    options = BisectOptions(build=spec["build"], run=spec["run"], timeout=spec.get("run_timeout"))
    with Store(spec["db"], create=True) as store:
        recorder = BisectRecorder(store, spec["repo"], new_label(), stored_metric(options), spec["run"],
                                  spec["build"], options.timeout, job_id=spec["job"])
        result = bisect(spec["repo"], spec["good"], spec["bad"], options,
                        lambda line: print(f"perflab: {line}", file=sys.stderr, flush=True), recorder)
        print(render_bisect(result), end="", flush=True)
        attach_answer(store, spec["alerts"], result, job=spec["job"], host=spec["host"], who=spec["who"])
    if result.outcome != FOUND:
        print(f"perflab: {result.message}", file=sys.stderr)
    return result.outcome == FOUND


def main(argv: list[str]) -> None:
    from perflab.model.errors import PerflabError, RunInterrupted
    try:
        with open(argv[0], encoding="utf-8") as f:
            found = bisect_and_attach(json.load(f))
    except PerflabError as error:
        sys.exit(f"perflab: {error}")
    except RunInterrupted as stop:
        print(f"perflab: {stop}", file=sys.stderr)
        sys.exit(stop.exit_code)
    sys.exit(0 if found else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
