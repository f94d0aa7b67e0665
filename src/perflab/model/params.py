"""Parameter sweeps: the ``-p`` syntax shared by commands, built-in workloads and suites.

``name=a,b,c`` is a list, ``name=lo..hi[:step]`` an inclusive range. Range ends may be
small expressions of machine variables (``1..2*ncpus``), as mmtests configs are.
Values that look like numbers become numbers, so ``n=1,2`` and ``n=1..2`` name the
same points.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from perflab.model.errors import UsageError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_RANGE = re.compile(r"^(?P<lo>[^.:][^:]*?)\.\.(?P<hi>[^:]+?)(?::(?P<step>.+))?$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")

Value = int | float | str
#: A parameter point: each parameter's value (a sweep's, a suite's, a workload's default)
Params = dict[str, Value]

MAX_POINTS = 10_000             # a larger sweep needs --force (a typo like 1..1000000 is likelier)
HARD_MAX_POINTS = 10_000_000    # beyond this the points alone would not fit in memory


def coerce(text: str) -> Value:
    """'3' -> 3, '0.5' -> 0.5, anything else stays text."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if number == number else text  # 'nan' stays text


_OPS: dict[type[ast.operator], Callable[[Any, Any], int | float]] = {
        ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv}


def evaluate(expression: str, variables: Mapping[str, float] | None = None) -> int | float:
    """Evaluate a range end: numbers, machine variables (ncpus, ...), + - * / //."""
    variables = variables or {}

    def walk(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in variables:
                known = ", ".join(sorted(variables)) or "none"
                raise UsageError(f"unknown variable {node.id!r} in {expression!r} (known: {known})")
            return variables[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise UsageError(f"cannot evaluate {expression!r}: use numbers, variables and + - * /")

    try:
        with warnings.catch_warnings():   # e.g. "invalid decimal literal" for 1x: ours to say
            warnings.simplefilter("ignore")
            tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):   # ValueError: a NUL byte
        raise UsageError(f"cannot evaluate {expression!r}: not an arithmetic expression") from None
    try:
        value = walk(tree)
        return int(value) if float(value).is_integer() else value
    except ZeroDivisionError:
        raise UsageError(f"cannot evaluate {expression!r}: division by zero") from None
    except OverflowError:
        raise UsageError(f"cannot evaluate {expression!r}: the number is too large") from None
    except RecursionError:
        raise UsageError(f"cannot evaluate {expression!r}: too long an expression") from None


def expand_range(lo: Value, hi: Value, step: Value = 1) -> list[Value]:
    """Inclusive range lo..hi by step; integers stay integers."""
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float))
            and isinstance(step, (int, float))):
        raise UsageError(f"range {lo}..{hi}:{step} needs numbers")
    if not all(math.isfinite(v) for v in (lo, hi, step)):
        raise UsageError(f"range {lo}..{hi}:{step} needs finite numbers")
    if step <= 0:
        raise UsageError(f"range step must be positive, got {step}")
    if hi < lo:
        raise UsageError(f"range {lo}..{hi} is empty: the end is below the start")
    span = (hi - lo) / step
    if not span < HARD_MAX_POINTS:   # also catches an overflow to inf
        raise UsageError(f"range {lo}..{hi}:{step} has more than {HARD_MAX_POINTS:,} values")
    count = int(span + 1e-9) + 1
    values = [lo + i * step for i in range(count)]
    if all(isinstance(v, int) for v in (lo, hi, step)):
        return [int(v) for v in values]
    return [round(v, 12) for v in values]


def parse_values(text: str, variables: Mapping[str, float] | None = None) -> list[Value]:
    """The values of one parameter: 'a,b,c' or 'lo..hi[:step]'."""
    text = text.strip()
    if not text:
        raise UsageError("parameter has no values")
    match = _RANGE.match(text)
    if match and "," not in text:
        lo = evaluate(match["lo"], variables)
        hi = evaluate(match["hi"], variables)
        step = evaluate(match["step"], variables) if match["step"] else 1
        return expand_range(lo, hi, step)
    values = [_value(v, variables) for v in text.split(",")]
    if any(v == "" for v in values):
        raise UsageError(f"empty value in list {text!r}")
    return values


def _value(text: str, variables: Mapping[str, float] | None) -> Value:
    """One listed value: a number, an expression of machine variables (2*ncpus), or text."""
    value = coerce(text)
    if isinstance(value, str) and variables and any(
            re.search(rf"\b{re.escape(name)}\b", value) for name in variables):
        return evaluate(value, variables)
    return value


def parse_assignment(spec: str, variables: Mapping[str, float] | None = None) -> tuple[str, list[Value]]:
    """Parse one ``-p name=values``."""
    name, sep, values = spec.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise UsageError(f"bad parameter {spec!r}: expected name=a,b,c or name=lo..hi[:step]")
    try:
        return name, parse_values(values, variables)
    except UsageError as error:
        raise UsageError(f"bad parameter {spec!r}: {error}") from None


def parse_hyperfine_list(name: str, values: str) -> tuple[str, list[Value]]:
    """hyperfine's ``-L name a,b``."""
    _refuse_option_words("-L", name, values.split(","))
    return parse_assignment(f"{name}={values}")


def parse_hyperfine_scan(name: str, lo: str, hi: str, step: str | None = None) -> tuple[str, list[Value]]:
    """hyperfine's ``-P name lo hi`` (with ``-D step``)."""
    _refuse_option_words("-P", name, [lo, hi])
    return parse_assignment(f"{name}={lo}..{hi}" + (f":{step}" if step else ""))


def _refuse_option_words(flag: str, name: str, words: list[str]) -> None:
    """``-L x -- echo {x}`` took ``--`` as x's values: a word that starts with '-' and is
    no number is an option or ``--`` swallowed by a flag missing its values."""
    for word in [name, *words]:
        if word.strip().startswith("-") and isinstance(coerce(word), str):
            raise UsageError(f"{flag} {name} {','.join(words)}: {word!r} looks like an option, not a value "
                             f"(write {flag} NAME " + ("a,b,c" if flag == "-L" else "LO HI") + ")")


def merge(assignments: Iterable[tuple[str, list[Value]]]) -> dict[str, list[Value]]:
    """Collect assignments in order, refusing a parameter given twice."""
    sweep: dict[str, list[Value]] = {}
    for name, values in assignments:
        if name in sweep:
            raise UsageError(f"parameter {name!r} is given twice")
        sweep[name] = values
    return sweep


def point_count(sweep: dict[str, list[Value]]) -> int:
    """How many points the sweep has (the product of its lists' lengths)."""
    return math.prod(len(values) for values in sweep.values())


def check_size(sweep: dict[str, list[Value]], force: bool = False) -> int:
    """The sweep's point count, refused above MAX_POINTS unless forced (never above HARD_MAX)."""
    count = point_count(sweep)
    if count > HARD_MAX_POINTS:
        raise UsageError(f"the sweep has {count:,} points, more than perflab can hold "
                         f"({HARD_MAX_POINTS:,})")
    if count > MAX_POINTS and not force:
        raise UsageError(f"the sweep has {count:,} points, more than {MAX_POINTS:,}",
                         hint="check the ranges, or pass --force to run them all")
    return count


def cartesian(sweep: dict[str, list[Value]]) -> list[dict[str, Value]]:
    """Every combination, the first parameter varying slowest."""
    names = list(sweep)
    return [dict(zip(names, combo)) for combo in itertools.product(*(sweep[n] for n in names))]


def placeholders(template: str) -> set[str]:
    """The ``{name}`` placeholders of a template (``{{`` and ``}}`` are literal braces)."""
    return set(_PLACEHOLDER.findall(template.replace("{{", "").replace("}}", "")))


def substitute(template: str, values: dict[str, Value]) -> str:
    """Replace ``{name}`` by its value; unknown names are an error."""
    def replace(match: re.Match[str]) -> str:
        name = match[1]
        if name not in values:
            raise UsageError(f"unknown placeholder {{{name}}} in {template!r}",
                             hint="define it with -p, or write {{ }} for a literal brace")
        return format_value(values[name])

    parts = template.split("{{")
    out = []
    for part in parts:
        pieces = part.split("}}")
        out.append("}".join(_PLACEHOLDER.sub(replace, p) for p in pieces))
    return "{".join(out)


def format_value(value: Value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def point_text(params: Params) -> str:
    """A parameter point as tables and warnings name it: ``k=v k=v``, '-' for none."""
    return " ".join(f"{k}={format_value(v)}" for k, v in params.items()) or "-"
