"""The README's commands are real: run them as written (against a temporary database)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)
PERFLAB = f"{shlex.quote(sys.executable)} -m perflab.cli.main"


def _commands(block: str) -> list[str]:
    """The command lines of a README block, without their trailing comments."""
    return [raw.split("  #")[0].strip() for raw in block.strip().splitlines()]


def _shell(line: str, cwd: Path, db: Path) -> subprocess.CompletedProcess:
    line = line.replace(".venv/bin/perflab", "perflab")
    line = re.sub(r"(^|&& )perflab ", rf"\g<1>{PERFLAB} ", line)
    env = dict(os.environ, PERFLAB_DB=str(db))
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_readme_starts_with_the_two_setup_commands():
    run_line, test_line = BLOCKS[0].strip(), BLOCKS[1].strip()
    assert run_line.startswith("./install.sh && .venv/bin/perflab run ")
    assert test_line == "./install.sh --test && .venv/bin/python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_line in ci


def test_main_job_runs_as_written(tmp_path):
    line = BLOCKS[0].strip().removeprefix("./install.sh && ")
    result = _shell(line, ROOT, tmp_path / "perflab.db")  # run from the checkout, as written
    assert result.returncode == 0, result.stderr
    for name in ("hackbench", "wis", "cgroup-switch", "netstream", "tbench", "Machine"):
        assert name in result.stdout, name


def test_recording_examples_run_as_written(tmp_path):
    for name in ("mytool", "mytool-new"):
        tool = tmp_path / name
        tool.write_text("#!/bin/sh\nexec cat \"$1\" > /dev/null\n")
        tool.chmod(0o755)
    for data in ("input.dat", "input-small.dat", "input-large.dat"):
        (tmp_path / data).write_text("x" * 1000)
    for line in _commands(BLOCKS[2]):
        line = line.replace("RUN", "baseline").replace("json|csv", "csv").replace("-n 20", "-n 3")
        result = _shell(line, tmp_path, tmp_path / "perflab.db")
        assert result.returncode == 0, f"{line}: {result.stderr}"
        assert result.stdout.strip(), line


def test_workload_examples_run_as_written(tmp_path):
    for line in _commands(BLOCKS[3]):
        if ".toml" in line:
            line = line.replace("run suites/", f"run -n 2 {ROOT}/suites/")  # keep the test short
        result = _shell(line, tmp_path, tmp_path / "perflab.db")
        assert result.returncode == 0, f"{line}: {result.stderr}"
        assert result.stdout.strip(), line


def test_compare_examples_run_as_written(tmp_path):
    for line in _commands(BLOCKS[4]):
        result = _shell(line, tmp_path, tmp_path / "perflab.db")
        gating = "--fail-on" in line
        assert result.returncode in ((0, 1) if gating else (0,)), f"{line}: {result.stderr}"
        if "compare" in line and not gating:
            assert "hackbench" in result.stdout, line
