"""What `perflab run` and `perflab ab` share: the --shell spelling, durations, exports."""

from __future__ import annotations

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
    """--export-NAME FILE for each of hyperfine's layouts (formats.hyperfine_export.EXPORTS)."""
    from perflab.formats.hyperfine_export import EXPORTS
    for name in reversed(EXPORTS.names):   # click lists options in the order they are written
        function = click.option(f"--export-{name}", metavar="FILE", type=click.Path(dir_okay=False),
                                help=f"After the run, write {EXPORTS[name].help}.")(function)
    return function


def exports_of(export_json: str | None, export_csv: str | None, export_markdown: str | None) -> Exports:
    """The --export-* options, their files checked writable before anything runs."""
    exports = Exports(json=export_json, csv=export_csv, markdown=export_markdown)
    for path in exports.asked().values():
        check_output(path)
    return exports


def write_exports(store, run_id: int, exports: Exports) -> None:
    """The --export-* files of a finished run."""
    if not exports.asked():
        return
    from perflab.formats.hyperfine_export import EXPORTS, hyperfine_results
    run = store.runs.resolve(str(run_id))
    results = hyperfine_results(run, store.samples.rows(run.id))
    for fmt, path in exports.asked().items():
        write_output(path, EXPORTS[fmt].render(results))
