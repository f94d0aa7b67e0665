"""The size rule of the house: no function over 60 lines, no module over 500 lines in src.

Lines are counted as the file has them (docstrings and comments included): a long docstring
is as much to read as long code. What stays over is listed below with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "perflab"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500

# path under src/perflab -> the reason it may stay over MAX_MODULE_LINES
MODULES_ALLOWED: dict[str, str] = {}

# "path:qualified.name" -> the reason it may stay over MAX_FUNCTION_LINES
FUNCTIONS_ALLOWED: dict[str, str] = {
}


def _functions(tree: ast.AST, prefix: str = ""):
    """Yield (qualified name, node) of every function, methods and nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")


def _lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """From `def` to the last line: a click command's option decorators are a table, not code."""
    return (node.end_lineno or node.lineno) - node.lineno + 1


def oversized() -> tuple[dict[str, int], dict[str, int]]:
    """Modules over MAX_MODULE_LINES and functions over MAX_FUNCTION_LINES, with their sizes."""
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            modules[rel] = n
        for name, node in _functions(ast.parse(text, filename=str(path))):
            if (n := _lines(node)) > MAX_FUNCTION_LINES:
                functions[f"{rel}:{name}"] = n
    return modules, functions


def test_no_module_or_function_over_the_size_rule():
    modules, functions = oversized()
    over = [f"module {m}: {n} lines" for m, n in modules.items() if m not in MODULES_ALLOWED]
    over += [f"function {f}: {n} lines" for f, n in functions.items() if f not in FUNCTIONS_ALLOWED]
    assert not over, (
        f"over {MAX_MODULE_LINES} lines a module / {MAX_FUNCTION_LINES} a function "
        "(split it into named steps, or add it to the allow-list with the reason):\n  "
        + "\n  ".join(over))


def test_the_allow_list_holds_only_what_is_still_over():
    modules, functions = oversized()
    stale = [m for m in MODULES_ALLOWED if m not in modules]
    stale += [f for f in FUNCTIONS_ALLOWED if f not in functions]
    assert not stale, "now within the size rule; remove from the allow-list: " + ", ".join(stale)
