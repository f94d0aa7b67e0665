"""Profiles: perflab profile RUN, perflab flamegraph RUN [--vs RUN2]."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
