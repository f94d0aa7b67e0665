"""A run's command benchmarks as hyperfine reports them (its --export-* files)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HyperfineResult:
    """One (command, point): hyperfine's JSON keys, plus the markdown table's Relative."""

    command: str
    mean: float
    stddev: float | None          # None with one time (hyperfine writes null)
    median: float
    user: float                   # means, as hyperfine gives them
    system: float
    min: float
    max: float
    times: tuple[float, ...]
    exit_codes: tuple[int | None, ...]
    memory_usage_byte: tuple[int, ...] | None
    parameters: tuple[tuple[str, str], ...]
    relative: float               # mean / the fastest mean
    relative_stddev: float | None
