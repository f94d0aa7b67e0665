"""The doctor report from plain data, as the CLI would assemble it."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

from perflab.execute.environment import capture
from perflab.execute.probe import TOOLS, EventProbe
from perflab.execute.tuning import check
from perflab.render.doctor import render_doctor

DATA = Path(__file__).parent / "data"


def section(text: str, title: str) -> list[str]:
    """The indented lines under one block title."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return lines[start:end]


def test_baremetal_report() -> None:
    env = capture(DATA / "machine_tuned_baremetal")
    events = {"cycles": EventProbe(True), "task-clock": EventProbe(True)}
    tools = {"perf": "/usr/bin/perf", "hackbench": None}
    text = render_doctor(env, check(env, is_root=False), events, tools, TOOLS)

    assert [line for line in text.splitlines() if line and not line.startswith(" ")] == [
        "Machine", "perf events", "Tools", "Findings"]
    machine = "\n".join(section(text, "Machine"))
    assert "6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)" in machine
    assert "Intel(R) Core(TM) i5-7200U CPU @ 2.50GHz" in machine
    assert "0-3 (4)" in machine
    assert "on, active" in machine
    assert "driver intel_pstate, governor powersave, boost on" in machine
    assert "2 (full)" in machine
    assert "3.50 2.10 1.20" in machine
    assert "15.5 GiB total, 12.5 GiB available" in machine

    assert section(text, "perf events") == ["  cycles      works", "  task-clock  works"]
    tool_lines = section(text, "Tools")
    assert tool_lines[0].split()[:2] == ["perf", "/usr/bin/perf"]
    assert "missing — apt-get install rt-tests" in tool_lines[1]

    findings = section(text, "Findings")
    assert findings[0].startswith("  WARN  boost:")
    assert findings[1].strip() == "fix: echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
    assert any(line.startswith("  WARN  load:") and "3.50" in line for line in findings)
    levels = [line.split()[0] for line in findings if not line.strip().startswith("fix:")]
    assert levels == sorted(levels, key=["WARN", "info", "ok"].index)


def test_vm_report_with_duck_typed_inputs() -> None:
    """The render layer needs only attributes, not execute's classes."""
    env = capture(DATA / "machine_vm")
    findings = [SimpleNamespace(level="ok", topic="load", message="load is low", fix=None),
                SimpleNamespace(level="info", topic="cpufreq", message="not exposed", fix=None)]
    events = {"cycles": SimpleNamespace(supported=False, reason="no counter"),
              "task-clock": SimpleNamespace(supported=True, reason=None)}
    text = render_doctor(env, findings, events, {"perf": None})

    assert "cpufreq              not exposed (frequency is controlled by the host or firmware)" \
        in text
    assert "0-1 (2)" in text and "notsupported, inactive" in text
    assert section(text, "perf events") == ["  cycles      not supported — no counter",
                                            "  task-clock  works"]
    assert section(text, "Tools") == ["  perf  missing"]
    assert section(text, "Findings") == ["  info  cpufreq: not exposed",
                                         "  ok    load: load is low"]


def test_empty_snapshot_renders_unknowns() -> None:
    text = render_doctor({}, [], {}, {})
    assert "kernel               unknown" in text
    assert "memory               unknown total, unknown available" in text
    assert section(text, "perf events") == ["  (not probed)"]
    assert section(text, "Findings") == ["  (none)"]
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_render_does_not_import_execute() -> None:
    """docs/design.md: render sits below execute, so it must not import it."""
    tree = ast.parse((Path(__file__).parents[1] / "src/perflab/render/doctor.py").read_text())
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any(m.startswith("perflab.execute") for m in modules), modules
