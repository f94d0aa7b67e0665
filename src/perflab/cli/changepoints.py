"""Change points in any series: perflab changepoints FILE."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
