"""Every command's --format comes from its family's registry (model.output_formats)."""

from __future__ import annotations

import pathlib
import re

import click
import pytest

from perflab.cli.main import _COMMANDS, cli
from perflab.model.errors import UsageError
from perflab.model.methods import METHOD_NAMES
from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.report.verdict import DEFAULT_VERDICT_METHOD, VERDICT_METHODS
from perflab.render.alerts import ALERT_FORMATS
from perflab.render.changepoints import CHANGEPOINT_FORMATS
from perflab.render.compare import FORMATS as COMPARE_FORMATS
from perflab.render.export import EXPORT_FORMATS
from perflab.render.flamegraph_formats import FLAMEGRAPH_FORMATS
from perflab.render.history_formats import CHANGES_FORMATS, HISTORY_FORMATS
from perflab.render.profile import PROFILE_FORMATS

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "perflab"

# the registry each command's --format must come from
EXPECTED = {"compare": COMPARE_FORMATS, "history": HISTORY_FORMATS, "changes": CHANGES_FORMATS,
            "alerts": ALERT_FORMATS, "alert": ALERT_FORMATS, "profile": PROFILE_FORMATS,
            "flamegraph": FLAMEGRAPH_FORMATS, "changepoints": CHANGEPOINT_FORMATS, "export": EXPORT_FORMATS}


def _commands() -> dict[str, click.Command]:
    """Every command, subcommands of groups included, by name."""
    found: dict[str, click.Command] = {}
    todo = [cli.get_command(click.Context(cli), name) for name in _COMMANDS]
    while todo:
        command = todo.pop()
        assert command is not None and command.name
        found[command.name] = command
        if isinstance(command, click.Group):
            todo.extend(command.commands.values())
    return found


def test_every_format_option_takes_its_choices_default_and_help_from_a_registry():
    with_format = {name: c for name, c in _commands().items()
                   if any("--format" in p.opts for p in c.params if isinstance(p, click.Option))}
    assert set(with_format) == set(EXPECTED)   # a new --format must be listed here with its registry
    for name, command in with_format.items():
        option = next(p for p in command.params if isinstance(p, click.Option) and "--format" in p.opts)
        formats = EXPECTED[name]
        assert isinstance(option.type, click.Choice)
        assert list(option.type.choices) == formats.names, name
        assert option.default == formats.default, name
        for fmt in formats:
            assert f"{fmt}: {formats[fmt].help}" in (option.help or ""), (name, fmt)


def test_the_cli_has_no_hard_coded_format_branch_or_choice():
    for path in (SRC / "cli").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"fmt (?:==|!=) \"", text), path
        assert not re.search(r"\"--format\".*click\.Choice\(\[", text), path


def test_a_registry_lists_its_formats_first_as_default_and_refuses_an_unknown_name():
    formats = FormatRegistry(OutputFormat(name="text", help="a table", render=str.upper),
                             OutputFormat(name="json", help="keys", render=str.lower))
    assert (formats.names, formats.default, "json" in formats, len(formats)) == (["text", "json"], "text", True, 2)
    assert formats.help() == "text: a table; json: keys."
    assert formats["json"].render("AbC") == "abc"
    with pytest.raises(UsageError, match="unknown format 'xml'; choose from text, json"):
        formats["xml"]
    with pytest.raises(ValueError):
        FormatRegistry()


def test_verdict_methods_have_one_home_and_are_tests_compare_knows():
    option = next(p for p in _commands()["verdict"].params if p.name == "method")
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == list(VERDICT_METHODS)
    assert option.default == DEFAULT_VERDICT_METHOD == "mann-whitney"
    assert set(VERDICT_METHODS) <= set(METHOD_NAMES)
