"""Errors a user can cause, each carrying the exit code docs/design.md and docs/exit-codes.md assign.

The CLI prints ``str(error)`` as one line and exits with ``error.exit_code``;
anything else that escapes is a bug and keeps its traceback.
"""

EXIT_OK = 0
EXIT_VERDICT = 1      # a regression / verdict failure when asked to gate
EXIT_USAGE = 2        # bad argument, malformed file
EXIT_ENVIRONMENT = 3  # missing tool, no permission, unsupported here
EXIT_INTERRUPTED = 130   # 128 + SIGINT
EXIT_TERMINATED = 143    # 128 + SIGTERM


class PerflabError(Exception):
    """A problem the user can fix; ``hint`` says how."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} ({self.hint})" if self.hint else base


class UsageError(PerflabError):
    """Bad argument, bad syntax, malformed input file."""

    exit_code = EXIT_USAGE


class EnvironmentProblem(PerflabError):
    """Missing tool, no permission, a kernel feature unsupported here."""

    exit_code = EXIT_ENVIRONMENT


class RunInterrupted(Exception):
    """A run stopped by Ctrl-C or SIGTERM; its finished samples are kept.

    ``exit_code`` follows the shell's convention for the signal: 130 for SIGINT,
    143 for SIGTERM."""

    def __init__(self, run_id: int, kept: int, terminated: bool = False):
        super().__init__(f"interrupted: run {run_id} keeps its {kept} finished samples")
        self.run_id = run_id
        self.kept = kept
        self.exit_code = EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
