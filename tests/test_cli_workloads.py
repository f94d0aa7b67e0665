"""`perflab workloads` and `perflab run WORKLOAD` through the real CLI."""

import json

from conftest import run_cli


def test_workloads_lists_every_builtin_available_here():
    out = run_cli("workloads", check=True).stdout
    for name in ("breakpoint-thread", "breakpoint-enable", "hackbench", "sched-pipe",
                 "cgroup-switch", "wis", "tbench", "netstream", "command"):
        assert f"{name}  [available]" in out, name
    assert "groups=10" in out and "time (s, lower is better)" in out


def test_missing_programs_are_unavailable_with_the_install_hint(tmp_path):
    out = run_cli("workloads", env={"PATH": str(tmp_path)}, check=True).stdout
    assert "hackbench  [unavailable: " in out and "apt-get install linux-perf" in out
    assert "tbench  [unavailable: " in out and "apt-get install dbench" in out
    assert "netstream  [unavailable: " in out and "apt-get install iperf3" in out
    assert "command  [available]" in out


def test_running_an_unavailable_workload_is_an_environment_problem(tmp_path):
    result = run_cli("run", "sched-pipe", "-n", "1", env={"PATH": str(tmp_path)},
                     db=str(tmp_path / "db"))
    assert result.returncode == 3
    assert "unsupported on this machine: sched-pipe" in result.stderr
    assert not (tmp_path / "db").exists()


def test_run_a_workload_with_parameters(tmp_path):
    db = str(tmp_path / "db")
    result = run_cli("run", "hackbench", "-p", "groups=1,2", "-p", "loops=10", "-n", "2",
                     "--label", "h", db=db)
    assert result.returncode == 0, result.stderr
    samples = json.loads(run_cli("export", "h", db=db, check=True).stdout)["samples"]
    groups = sorted({s["params"]["groups"] for s in samples})
    assert groups == [1, 2]
    assert all(s["params"]["mode"] == "process" and s["params"]["impl"] == "perf" for s in samples)
    assert all(s["value"] > 0 and s["unit"] == "s" for s in samples if s["metric"] == "time")


def test_workload_errors(tmp_path):
    db = str(tmp_path / "db")
    cases = [
        (["run", "hackbench", "-p", "colour=red"], "hackbench has no parameter 'colour'"),
        (["run", "hackbench", "-p", "mode=fiber"], "choose from"),
        (["run", "hackbench", "extra"], "parameters go in -p"),
        (["run", "hackbench", "--shell"], "--shell applies to commands"),
        (["run", "--duration", "1", "--", "true"], "--duration applies to built-in workloads"),
    ]
    for args, message in cases:
        result = run_cli(*args, db=db)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
    assert not (tmp_path / "db").exists()


def test_duration_maps_onto_the_workload_parameter(tmp_path):
    db = str(tmp_path / "db")
    run_cli("run", "wis", "-p", "test=getppid1", "--duration", "1", "-p", "warmup=0", "-n", "1",
            "--label", "w", db=db, check=True)
    samples = json.loads(run_cli("export", "w", db=db, check=True).stdout)["samples"]
    assert {s["params"]["duration"] for s in samples} == {1.0}
    assert any(s["metric"] == "ops_per_s" and s["value"] > 0 for s in samples)
