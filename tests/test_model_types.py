"""The model's types say what they hold (issue 43): report and option types are built by
keyword, and no model type, nor a public function of analysis/ or stats/, is a bag of
``dict[str, Any]``."""

import dataclasses
import importlib
import pkgutil
from pathlib import Path

import perflab.model
import perflab.model.report
from perflab.model import output_formats, run_request

MODEL = Path(perflab.model.__file__).parent


def _dataclasses(module):
    return [obj for obj in vars(module).values()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__]


def test_report_and_option_types_are_keyword_only():
    modules = [importlib.import_module(f"perflab.model.report.{m.name}")
               for m in pkgutil.iter_modules(perflab.model.report.__path__)]
    types = [cls for module in [*modules, run_request, output_formats] for cls in _dataclasses(module)]
    assert len(types) > 40
    positional = [cls.__qualname__ for cls in types if any(f.init and not f.kw_only for f in dataclasses.fields(cls))]
    assert positional == []


def test_no_model_type_holds_dict_of_any():
    found = [f"{path.relative_to(MODEL)}:{n}" for path in sorted(MODEL.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if "dict[str, Any]" in line]
    assert found == []


def test_no_public_function_of_analysis_or_stats_takes_or_gives_dict_of_any():
    import ast
    found = []
    for package in ("analysis", "stats"):
        for path in sorted((MODEL.parent / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                    signature = ast.unparse(node.args) + " -> " + (ast.unparse(node.returns) if node.returns else "")
                    if "dict[str, Any]" in signature:
                        found.append(f"{package}/{path.name}:{node.name}")
    assert found == []
