"""RunRequest: the stored spec's one type. Round trips, old documents, one seed, and the
house rules it brings: no string-key read of the stored spec outside the type, no two
modules of src that import each other."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

from perflab.model.run_request import (
    SCHEMA_VERSION,
    AbRecord,
    AbSettings,
    Identity,
    PlanRecord,
    RunOptions,
    RunRequest,
    Target,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "perflab"


def test_a_request_round_trips_through_its_json_document():
    request = RunRequest(target=Target(words=("true",), after_dashdash=True), repetitions=3,
                         options=RunOptions(shuffle=True, cpus=[0]),
                         ab=AbRecord(settings=AbSettings(threshold_pct=2.0)),
                         identity=Identity(label="x", command_line=("perflab", "run", "--", "true")),
                         plans=(PlanRecord(workload={"workload": "command", "benchmark": "true"}, sweep={"n": [1, 2]},
                                           options=RunOptions(repetitions=3)),))
    document = request.to_json()
    assert document["version"] == SCHEMA_VERSION
    assert RunRequest.from_json(document) == request


def test_the_seed_is_drawn_once_and_kept():
    options = RunOptions(shuffle=True)
    assert options.seed is not None
    assert replace(options, repetitions=5).seed == options.seed      # a suite's entries share it
    assert RunRequest.from_json(RunRequest(options=options).to_json()).options.seed == options.seed
    assert RunOptions(shuffle=False).seed is None


def test_a_spec_stored_before_runrequest_still_reads():
    """A version-less spec as perflab stored it before (asdict(RunOptions) plans, top-level
    command_line, limits, ab, stopped; an import's imported/file/sha256)."""
    old = {"plans": [{"workload": {"workload": "command", "argv": ["true"], "shell": None, "benchmark": "true",
                                   "ignore_failure": False},
                      "sweep": {}, "options": {"repetitions": 3, "warmup": 0, "shuffle": True, "seed": 11,
                                               "cpus": None, "a_removed_option": 1},
                      "shell_overhead": [0.001, 0.0, 0.0],
                      "layout": {"benchmark": "true", "title": None, "row": None}}],
           "interleaved": False, "command_line": ["perflab", "run", "--", "true"],
           "limits": {"max_time_s": 5.0, "min_rounds": 2},
           "ab": {"settings": {"threshold_pct": 1.0, "alpha": 0.05, "min_runs": 5, "max_runs": 60,
                               "max_time_s": None, "lower_is_better": True}},
           "stopped": {"reason": "r", "rounds": 2, "elapsed_s": 0.5, "at": 1.0}}
    request = RunRequest.from_json(old)
    assert request.plans[0].options.seed == 11 and request.plans[0].shell_overhead == (0.001, 0.0, 0.0)
    assert request.identity.command_line == ("perflab", "run", "--", "true")
    assert request.limits.min_rounds == 2 and request.ab is not None and request.ab.settings.max_runs == 60
    assert request.ab.decision is None and request.stopped is not None and request.stopped.rounds == 2
    imported = RunRequest.from_json({"imported": "hyperfine", "file": "/x.json", "sha256": "ab"})
    assert imported.imported is not None and imported.imported.kind == "hyperfine" and not imported.plans


# keys of the stored spec (old and new), read with spec["..."] / spec.get("...")
_SPEC_KEYS = ("plans", "interleaved", "command_line", "limits", "ab", "stopped", "imported", "file", "sha256",
              "options", "shuffle", "seed", "identity", "target", "version", "decision", "settings", "layout",
              "shell_overhead", "monitor_overhead")
_STRING_KEY_READ = re.compile(r"\bspec\s*(?:\.get\(\s*|\[\s*)[\"'](?:" + "|".join(_SPEC_KEYS) + r")[\"']")
_RAW_SPEC = re.compile(r"\b(?:run|info|r|runs\[\d\])\.spec\b(?!\s*\()")


def test_no_read_of_the_stored_spec_by_string_key_outside_its_type():
    """A stored spec is read through RunRequest (RunInfo.request), never by key."""
    allowed = {SRC / "model" / "run_request.py", SRC / "model" / "records.py"}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _STRING_KEY_READ.search(line) or _RAW_SPEC.search(line):
                found.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert not found, "read the stored spec through RunInfo.request:\n" + "\n".join(found)


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (never imported at run time)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for other in node.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(path: Path, module: str) -> set[str]:
    """Every perflab module ``path`` imports at run time, at the top or inside a function."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("perflab")}


def test_no_two_modules_of_src_import_each_other():
    modules = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph = {name: {m for m in _imports(path, name) if m in modules and m != name} for name, path in modules.items()}
    pairs = sorted({tuple(sorted((a, b))) for a, targets in graph.items() for b in targets if a in graph[b]})
    # a package's __init__ re-exporting its modules is not a cycle of two files doing work
    pairs = [(a, b) for a, b in pairs if not (b.startswith(a + ".") and modules[a].name == "__init__.py")]
    assert not pairs, f"modules importing each other: {pairs}"


def _full_request() -> RunRequest:
    """A request with every optional part filled (no drawn seed: it is given)."""
    from perflab.model.run_request import AbDecision, Imported, Layout, Stopped, StopSpec, SweepText
    options = RunOptions(repetitions=4, warmup=1, shuffle=True, seed=7, cpus=[0, 1], timeout=2.5, prepare="p",
                         metrics=["time"], monitors=["vmstat"], events=["cycles"])
    return RunRequest(
        target=Target(words=("sh", "-c", "x"), commands=("a", "b"), command_names=("A", "B"), shell=True,
                      duration=1.5),
        sweep=SweepText(params=("n=1,2",), lists=(("n", "1,2"),), scans=(("n", "1", "4"),), step="2"),
        repetitions=4, options=options, limits=StopSpec(max_time_s=9.0, min_rounds=2),
        ab=AbRecord(settings=AbSettings(threshold_pct=2.0, max_time_s=3.0),
                    decision=AbDecision(verdict="better", n=12, estimate_pct=3.5, ci_pct=(1.0, 6.0), alpha=0.05,
                                        reason="crossed")),
        identity=Identity(label="x", commit="abc", job_id=3, command_line=("perflab", "run")),
        exports={"json": "/tmp/x.json"},
        plans=(PlanRecord(workload={"workload": "command", "benchmark": "a", "argv": ["a"]}, sweep={"n": [1, 2]},
                          options=options, shell_overhead=(0.001, 0.0, 0.0005),
                          layout=Layout(benchmark="a", title="title {n}", row="n"),
                          monitor_overhead={"vmstat": "0.1%"}),),
        interleaved=True, stopped=Stopped(reason="time", rounds=3, elapsed_s=1.25, at=100.0),
        imported=Imported(kind="hyperfine", file="/f", sha256="ab"))


def test_an_exactly_typed_document_is_read_without_pydantic_and_equals_its_reading():
    """model/exact_decode.py: a document of exactly the declared types gives what pydantic
    gives; one that pydantic would coerce, or refuse, is left to pydantic."""
    import json

    from perflab.model.exact_decode import decode
    from perflab.model.run_request import _adapter

    for request in (RunRequest(), _full_request(), replace(_full_request(), target=Target(shell="bash"))):
        for document in (request.to_json(), json.loads(json.dumps(request.to_json()))):
            assert decode(RunRequest, document) == _adapter().validate_python(document) == request
    document = json.loads(json.dumps(_full_request().to_json()))
    coerced = [("options", "timeout", 5), ("options", "repetitions", True), ("options", "repetitions", "7"),
               ("target", "shell", 1), ("options", "bogus", 1), ("limits", "min_rounds", 2.0)]
    for part, key, value in coerced:
        changed = json.loads(json.dumps(document))
        changed[part][key] = value
        assert decode(RunRequest, changed) is None
        assert RunRequest.from_json(changed) == _adapter().validate_python(changed)
    refused = json.loads(json.dumps(document))
    refused["options"]["repetitions"] = 0
    assert decode(RunRequest, refused) is None


def test_a_version_2_document_names_every_export_format_and_reads_back_only_the_asked():
    """Before the export formats came from their registry, a stored request held every format's
    key, None where not asked."""
    old = {"json": None, "csv": "/r.csv", "markdown": None}
    for document in ({"version": 2, "exports": old}, {"version": 2, "exports": old, "interleaved": 1}):  # pydantic's
        assert RunRequest.from_json(document).exports == {"csv": "/r.csv"}
