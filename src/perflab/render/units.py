"""Scaling values to readable units (s -> ms/us/ns, B -> KiB/MiB/GiB)."""

from __future__ import annotations

import math
from collections.abc import Sequence

_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")]
_BYTES = [(1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB"), (1.0, "B")]


def scale_for(reference: float, unit: str) -> tuple[float, str]:
    """The divisor and unit name that show ``reference`` with 1..999 before the point."""
    ladder = _TIME if unit == "s" else _BYTES if unit == "B" else None
    if ladder is None or not math.isfinite(reference) or reference == 0:
        return 1.0, unit
    for factor, name in ladder:
        if abs(reference) >= factor:
            return factor, name
    return ladder[-1]


def format_number(value: float, digits: int = 4) -> str:
    """Significant digits without scientific notation for everyday magnitudes."""
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    magnitude = int(math.floor(math.log10(abs(value))))
    decimals = max(0, digits - 1 - magnitude)
    if magnitude >= 9 or magnitude < -6:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{decimals}f}"


def format_scaled(values: Sequence[float], unit: str, reference: float | None = None) -> tuple[list[str], str]:
    """Several values of one quantity in one shared unit (chosen from ``reference``)."""
    ref = reference if reference is not None else next((v for v in values if v and math.isfinite(v)), 0.0)
    factor, name = scale_for(ref, unit)
    return [format_number(v / factor) if v is not None and math.isfinite(v) else "-" for v in values], name
