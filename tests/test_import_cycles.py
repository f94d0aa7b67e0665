"""No import cycle among perflab's modules (issue 43): counting every import statement, those
inside functions and under TYPE_CHECKING too (grimp, which import-linter builds its graph
with, reads them all). A cycle hidden in a function or a type hint still ties two modules'
jobs together: neither can be read, moved or tested without the other."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, edges = work[-1]
            step = next((m for m in edges if m in graph.modules), None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph.find_modules_directly_imported_by(step)))))
            elif step in on_stack:
                low[module] = min(low[module], index[step])
    return found


def test_no_import_cycle_counting_function_local_and_type_checking_imports():
    graph = grimp.build_graph("perflab", cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_type_checking_import(tmp_path, monkeypatch):
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic import b\n")
    (package / "b.py").write_text("def f():\n    from cyclic import c\n")
    (package / "c.py").write_text("import cyclic.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyclic", cache_dir=None)) == [["cyclic.a", "cyclic.b", "cyclic.c"]]
