"""History across commits: perflab history, changes, report change ID."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
