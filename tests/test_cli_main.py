"""The top-level CLI: bare `perflab` and `perflab --help` (real subprocesses of the CLI)."""

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
