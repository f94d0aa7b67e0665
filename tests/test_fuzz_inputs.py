"""Generated inputs for the parameter syntax, the suite reader and run's numeric options:
each is parsed or refused with a UsageError (one line, exit 2), never anything else
(issue 16, defect 5)."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflab.execute.run_plan import plan_run
from perflab.model.errors import UsageError
from perflab.model.params import HARD_MAX_POINTS, check_size, parse_assignment
from perflab.model.run_request import RunOptions
from perflab.workloads.command import CommandWorkload
from perflab.workloads.suite import load_suite

VARIABLES = {"ncpus": 2, "nnodes": 1}
NUMBER = st.one_of(st.integers(-10**6, 10**12).map(str), st.floats(allow_nan=True).map(repr),
                   st.sampled_from(["nan", "inf", "-inf", "1e309", "ncpus", "2*ncpus", "1/0",
                                    "0", "", " ", "x", "1..", "..", ":", "1+" * 5000 + "1",
                                    "9" * 400 + "*ncpus", "1\x00", "(" * 300 + "1" + ")" * 300]))
VALUES = st.one_of(
    st.text(max_size=40),
    st.builds(lambda lo, hi: f"{lo}..{hi}", NUMBER, NUMBER),
    st.builds(lambda lo, hi, step: f"{lo}..{hi}:{step}", NUMBER, NUMBER, NUMBER),
    st.lists(NUMBER, max_size=5).map(",".join),
)


@settings(max_examples=500, deadline=None)
@given(name=st.one_of(st.just("x"), st.text(max_size=10)), values=VALUES)
def test_any_parameter_is_parsed_or_refused(name, values):
    try:
        parsed_name, parsed = parse_assignment(f"{name}={values}", VARIABLES)
    except UsageError:
        return
    assert parsed_name == f"{name}={values}".partition("=")[0].strip() and parsed
    assert len(parsed) <= HARD_MAX_POINTS


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 10**6), min_size=1, max_size=4), force=st.booleans())
def test_sweep_size_is_checked_before_anything_is_built(sizes, force):
    sweep = {f"p{i}": range(n) for i, n in enumerate(sizes)}   # len() only: nothing expanded
    try:
        count = check_size(sweep, force)   # type: ignore[arg-type]
    except UsageError as error:
        assert "points" in str(error)
        return
    assert count == math.prod(sizes)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                      st.builds(lambda body: b'[[benchmark]]\nworkload = "hackbench"\n' + body,
                                st.binary(max_size=80))))
def test_any_suite_file_is_read_or_refused(tmp_path, data):
    path = tmp_path / "suite.toml"
    path.write_bytes(data)
    try:
        load_suite(path, variables=VARIABLES)
    except UsageError as error:
        assert "\n" not in str(error)


@settings(max_examples=200, deadline=None)
@given(timeout=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()))
def test_any_timeout_is_accepted_or_refused(timeout):
    options = RunOptions(repetitions=1, timeout=timeout)
    try:
        plan_run(CommandWorkload(["true"]), {}, options)
    except UsageError:
        assert timeout is not None and not (0 < timeout < math.inf)
        return
    assert timeout is None or 0 < timeout < math.inf
