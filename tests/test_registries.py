"""One registry per kind of name (issue 11): the CLI's choices and help and the docs'
lists come from it, so a name added in one place and forgotten in another is caught here."""

from __future__ import annotations

import re

from perflab.execute import monitors
from perflab.formats.importers import IMPORTERS
from perflab.model.records import MONITOR_METRIC_PREFIXES
from perflab.workloads import registry

from conftest import ROOT, run_cli


def _page(name: str) -> str:
    """A page of the docs (docs/NAME.md), where the README's lists moved."""
    return (ROOT / "docs" / f"{name}.md").read_text()


def test_docs_name_exactly_the_registered_importers():
    named = set(re.findall(r"`perflab import (\w[\w-]*) ", " ".join(_page("comparing").split())))
    assert named == set(IMPORTERS)


def test_docs_name_exactly_the_registered_monitors():
    section = _page("profiles")
    bullets = section[section.index("`--monitor` watches"):]
    bullets = "\n".join(line for line in bullets.split("\n\n")[1].splitlines())  # the bullet list
    named = set(re.findall(r"`([a-z][a-z-]*)`(?=[:,])", bullets))
    assert named == set(monitors.names())


def test_docs_name_exactly_the_registered_workloads():
    section = " ".join(_page("workloads").split())
    listing = section[section.index("The workloads behind"):section.index("C sources ship")]
    named = set(re.findall(r"`([a-z][a-z-]*)`", listing))
    assert named == set(registry.names())


def test_import_command_choices_and_help_come_from_the_registry():
    result = run_cli("import", "--help", check=True)
    assert "{" + "|".join(IMPORTERS) + "}" in result.stdout
    for importer in IMPORTERS.values():
        assert importer.name in result.stdout and importer.description in result.stdout.replace("\n", " ")
    bad = run_cli("import", "benchstat", "x.json", "--label", "x")
    assert bad.returncode == 2 and all(name in bad.stderr for name in IMPORTERS)


def test_each_importer_module_is_named_as_registered():
    import importlib
    for importer in IMPORTERS.values():
        module = importlib.import_module(importer.module)
        assert importer.name == module.NAME and callable(module.parse)


def test_monitor_help_and_metric_prefixes_follow_the_registry():
    assert monitors.option_help() == f"Watch each sample: {','.join(monitors.names())}."
    assert all(monitors.descriptions().values())
    help_text = "".join(run_cli("run", "--help", check=True).stdout.split())  # click wraps at hyphens
    for name in monitors.names():
        assert name in help_text, name
    # every monitor that records metrics names them "<monitor>.<metric>" (profiles are rows)
    assert set(MONITOR_METRIC_PREFIXES) == {f"{n}." for n in monitors.names() if n != "perf-profile"}


def test_each_workload_module_registers_exactly_the_names_the_registry_maps_to_it():
    """is_builtin answers from the registry's table without importing the workload modules:
    the table must name what the modules really register, and builtin() must import them."""
    import importlib
    for name in registry.names():
        assert registry.builtin(name).name == name
    for module in set(registry._HOMES.values()):
        defined = {cls.name for cls in vars(importlib.import_module(module)).values()
                   if isinstance(cls, type) and cls in registry._BUILTIN.values()}
        assert defined == {n for n, home in registry._HOMES.items() if home == module}
    assert set(registry._BUILTIN) == set(registry._HOMES)
    assert not registry.is_builtin("command") and not registry.is_builtin("./tool")


# A scratch hyperfine export format in a module of its own, registered the way a new one is
# (one more OutputFormat in EXPORTS, its renderer by dotted path), then the real CLI: run and ab
# take its --export-NAME, write its file, and the stored request names it. Nothing else knows it.
_SCRATCH_MODULE = """
from perflab.formats.hyperfine_export import HyperfineResult   # the registry's module: no cycle


def render(results: list[HyperfineResult]) -> str:
    return "".join(f"|{r.command}\\n" for r in results)
"""
_SCRATCH_EXPORT = """
import sys
sys.path.insert(0, sys.argv.pop(1))
from perflab.formats import hyperfine_export as h
from perflab.model.output_formats import FormatRegistry, OutputFormat, lazy
h.EXPORTS = FormatRegistry(*(h.EXPORTS[n] for n in h.EXPORTS.names), OutputFormat(
    name="ascii-doc", help="an asciidoc table", render=lazy("scratch_asciidoc:render")))
from perflab.cli.main import main
sys.argv = ["perflab", *sys.argv[1:]]
main()
"""


def test_a_hyperfine_export_format_is_one_registry_entry(tmp_path):
    import json
    import subprocess
    import sys
    db, run_file, ab_file = (tmp_path / name for name in ("s.db", "run.adoc", "ab.adoc"))
    (tmp_path / "scratch_asciidoc.py").write_text(_SCRATCH_MODULE)

    def perflab(*args: object) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _SCRATCH_EXPORT, str(tmp_path), "--db", str(db),
                               *map(str, args)],
                              capture_output=True, text=True, timeout=120)
    assert "--export-ascii-doc" in perflab("ab", "--help").stdout
    assert perflab("run", "-q", "-n", "2", "--export-ascii-doc", run_file, "true").returncode == 0
    assert perflab("ab", "-q", "--base", "true", "--cand", "true 1", "-m", "2", "-M", "2",
                   "--export-ascii-doc", ab_file).returncode in (0, 1, 125)
    assert run_file.read_text() == "|true\n" and ab_file.read_text() == "|true\n|true 1\n"
    spec = json.loads(perflab("export", "1", "--format", "json").stdout)["run"]["spec"]
    assert spec["exports"] == {"ascii-doc": str(run_file)}


def test_the_stats_package_map_names_every_module():
    import perflab.stats
    named = set(re.findall(r"^  (\w+) ", perflab.stats.__doc__, re.M))
    home = ROOT / "src" / "perflab" / "stats"
    modules = {p.stem for p in home.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in home.glob("*/__init__.py")}   # the methods, one module each
    assert named == modules | packages


def test_each_monitor_module_registers_exactly_the_names_the_table_maps_to_it():
    """monitors.known() imports the modules model.records.MONITOR_HOMES names: the table must
    name what they really register (the store tells monitor metrics apart by it)."""
    import importlib

    from perflab.model.records import MONITOR_HOMES
    registered = monitors.known()
    assert list(registered) == list(MONITOR_HOMES)
    for module in set(MONITOR_HOMES.values()):
        defined = {cls.name for cls in vars(importlib.import_module(f"perflab.execute.monitors.{module}")).values()
                   if isinstance(cls, type) and cls in registered.values()}
        assert defined == {n for n, home in MONITOR_HOMES.items() if home == module}


def _bold_names(section: str) -> set[str]:
    """The methods a section of docs/methods.md names: its bullets' bold names."""
    page = _page("methods")
    text = page[page.index(section):]
    text = text[:text.index("\n## ", 1)]
    return set(re.findall(r"^ *- \*\*([a-z][a-z-]*)\*\*", text, re.M))


def test_docs_and_help_name_exactly_the_registered_change_point_methods():
    from perflab.model.methods import CHANGE_POINT_METHODS, method_help
    assert _bold_names("## Change points in a history") == {m.name for m in CHANGE_POINT_METHODS}
    for method in CHANGE_POINT_METHODS:
        assert method.help.strip() and "\n" not in method.help, method.name
        assert f"{method.name}: {method.help}" in method_help(auto=True)


def test_docs_and_help_name_exactly_the_registered_compare_tests():
    from perflab.model.methods import COMPARE_TESTS
    assert _bold_names("## The tests of a comparison row") == {t.name for t in COMPARE_TESTS}
    help_text = " ".join(run_cli("compare", "--help", check=True).stdout.split())
    for test in COMPARE_TESTS:
        assert test.title.strip() and "\n" not in test.title, test.name
        assert f"{test.name}: {test.title}" in help_text, test.name


def test_each_registered_method_s_home_is_its_entry_point():
    """Each method is imported by its dotted path only when used: the path must name a
    function, and the detector's parameters type must be one of model.methods'."""
    import inspect

    from perflab.model.methods import CHANGE_POINT_METHODS, COMPARE_TESTS, DetectorParams
    from perflab.stats.methods import detector, tester
    for method in CHANGE_POINT_METHODS:
        assert inspect.isfunction(detector(method.name)) and issubclass(method.params, DetectorParams)
    for test in COMPARE_TESTS:
        assert inspect.isfunction(tester(test.name))


def test_mosum_s_default_false_rate_is_the_search_s_own():
    from perflab.model.methods import MosumParams
    from perflab.stats.mosum import FALSE_RATE_PER_1000
    assert MosumParams().false_rate == FALSE_RATE_PER_1000


def test_the_methods_code_is_imported_only_when_a_method_runs():
    """The registries are names and help: a command's --help lists the methods without
    importing any detector or test (nor numpy), so start-up stays fast (bench/startup.py)."""
    import subprocess
    import sys
    for command in (["changepoints", "--help"], ["compare", "--help"], ["history", "--help"]):
        found = subprocess.run([sys.executable, "-X", "importtime", "-m", "perflab.cli.main", *command],
                               capture_output=True, text=True, timeout=60, check=True)
        imported = {line.rsplit("|", 1)[-1].strip() for line in found.stderr.splitlines()}
        assert "perflab.model.methods" in imported, command
        assert not {m for m in imported if m.startswith(("perflab.stats", "numpy"))}, command
