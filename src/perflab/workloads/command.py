"""The ``command`` workload: any program, timed from outside as hyperfine does."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.params import placeholders, substitute
from perflab.model.records import COMMAND_METRICS, Measurement, MetricInfo, ProcessResult, SampleStatus
from perflab.workloads.base import Invocation, SampleContext, Workload
from perflab.workloads.resolve import resolve_program

SHELL = "/bin/sh"

METRICS = list(COMMAND_METRICS)


# bash syntax that a POSIX sh (dash) reads differently, without an error
_BASH_ONLY = [
    (re.compile(r"&>"), "'&>' (dash runs the command in the background and times nothing)"),
    (re.compile(r"\|&"), "'|&'"),
    (re.compile(r"\[\["), "'[['"),
    (re.compile(r"[<>]\("), "process substitution '<(...)'"),
    (re.compile(r"(?<![{$])\{[^{}\s,]*,[^{}\s]*\}(?!\})"), "brace expansion '{a,b}'"),
    (re.compile(r"\{\d+\.\.\d+\}"), "sequence expansion '{1..3}'"),
    (re.compile(r"\$'"), "$'...' quoting"),
]
_POSIX_SHELLS = {"sh", "dash", "ash", "busybox", "posh"}


def bash_only_syntax(line: str) -> str | None:
    """The first bash-only construct in a shell line, described; None if there is none."""
    for pattern, what in _BASH_ONLY:
        if pattern.search(line):
            return what
    return None


# what only a shell understands: operators and redirections (outside quotes), and the
# first words a shell runs itself
_SHELL_OPERATOR_CHARS = set("();<>|&")
_SHELL_BUILTINS = {"cd", "export", "source", ".", "set", "unset", "alias", "eval", "exec", "ulimit",
                   "umask", "for", "if", "while", "until", "case", "function", "{", "!"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def shell_syntax(line: str) -> str | None:
    """The first operator or redirection (``&&``, ``|``, ``>``, ``;`` ...) outside quotes in
    ``line``, described; None if there is none. Without a shell such a word would reach
    the program as an argument."""
    previous = ""
    # posix=False keeps the quotes on a quoted word, so a quoted '|' is not an operator
    for token in shlex.shlex(line, posix=False, punctuation_chars=True):
        if set(token) <= _SHELL_OPERATOR_CHARS and not previous.endswith("\\"):
            return f"'{token}'"
        previous = token
    return None


def shell_word(word: str) -> str | None:
    """``word`` as the first word of a line, when only a shell runs it: a builtin or keyword
    (``cd``, ``export``, ``for``) or a variable assignment (``LC_ALL=C``); None otherwise."""
    if word in _SHELL_BUILTINS:
        return f"the shell builtin '{word}'"
    if _ASSIGNMENT.match(word):
        return f"the variable assignment '{word}'"
    return None


def shell_path(shell: str | bool | None) -> str | None:
    """``--shell`` alone (True) is /bin/sh; a name (``bash``) is looked up in PATH."""
    if not shell:
        return None
    if shell is True:
        return SHELL
    return resolve_program(str(shell), None)


class CommandWorkload(Workload):
    """Runs ``argv`` (or one shell line with ``shell`` set) with ``{name}`` placeholders.

    In shell mode the shell's own start-up cost (``shell_overhead``: wall, user, system
    seconds, measured by the executor) is subtracted, as hyperfine does.
    """

    name = "command"
    description = "any command, timed from outside (wall, user, system time, peak RSS)"
    metrics: list[MetricInfo] = METRICS  # the same for every command

    def __init__(self, argv: list[str], *, shell: str | bool | None = None, benchmark: str | None = None,
                 ignore_failure: bool = False, path: str | None = None):
        if not argv:
            raise UsageError("no command to run", hint="put it after --, e.g. perflab run -- ./mytool")
        self.argv = list(argv)
        self.shell = shell_path(shell)   # the shell's path, or None: no shell
        self.ignore_failure = ignore_failure
        self.shell_overhead = (0.0, 0.0, 0.0)
        self._benchmark = benchmark or self.command_text
        self._path = path
        program = self.shell or self.argv[0]
        # Placeholders in the program name are resolved per point; others once, now.
        self._static_executable = None if placeholders(program) else resolve_program(program, path)

    def syntax_warning(self) -> str | None:
        """A warning when a line meant for bash is run by a POSIX sh (dash on Debian)."""
        if not self.shell or os.path.basename(os.path.realpath(self.shell)) not in _POSIX_SHELLS:
            return None
        what = bash_only_syntax(" ".join(self.argv))
        if what is None:
            return None
        return (f"{self.command_text!r} uses bash syntax {what} but runs under {self.shell} "
                f"({os.path.realpath(self.shell)}); use --shell=bash")

    @property
    def command_text(self) -> str:
        return self.argv[0] if self.shell and len(self.argv) == 1 else shlex.join(self.argv)

    @property
    def benchmark(self) -> str:
        return self._benchmark

    def validate(self, sweep: dict[str, list[Any]]) -> None:
        for word in self.argv:
            unknown = placeholders(word) - set(sweep)
            if unknown:
                name = sorted(unknown)[0]
                raise UsageError(f"unknown placeholder {{{name}}} in the command",
                                 hint=f"define it with -p {name}=..., or write {{{{ }}}} for a literal brace")
        if self._static_executable is None:
            from perflab.model.params import cartesian
            for params in cartesian(sweep):
                self.invocation(params)

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        return dict(params)  # a command's parameters are whatever the user swept

    def invocation(self, params: dict[str, Any]) -> Invocation:
        words = [substitute(word, params) for word in self.argv]
        if self.shell:
            line = " ".join(words)
            return Invocation(self.shell, [self.shell, "-c", line], description=line)
        executable = self._static_executable or resolve_program(words[0], self._path)
        return Invocation(executable, words, description=shlex.join(words))

    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        if result.timed_out:
            return [Measurement("time", None, "s", SampleStatus.TIMEOUT, result.describe_failure())]
        note = "" if result.ok else result.describe_failure()
        if not result.ok and not self.ignore_failure:
            return [Measurement("time", None, "s", SampleStatus.FAILED, note)]
        if self.shell and result.wall_s <= self.shell_overhead[0]:
            # hyperfine clamps to 0 here; a time of 0 is a wrong number, not a fast command
            return [Measurement("time", None, "s", SampleStatus.INVALID,
                                f"took {1e3 * result.wall_s:.3g} ms, no longer than the shell's measured start-up "
                                f"({1e3 * self.shell_overhead[0]:.3g} ms): nothing is left to time; run it without "
                                "--shell")]
        wall, user, system = (max(0.0, value - overhead) for value, overhead in
                              zip((result.wall_s, result.user_s, result.system_s), self.shell_overhead))
        values = [
            Measurement("time", wall, "s", note=note),
            Measurement("user", user, "s", note=note),
            Measurement("system", system, "s", note=note),
        ]
        if result.max_rss_bytes is not None:
            values.append(Measurement("max_rss", float(result.max_rss_bytes), "B", note=note))
        return values

    def spec(self) -> dict[str, Any]:
        return {"workload": self.name, "argv": self.argv, "shell": self.shell,
                "benchmark": self._benchmark, "ignore_failure": self.ignore_failure}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CommandWorkload:
        return cls(spec["argv"], shell=spec["shell"], benchmark=spec["benchmark"],
                   ignore_failure=spec["ignore_failure"])
