"""The store keeps one style: repositories reached from the Store, no free functions taking one."""

import ast
from pathlib import Path

STORE = Path(__file__).resolve().parent.parent / "src" / "perflab" / "store"


def test_no_function_of_the_store_takes_a_store():
    takers = []
    for path in STORE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(a.arg == "store" for a in node.args.args):
                takers.append(f"{path.name}:{node.name}")
    assert not takers, f"free functions taking a store (reach a repository from the Store instead): {takers}"


def test_every_repository_is_reached_from_the_store():
    from perflab.store.store import Store
    repositories = set()
    for path in STORE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        repositories |= {n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Repository")}
    reached = {str(getattr(Store, name).func.__annotations__["return"]) for name, value in vars(Store).items()
               if hasattr(value, "func")}
    assert repositories == reached


def test_store_modules_stay_small():
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in STORE.glob("*.py")}
    assert max(sizes.values()) <= 400, sizes
