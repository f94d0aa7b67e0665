"""The perflab command line: parse, call one function, render, set the exit code."""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys

import click

from perflab import __version__
from perflab.cli.common import COMMAND_LINE, Context, with_help_formatter
from perflab.model.errors import EXIT_ENVIRONMENT, EXIT_INTERRUPTED, EXIT_USAGE, PerflabError, RunInterrupted

# what would break the one line of an error, echoed from a value the user gave (a label with
# a carriage return): shown escaped, as repr() shows it
_LINE_BREAKING = {c: repr(chr(c))[1:-1] for c in [*range(0x20), 0x7F, 0x85, 0x2028, 0x2029] if c != 0x09}


def _fail(message: str, code: int) -> None:
    click.echo(f"perflab: error: {message.translate(_LINE_BREAKING)}", err=True)
    sys.exit(code)


# errors of a path as typed (a name longer than the file system holds, a loop of links) and of
# a full disk, wherever a command meets them: one line, not a traceback
_OS_ERRORS = {errno.ENAMETOOLONG: EXIT_USAGE, errno.ELOOP: EXIT_USAGE, errno.ENOSPC: EXIT_ENVIRONMENT,
              errno.EDQUOT: EXIT_ENVIRONMENT}


def _os_error(error: OSError) -> None:
    name = error.filename if isinstance(error.filename, str) else None
    shown = f"{name[:40]}...({len(name)} characters)" if name and len(name) > 60 else name
    what = "disk full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else error.strerror
    _fail(f"{what}: {shown}" if shown else f"{what}", _OS_ERRORS[error.errno or 0])


def main(argv: list[str] | None = None) -> None:
    """Entry point: every user mistake ends as one line on stderr and an exit code."""
    COMMAND_LINE[:] = sys.argv[1:] if argv is None else argv
    collecting = gc.isenabled()
    gc.disable()   # see _LONG_LIVED: the command turns it back on if it runs long
    try:
        cli.main(args=argv, prog_name="perflab", standalone_mode=False)
    except PerflabError as error:
        _fail(str(error), error.exit_code)
    except RunInterrupted as stop:
        click.echo(f"perflab: {stop}; finish it with 'perflab run --resume {stop.run_id}'", err=True)
        sys.exit(stop.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", EXIT_INTERRUPTED)
    except click.exceptions.NoArgsIsHelpError as asked:
        # bare `perflab` (or a group without its subcommand) asks for help: the help as
        # --help prints it, with its line breaks, on stdout, and success
        click.echo(asked.format_message())
        sys.exit(0)
    except click.ClickException as error:
        _fail(error.format_message().replace("\n", " "), error.exit_code or EXIT_USAGE)
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # `perflab export ... | head`: the reader left; that is not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except OSError as error:
        if error.errno not in _OS_ERRORS:
            raise
        _os_error(error)
    finally:
        if collecting:
            gc.enable()


# -- the commands: name -> ("module:function" under perflab.cli, its one-line summary) -----
# (click's LazyGroup pattern) `perflab --help` lists them from here and imports none; a command
# loads only its own module, which keeps numpy, scipy and the store inside its functions.
_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("record:run", "Run commands, workloads or suites; record every sample."),
    "runs": ("record:runs", "One line per run: id, label, commit, host, when, status."),
    "show": ("record:show", "A run's environment and each point's statistics."),
    "export": ("record:export", "A run's raw samples, one row per value."),
    "ab": ("ab:ab", "A/B of two commands until a sequential test decides."),
    "calibrate": ("calibrate:calibrate", "Record K replicate runs; teach this host its run-to-run spread."),
    "compare": ("compare:compare", "Compare runs, the points of a run, or its commands."),
    "import": ("compare:import_", "Import another tool's result file as a run."),
    "workloads": ("machine:workloads", "Built-in workloads and whether each can run here."),
    "doctor": ("machine:doctor", "This machine as a benchmark host: noise, fixes, host model."),
    "profile": ("profile:profile", "A run's profile: self and children % per symbol."),
    "flamegraph": ("profile:flamegraph", "Write a flame graph of a run's profile (or a diff)."),
    "history": ("history:history", "A metric's series in commit order, with change points."),
    "changes": ("history:changes", "Every detected change of every series, largest first."),
    "report": ("history:report", "Reports written for people: 'perflab report change ID'."),
    "changepoints": ("changepoints:changepoints", "Change points of the series in a CSV or JSON file."),
    "bisect": ("bisect:bisect", "Find the first commit that changed the performance."),
    "verdict": ("bisect:verdict", "Is run B like the known-good run A? For `git bisect run`."),
    "alerts": ("alerts:alerts", "Regression alerts from change points, with their state."),
    "alert": ("alerts:alert", "Show one alert and its history, or triage it."),
    "serve": ("serve:serve", "A web dashboard of the store (read-only unless --token)."),
    "worker": ("fleet:worker", "Take jobs from the broker, one at a time."),
    "submit": ("fleet:submit", "Queue a run on a host or a class of machines."),
    "jobs": ("fleet:jobs", "The fleet's jobs, one line each; show, cancel or wait."),
    "watch": ("fleet:watch", "The regression robot: benchmark each new commit."),
    "notify": ("notify:notify", "Mail and post the alerts' reports; the outbox (--list)."),
}

# The commands that may run for minutes or for ever, and keep CPython's cyclic garbage
# collector on. The others are short processes that build acyclic data (arrays, rows, report
# models): the collector, triggered every 700 allocations, walks those objects again and
# again and frees nothing (about a tenth of `compare`'s CPU on a million samples;
# bench/README.md), so `main` runs them with it off, and their exit frees all.
_LONG_LIVED = frozenset({"run", "ab", "calibrate", "doctor", "bisect", "serve", "worker", "submit", "jobs",
                         "watch"})


class LazyGroup(click.Group):
    """A group whose commands are imported from ``_COMMANDS`` on first use."""

    context_class = Context

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        if cmd_name in _LONG_LIVED:
            gc.enable()
        target, summary = _COMMANDS[cmd_name]
        module, name = target.split(":")
        command = getattr(importlib.import_module(f"perflab.cli.{module}"), name)
        assert isinstance(command, click.Command), command
        command.short_help = summary
        return with_help_formatter(command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in sorted(_COMMANDS.items())])


# help as wide as the terminal, up to 100 columns (80 in a pipe)
@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", metavar="PATH|URL", help="Database file or PostgreSQL URL "
              "(default: $PERFLAB_DB, else $XDG_DATA_HOME/perflab/perflab.db).")
@click.version_option(version=__version__, prog_name="perflab")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """perflab: run benchmarks, keep every sample, compare with statistics you can trust.

    \b
      perflab run -n 20 -- ./tool in.dat      a command, or a built-in workload
      perflab run 'sleep 0.01' 'sleep 0.02'   several commands, interleaved
      perflab ab --base CMD --cand CMD        stop as soon as the answer is clear
      perflab compare BASE CAND               runs (ids or labels), marked changes
      perflab show RUN                        a run: its environment and statistics

    'perflab COMMAND --help' says more about each.
    """
    if db is not None:
        from perflab.store.location import check_given
        check_given(db)
    ctx.obj = {"db": db}


if __name__ == "__main__":  # pragma: no cover
    main()
