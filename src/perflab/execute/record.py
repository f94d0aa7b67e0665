"""The one way a run is made: ``record(store, request, ...)`` and ``resume``.

`perflab run`, `ab`, `calibrate` and a fleet worker build a RunRequest and call these;
the CLI only parses options into the request and renders the stored result. Everything
a user can get wrong is checked while planning, before the store is touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from perflab.execute import identity
from perflab.execute.ab_rule import AbRule, ab_limits, conclude
from perflab.execute.run_plan import RunPlan, plans_of
from perflab.execute.runner import Progress, Runner, StopLimits
from perflab.execute.targets import plans_for
from perflab.model import params as sweeps
from perflab.model.errors import UsageError
from perflab.model.records import Point, RunInfo
from perflab.model.run_request import Identity, RunRequest, SweepText
from perflab.store import Store

RunId = int
Warn = Callable[[str], None]
# chosen once the plans are known (a live view for several commands, a size announcement)
ProgressFor = Callable[[list[RunPlan]], Progress]


def plan(request: RunRequest) -> list[RunPlan]:
    """The request's plans, every option checked; nothing is run or stored."""
    if request.target is None:
        raise UsageError("nothing to run", hint="put the command after --, e.g. perflab run -- ./mytool")
    return plans_for(request.target, sweep=parse_sweep(request.sweep), options=request.options,
                     repetitions=request.repetitions)


def parse_sweep(text: SweepText) -> dict[str, list]:
    """-p, -L, -P and -D as one sweep, with this machine's variables (nproc, ...)."""
    from perflab.workloads.suite import machine_variables
    if text.step and not text.scans:
        raise UsageError("-D/--parameter-step-size needs -P")
    variables = machine_variables() if text.params else {}
    assignments = [sweeps.parse_assignment(p, variables) for p in text.params]
    assignments += [sweeps.parse_hyperfine_list(n, v) for n, v in text.lists]
    assignments += [sweeps.parse_hyperfine_scan(n, lo, hi, text.step) for n, lo, hi in text.scans]
    return sweeps.merge(assignments)


@dataclass(frozen=True)
class Prepared:
    """A request with its identity resolved and its plans checked: ready to record."""

    request: RunRequest
    plans: list[RunPlan]


def prepare(request: RunRequest) -> Prepared:
    """Everything that can refuse a request (options, target, repository), before the store
    is opened: a refused run leaves nothing behind."""
    plans = plan(request)
    return Prepared(replace(request, identity=resolve_identity(request)), plans)


def record(store: Store, request: RunRequest | Prepared, progress: ProgressFor, warn: Warn) -> RunId:
    """Plan, resolve the identity (label, commit), run and store one run of ``request``."""
    prepared = request if isinstance(request, Prepared) else prepare(request)
    plans, resolved = prepared.plans, prepared.request
    for run_plan in plans:
        said = getattr(run_plan.workload, "syntax_warning", lambda: None)()
        if said:
            warn(said)
    limits, rule = stop_limits(resolved)
    runner = Runner(store, plans, progress(plans), warn, stop=limits)
    run_id = runner.start(resolved)
    if rule is not None:
        conclude(store, run_id, rule, ordered_samples(runner))
    return run_id


def resume(store: Store, run: RunInfo, progress: ProgressFor, warn: Warn) -> RunId:
    """Finish an interrupted run with the plans, stop rule and seed it recorded."""
    request = run.request
    plans = plans_of(request)
    limits, rule = stop_limits(request)
    runner = Runner(store, plans, progress(plans), warn, stop=limits)
    run_id = runner.resume(run)
    if rule is not None:   # an A/B's decision, as the first attempt would have stored it
        conclude(store, run_id, rule, ordered_samples(runner))
    return run_id


def resolve_identity(request: RunRequest) -> Identity:
    """The label (default: the kernel release) and the commit, resolved in ``repo`` if given."""
    me = request.identity
    sha, describe = me.commit, me.describe
    if me.repo:
        sha, describe = identity.git_commit(me.repo, me.commit)
    return replace(me, label=me.label or identity.default_label(), commit=sha, describe=describe,
                   repo=os.path.abspath(me.repo) if me.repo else None)


def stop_limits(request: RunRequest) -> tuple[StopLimits, AbRule | None]:
    """The request's stop rule: an A/B's sequential test, or --max-time and --min-runs."""
    if request.ab is not None:
        return ab_limits(request.ab.settings)
    return StopLimits(max_time_s=request.limits.max_time_s, min_rounds=request.limits.min_rounds), None


def ordered_samples(runner: Runner) -> dict:
    """The runner's primary values of each plan's (only) point, in plan order: base first."""
    keys = [(p.workload.benchmark, Point(p.workload.benchmark, p.points[0]).key) for p in runner.plans]
    return {key: runner.samples.get(key, []) for key in keys}
