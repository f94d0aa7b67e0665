"""Frozen dataclasses from a JSON document whose every value already has its field's type.

`decode` builds the dataclass when the document is exactly what ``asdict`` of one wrote
(through JSON or not): every key a field, every required field there, every value of the
declared type (a tuple field from a list or tuple, never an int for a float or a bool for
an int), built through the class so its ``__post_init__`` runs. For anything else it
returns None and the caller validates with pydantic, which coerces or refuses: the
result is then the one pydantic gives, without pydantic's start-up (about 0.1 s) where a
stored document is only read back (tests/test_run_request.py holds the two together).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class _NotExact(Exception):
    """The document is not exactly of the declared types: pydantic decides."""


def decode(cls: type[T], document: Any) -> T | None:
    """``cls`` built from ``document`` when every value has exactly its field's type, else None."""
    try:
        built: T = _value(cls, document)
    except Exception:   # _NotExact, or a __post_init__ refusing: pydantic says what is wrong
        return None
    return built


@functools.cache
def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """Each field of a dataclass: (its resolved type, whether it has a default)."""
    hints = typing.get_type_hints(cls)
    return {f.name: (hints[f.name], f.default is not dataclasses.MISSING
                     or f.default_factory is not dataclasses.MISSING) for f in dataclasses.fields(cls)}


def _value(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return value
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            try:
                return _value(arm, value)
            except _NotExact:
                continue
        raise _NotExact
    if hint is type(None) or hint in (bool, int, float, str):
        if type(value) is not hint:
            raise _NotExact
        return value
    if origin is tuple and isinstance(value, (list, tuple)):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in value)
        if len(args) != len(value):
            raise _NotExact
        return tuple(_value(arm, v) for arm, v in zip(args, value))
    if origin is list and type(value) is list:
        return [_value(args[0], v) for v in value]
    if origin is dict and type(value) is dict:
        return {_value(args[0], k): _value(args[1], v) for k, v in value.items()}
    if dataclasses.is_dataclass(hint) and type(value) is dict:
        fields = _fields(hint)   # type: ignore[arg-type]
        if not value.keys() <= fields.keys() or any(not default and name not in value
                                                    for name, (_, default) in fields.items()):
            raise _NotExact
        build: Any = hint
        return build(**{name: _value(fields[name][0], v) for name, v in value.items()})
    raise _NotExact
