"""The top-level CLI: bare `perflab` and `perflab --help` (real subprocesses of the CLI)."""

import importlib
import importlib.metadata
import re
import subprocess
import sys

import click
from click.testing import CliRunner

import perflab
from perflab.cli.main import _COMMANDS, cli

from conftest import run_cli


def _is_the_top_level_help(result) -> list[str]:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "Usage: perflab [OPTIONS] COMMAND [ARGS]..."
    # the docstring's \b block keeps its line breaks: one example per line, indented
    examples = [line for line in lines if line.startswith("    perflab ")]
    assert [line.split()[1] for line in examples] == ["run", "run", "ab", "compare", "show"]
    # one command per line, as click lays out the listing
    listing = lines[lines.index("Commands:") + 1:]
    names = [line.split()[0] for line in listing if line.startswith("  ")]
    assert {"run", "ab", "compare", "show", "runs"} <= set(names)
    assert len(names) == len(listing)
    return lines


def test_bare_perflab_prints_its_help_with_its_line_breaks_and_exits_0():
    bare = _is_the_top_level_help(run_cli())
    assert bare == _is_the_top_level_help(run_cli("--help"))
    assert bare == _is_the_top_level_help(run_cli("-h"))


def test_a_group_without_its_subcommand_prints_that_groups_help():
    result = run_cli("report")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Usage: perflab report [OPTIONS] COMMAND [ARGS]...")
    assert "\n  change " in result.stdout


HEAVY = ("numpy", "scipy", "sqlalchemy", "plotly", "celery")


def _modules_loaded_by(*args: str) -> set[str]:
    """The modules a real `perflab ARGS` process imported."""
    code = ("import sys\nfrom perflab.cli.main import main\n"
            f"try:\n    main({list(args)!r})\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return set(result.stderr.splitlines()[-1].split())


def test_version_is_the_packages_own():
    result = run_cli("--version")
    assert (result.returncode, result.stdout) == (0, f"perflab, version {perflab.__version__}\n")
    assert importlib.metadata.version("perflab") == perflab.__version__  # pyproject reads it from there


def test_version_and_help_import_none_of_the_heavy_libraries():
    # start-up time is measured by bench/startup.py; this holds what keeps it short
    for args in (["--version"], ["--help"], ["compare", "--help"], ["run", "--help"], ["jobs", "--help"]):
        loaded = _modules_loaded_by(*args)
        assert {name.split(".")[0] for name in loaded} & set(HEAVY) == set(), args
    # the listing comes from main's table: no command's module is imported for it
    assert {name for name in _modules_loaded_by("--help") if name.startswith("perflab.cli.")} == {
        "perflab.cli.main", "perflab.cli.common"}


def test_every_command_of_every_module_is_in_the_lazy_table():
    # a command added to a module's COMMANDS but not to main._COMMANDS would vanish from the CLI
    for module_name in {target.split(":")[0] for target, _ in _COMMANDS.values()}:
        module = importlib.import_module(f"perflab.cli.{module_name}")
        for command in module.COMMANDS:
            assert cli.get_command(click.Context(cli), command.name) is command, command.name


def _every_command(group: click.Group, ctx: click.Context, path: tuple[str, ...] = ()):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _every_command(command, click.Context(command), (*path, name))


def test_help_reads_well_at_80_columns():
    runner = CliRunner()
    top = runner.invoke(cli, ["--help"], env={"COLUMNS": "80"}).output
    helps = {(): top}
    for path, _ in _every_command(cli, click.Context(cli)):
        result = runner.invoke(cli, [*path, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, (path, result.output)
        helps[path] = result.output
    for path, text in helps.items():
        lines = text.splitlines()
        if "Commands:" in lines:  # every summary whole: click cuts a long one with "..."
            listing = lines[lines.index("Commands:") + 1:]
            assert not [line for line in listing if line.endswith("...")], (path, listing)
        for line, following in zip(lines, lines[1:]):
            # no name cut at a hyphen, no "[default:" parted from its value
            assert not (line.endswith("-") and following.strip()[:1].isalnum()), (path, line, following)
            assert not line.rstrip().endswith(("[default:", "[required", "[env var:")), (path, line)
        assert not re.search(r"seeds? \d{3}|seed post", text), path  # ours; a user cannot look them up


def test_the_collector_is_off_only_for_short_commands_and_main_restores_it(capsys):
    """main() runs short commands with the cyclic GC off; the long-lived ones (named in
    _LONG_LIVED, each a real command) turn it back on; main() leaves it as it found it."""
    import gc

    from perflab.cli.main import _LONG_LIVED, main
    assert _LONG_LIVED.issubset(_COMMANDS)
    seen = {}
    for name in ("runs", "serve"):
        command = cli.get_command(click.Context(cli), name)
        seen[name] = gc.isenabled()
        assert command is not None
    assert seen == {"runs": True, "serve": True}   # get_command only ever turns it on
    assert gc.isenabled()
    main(["--version"])
    assert perflab.__version__ in capsys.readouterr().out
    assert gc.isenabled()
    gc.disable()
    try:
        main(["--version"])
        assert not gc.isenabled()   # a caller that had it off keeps it off
    finally:
        gc.enable()
