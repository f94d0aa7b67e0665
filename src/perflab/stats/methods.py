"""The code of a registered method (model/methods.py), imported by its dotted path on first
use: a command that detects or compares nothing imports none of the methods."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflab.model.methods import change_point_method, compare_test

if TYPE_CHECKING:
    from perflab.model.methods import DetectorParams
    from perflab.stats.compare_tests.row import Outcome, Row
    from perflab.stats.detectors.points import ChangePoint, Values


def _entry(home: str) -> Callable[..., Any]:
    module, _, name = home.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


def detector(name: str) -> Callable[[Values, DetectorParams], list[ChangePoint]]:
    """The entry point of the change-point method ``name`` (ValueError: no such method)."""
    return _entry(change_point_method(name).home)


def tester(name: str) -> Callable[[Row], Outcome]:
    """The entry point of the compare test ``name`` (ValueError: no such test)."""
    return _entry(compare_test(name).home)
