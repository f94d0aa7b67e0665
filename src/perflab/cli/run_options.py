"""What `perflab run` and `perflab ab` share: the --shell spelling, durations, exports."""

from __future__ import annotations

from typing import Any

import click

from perflab.cli.common import check_output, write_output
from perflab.model.errors import UsageError
from perflab.model.run_request import Exports


class ShellSpelling(click.Command):
    """Remembers whether ``--`` was given: words after it are a command, never a workload.
    ``--shell=SHELL`` (hyperfine's spelling) names the shell; ``--shell`` alone stays a flag,
    so ``--shell 'make -j4'`` keeps its command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["perflab.dashdash"] = "--" in args
        end = args.index("--") if "--" in args else len(args)
        words: list[str] = []
        for word in args[:end]:
            if word.startswith("--shell="):
                if not word.removeprefix("--shell=").strip():
                    raise UsageError("--shell= names no shell: --shell alone runs /bin/sh, --shell=bash that shell")
                words += ["--shell-program", word.removeprefix("--shell=")]
            else:
                words.append(word)
        return super().parse_args(ctx, words + args[end:])


def parse_duration(text: str, option: str) -> float:
    """``90``, ``30s``, ``10m``, ``1h`` -> seconds."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise UsageError(f"bad {option} {text!r}: expected a duration like 30s, 10m or 1h") from None
    if not 0 < value < float("inf"):
        raise UsageError(f"{option} must be positive, got {text}")
    return value


def export_options(function):
    """--export-NAME FILE for each of hyperfine's layouts (formats.hyperfine_export.EXPORTS);
    the command reads them with exports_of."""
    from perflab.formats.hyperfine_export import EXPORTS
    for name in reversed(EXPORTS.names):   # click lists options in the order they are written
        function = click.option(f"--export-{name}", _parameter(name), metavar="FILE",
                                type=click.Path(dir_okay=False),
                                help=f"After the run, write {EXPORTS[name].help}.")(function)
    return function


def _parameter(name: str) -> str:
    return "export_" + name.replace("-", "_")


def exports_of(params: dict[str, Any]) -> Exports:
    """The --export-* options among a command's ``params`` (format name -> file, those given),
    their files checked writable before anything runs."""
    from perflab.formats.hyperfine_export import EXPORTS
    exports = {name: params[_parameter(name)] for name in EXPORTS.names if params.get(_parameter(name))}
    for path in exports.values():
        check_output(path)
    return exports


def write_exports(store, run_id: int, exports: Exports) -> None:
    """The --export-* files of a finished run."""
    if not exports:
        return
    from perflab.formats.hyperfine_export import EXPORTS, hyperfine_results
    run = store.runs.resolve(str(run_id))
    results = hyperfine_results(run, store.samples.rows(run.id))
    for fmt, path in exports.items():
        write_output(path, EXPORTS[fmt].render(results))
