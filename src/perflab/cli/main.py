"""The perflab command line: parse, call one function, render, set the exit code."""

from __future__ import annotations

import os
import sys

import click

from perflab.cli.common import COMMAND_LINE
from perflab.model.errors import EXIT_INTERRUPTED, EXIT_USAGE, PerflabError, RunInterrupted


def _fail(message: str, code: int) -> None:
    click.echo(f"perflab: error: {message}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every user mistake ends as one line on stderr and an exit code."""
    COMMAND_LINE[:] = sys.argv[1:] if argv is None else argv
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", metavar="PATH|URL", help="Database file or PostgreSQL URL "
              "(default: $PERFLAB_DB, else $XDG_DATA_HOME/perflab/perflab.db).")
@click.version_option(package_name="perflab")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """perflab: run benchmarks, keep every sample, compare with statistics you can trust.

    \b
      perflab run -n 20 -- ./tool in.dat      a command, or a built-in workload
      perflab run 'sleep 0.01' 'sleep 0.02'   several commands, interleaved
      perflab ab --base CMD --cand CMD        stop as soon as the answer is clear
      perflab compare BASE CAND               runs (ids or labels), marked changes
      perflab show RUN                        a run: environment, n, mean, ...

    'perflab COMMAND --help' says more about each.
    """
    ctx.obj = {"db": db}


# -- the commands, one module per group --------------------------------------------------
def _register(modules: list) -> None:
    for module in modules:
        for command in module.COMMANDS:
            cli.add_command(command)


from perflab.cli import (  # noqa: E402
    ab,
    alerts,
    bisect,
    calibrate,
    changepoints,
    compare,
    fleet,
    history,
    machine,
    profile,
    record,
    serve,
)

_register([record, ab, calibrate, compare, machine, profile, history, changepoints, bisect, alerts, serve, fleet])


if __name__ == "__main__":  # pragma: no cover
    main()
