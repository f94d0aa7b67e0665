"""Scaling values to readable units: s -> ms/us/ns, B -> KiB/MiB/GiB, and benchstat's
SI/IEC prefixes with a precision shared across a row (``common_scale``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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


def metric_scale(centres: Sequence[float], unit: str) -> tuple[float, str]:
    """The divisor and unit of every cell and chart of one metric in one view (a table of
    `show`, a comparison in any format): times in seconds while every non-zero centre keeps
    3 significant digits with 4 decimals (10 ms and up: hackbench's 0.0310, as mmtests and
    perf stat print it), else the unit that gives the largest centre 1..999 before the
    point; other units by the largest centre (`scale_for`)."""
    finite = [abs(c) for c in centres if math.isfinite(c)]
    if unit == "s" and any(finite) and min(c for c in finite if c) >= 0.01:
        return 1.0, "s"
    return scale_for(max(finite, default=0.0), unit)


def format_number(value: float, digits: int = 4) -> str:
    """Significant digits without scientific notation for everyday magnitudes."""
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    decimals = decimals_for(value, digits)
    return f"{value:.{digits - 1}e}" if decimals is None else f"{value:.{decimals}f}"


def decimals_for(value: float, digits: int = 4) -> int | None:
    """The decimals `format_number` shows ``value`` (finite, not 0) with; None: it shows it in
    scientific notation. Values near it (a commit's samples beside its median) shown with as
    many read alike, for one logarithm."""
    magnitude = int(math.floor(math.log10(abs(value))))
    if magnitude >= 9 or magnitude < -6:
        return None
    return max(0, digits - 1 - magnitude)


def format_scaled(values: Sequence[float], unit: str, reference: float | None = None) -> tuple[list[str], str]:
    """Several values of one quantity in one shared unit (chosen from ``reference``)."""
    ref = reference if reference is not None else next((v for v in values if v and math.isfinite(v)), 0.0)
    factor, name = scale_for(ref, unit)
    return [format_number(v / factor) if v is not None and math.isfinite(v) else "-" for v in values], name


_SI = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]
_IEC = [(2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, "")]


@dataclass(frozen=True)
class Scaler:
    decimals: int
    factor: float
    prefix: str

    def format(self, value: float) -> str:
        if not math.isfinite(value):
            return "-"
        return f"{value / self.factor:.{self.decimals}f}{self.prefix}"


def common_scale(numbers: Sequence[float], binary: bool = False) -> Scaler:
    """The prefix and precision that give every value three or more significant digits,
    chosen by the non-zero value nearest zero (benchunit.CommonScale)."""
    nonzero = [abs(v) for v in numbers if math.isfinite(v) and v != 0]
    if not nonzero:
        return Scaler(3, 1.0, "")
    smallest = min(nonzero)
    for factor, prefix in (_IEC if binary else _SI):
        if smallest >= 99.995 * factor:
            return Scaler(1, factor, prefix)
        if smallest >= 9.9995 * factor:
            return Scaler(2, factor, prefix)
        if smallest >= 0.99995 * factor:
            return Scaler(3, factor, prefix)
    factor, prefix = (_IEC if binary else _SI)[-1]
    value = smallest / factor
    for digits in range(3, 11):
        if value >= 9.9995 * 10.0 ** -(digits - 2) or digits == 10:
            return Scaler(digits, factor, prefix)
    return Scaler(10, factor, prefix)


def is_binary(unit: str) -> bool:
    """Bytes take binary prefixes (Ki, Mi ...)."""
    return unit == "B" or unit.startswith("B/")
