"""A rerun job's measuring step: its rounds recorded, then attached to the alerts that asked.

Run by a worker as ``python -m perflab.fleet.rerun_rounds SPEC`` (a child process, as every
step of a job: fleet/execution.py), SPEC a JSON file: the store, the rounds in the order to
measure them (each its side's built tree and RunRequest document, and its label) and the alerts, who and
note the runs are attached with. One process records every round with the record service
(a fresh interpreter per round, its imports and then the settle pause after them, cost more
than the round itself) and attaches them all once every round is recorded: a round that
fails stops the rest and attaches nothing. A mistake ends as one line and an exit code.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import Any


def measure(spec: dict[str, Any]) -> None:
    """Record the spec's rounds in order, each in its tree; then attach each to every alert."""
    from perflab.analysis.alerts import attach_evidence
    from perflab.analysis.reproduce import with_option
    from perflab.execute import record
    from perflab.model.run_request import RunRequest
    from perflab.render.progress import NullProgress
    from perflab.store import Store

    def warn(message: str) -> None:
        print(f"perflab: warning: {message}", file=sys.stderr)

    with Store(spec["db"], create=True) as store:
        for one in spec["rounds"]:
            os.chdir(one["tree"])
            with open(one["request"], encoding="utf-8") as f:
                request = RunRequest.from_json(json.load(f))   # its side's: the round's label is its own
            recorded = request.identity.command_line   # the robot's run line, with the round's label
            request = replace(request, identity=replace(
                request.identity, label=one["label"],
                command_line=tuple(with_option(list(recorded), "--label", one["label"])) if recorded else None))
            record.record(store, request, lambda plans: NullProgress(), warn)
        for alert_id in spec["alerts"]:
            for one in spec["rounds"]:
                attach_evidence(store, alert_id, one["label"], who=spec["who"], note=spec["note"])


def main(argv: list[str]) -> None:
    from perflab.model.errors import PerflabError, RunInterrupted
    try:
        with open(argv[0], encoding="utf-8") as f:
            measure(json.load(f))
    except PerflabError as error:
        sys.exit(f"perflab: {error}")
    except RunInterrupted as stop:
        print(f"perflab: {stop}", file=sys.stderr)
        sys.exit(stop.exit_code)


if __name__ == "__main__":
    main(sys.argv[1:])
