"""Bisecting a performance change: perflab bisect, perflab verdict A B."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
