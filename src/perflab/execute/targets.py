"""What `perflab run` was asked to run: a command, a built-in workload, or a suite file."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from perflab.execute.run_plan import RunPlan, plan_run
from perflab.model.errors import UsageError
from perflab.model.run_request import RunOptions, Target
from perflab.workloads.command import CommandWorkload, shell_syntax, shell_word
from perflab.workloads.registry import builtin, is_builtin
from perflab.workloads.suite import load_suite


def _command_flag(target: Target) -> str | None:
    """The first option given that only makes sense for a command."""
    for flag, value in (("--shell", target.shell), ("--name", target.name),
                        ("--ignore-failure", target.ignore_failure), ("-c/--command", target.commands),
                        ("--command-name", target.command_names)):
        if value:
            return flag
    return None


def plans_for(target: Target, *, sweep: dict[str, list[Any]], options: RunOptions,
              repetitions: int | None) -> list[RunPlan]:
    """Plans for the target words; everything is checked before anything runs.

    Words after ``--`` are always one command. Otherwise a first word ending in .toml is
    a suite and a built-in workload's name is that workload; words that all hold a space
    (``'sleep 0.1' 'sleep 0.2'``, hyperfine's habit) or -c options are several command
    lines, one benchmark each, interleaved round by round in one run.
    """
    words, after_dashdash, duration, command = list(target.words), target.after_dashdash, target.duration, target
    lines = list(command.commands)
    if lines and words:
        raise UsageError("give the commands either with -c/--command or as arguments, not both")
    if lines or (not after_dashdash and words and all(any(c.isspace() for c in w.strip()) for w in words)
                 and not is_builtin(words[0].split()[0])):
        return _command_lines_plans(lines or words, sweep=sweep, options=options, command=command,
                                    repetitions=repetitions, duration=duration)
    if command.command_names and not words:
        raise UsageError("no command to run", hint="give them with -c/--command")
    if command.command_names:
        raise UsageError("--command-name names the commands of -c/--command or several quoted commands",
                         hint="a single command is named with --name")
    if not words:
        raise UsageError("no command to run", hint="put it after --, e.g. perflab run -- ./mytool")
    head = words[0]
    if not after_dashdash and (head.endswith(".toml") or is_builtin(head)):
        if len(words) > 1:
            raise UsageError(f"unexpected {words[1]!r} after {head}: parameters go in -p name=values")
        flag = _command_flag(command)
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
    try:
        workload = CommandWorkload(argv, shell=command.shell, benchmark=command.name,
                                   ignore_failure=command.ignore_failure)
    except UsageError as error:
        if not command.shell and len(words) == 1 and any(c.isspace() for c in words[0].strip()):
            raise UsageError(error.args[0], hint=f"did you mean --shell -- {shlex.quote(words[0])}?") from None
        raise
    return [plan_run(workload, sweep, _with(options, repetitions))]


def _command_lines_plans(lines: list[str], *, sweep: dict[str, list[Any]], options: RunOptions,
                         command: Target, repetitions: int | None,
                         duration: float | None) -> list[RunPlan]:
    """One plan per command line; they share the options (and the seed) so they interleave."""
    if duration is not None:
        raise UsageError("--duration applies to built-in workloads; a command runs until it ends")
    if command.name and len(lines) > 1:
        raise UsageError("--name names one command; several are named with --command-name, once each")
    if command.command_names and len(command.command_names) != len(lines):
        raise UsageError(f"{len(command.command_names)} --command-name for {len(lines)} commands: "
                         "give one per command")
    names: list[str | None] = list(command.command_names) or [command.name] * len(lines)
    taken = [n or line.strip() for n, line in zip(names, lines)]
    twice = next((n for n in taken if taken.count(n) > 1), None)
    if twice is not None:
        raise UsageError(f"two commands are named {twice!r}: name them apart with --command-name")
    options = _with(options, repetitions)   # one options (one seed) for the one schedule
    plans = []
    for line, name in zip(lines, names):
        if not line.strip():
            raise UsageError("empty command: a command line is blank")
        try:
            argv = [line] if command.shell else shlex.split(line)
        except ValueError as error:
            raise UsageError(f"cannot split {line!r} into words: {error}", hint="check its quotes") from None
        construct = None if command.shell else shell_syntax(line)
        if construct:
            raise UsageError(f"{line.strip()!r}: {construct} is shell syntax, and commands run without a "
                             "shell: did you mean --shell?")
        try:
            workload = CommandWorkload(argv, shell=command.shell, benchmark=name or line.strip(),
                                       ignore_failure=command.ignore_failure)
        except UsageError as error:
            word = None if command.shell else shell_word(argv[0])
            if word:
                raise UsageError(f"{error.args[0]}: {word} needs a shell: did you mean --shell?") from None
            raise
        plans.append(plan_run(workload, sweep, options))
    return plans


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
