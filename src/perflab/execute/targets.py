"""What `perflab run` was asked to run: a command, a built-in workload, or a suite file."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any

from perflab.execute.runner import RunOptions, RunPlan, plan_run
from perflab.model.errors import UsageError
from perflab.workloads.command import CommandWorkload
from perflab.workloads.registry import builtin, is_builtin
from perflab.workloads.suite import load_suite


@dataclass(frozen=True)
class CommandChoices:
    """Options that only make sense for a command."""

    shell: bool = False
    name: str | None = None
    ignore_failure: bool = False

    def given(self) -> str | None:
        for flag, value in (("--shell", self.shell), ("--name", self.name),
                            ("--ignore-failure", self.ignore_failure)):
            if value:
                return flag
        return None


def plans_for(words: list[str], *, after_dashdash: bool, sweep: dict[str, list[Any]],
              options: RunOptions, command: CommandChoices,
              repetitions: int | None, duration: float | None) -> list[RunPlan]:
    """Plans for the target words; everything is checked before anything runs.

    Words after ``--`` are always a command. Otherwise a first word ending in .toml is
    a suite and a built-in workload's name is that workload.
    """
    if not words:
        raise UsageError("no command to run", hint="put it after --, e.g. perflab run -- ./mytool")
    head = words[0]
    if not after_dashdash and (head.endswith(".toml") or is_builtin(head)):
        if len(words) > 1:
            raise UsageError(f"unexpected {words[1]!r} after {head}: parameters go in -p name=values")
        flag = command.given()
        if flag:
            raise UsageError(f"{flag} applies to commands (after --), not to {head}")
        if head.endswith(".toml"):
            if sweep or duration is not None:
                raise UsageError("-p and --duration cannot change a suite: edit the suite file")
            return _suite_plans(head, options, repetitions)
        workload = builtin(head)
        return [plan_run(workload, _with_duration(workload.name, sweep, duration),
                         _with(options, repetitions))]
    if duration is not None:
        raise UsageError("--duration applies to built-in workloads; a command runs until it ends")
    if command.shell and not " ".join(words).strip():
        raise UsageError("empty command: the shell line is blank",
                         hint="put the command after --, e.g. perflab run --shell -- 'make -j4'")
    argv = [shlex.join(words)] if command.shell and len(words) > 1 else words
    workload = CommandWorkload(argv, shell=command.shell, benchmark=command.name,
                               ignore_failure=command.ignore_failure)
    return [plan_run(workload, sweep, _with(options, repetitions))]


def _suite_plans(path: str, options: RunOptions, repetitions: int | None) -> list[RunPlan]:
    suite = load_suite(path)
    plans = []
    for entry in suite.entries:
        entry_options = dataclasses.replace(
            options,
            repetitions=_first(repetitions, entry.repetitions, options.repetitions),
            warmup=entry.warmup if entry.warmup is not None else options.warmup,
            metrics=entry.metrics,
            timeout=entry.timeout or options.timeout)
        try:
            plans.append(plan_run(entry.workload, entry.sweep, entry_options))
        except UsageError as error:
            raise UsageError(f"{path}:{entry.line}: {error}") from None
    return plans


def _with(options: RunOptions, repetitions: int | None) -> RunOptions:
    return dataclasses.replace(options, repetitions=_first(repetitions, options.repetitions))


def _first(*values: int | None) -> int:
    return next(v for v in values if v is not None)


def _with_duration(name: str, sweep: dict[str, list[Any]], duration: float | None) -> dict[str, list[Any]]:
    if duration is None:
        return sweep
    if "duration" in sweep:
        raise UsageError("give the duration once: --duration or -p duration=...")
    return dict(sweep, duration=[duration])
