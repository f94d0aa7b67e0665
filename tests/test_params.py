import pytest

from perflab.model.errors import UsageError
from perflab.model.params import (
    cartesian,
    evaluate,
    merge,
    parse_assignment,
    parse_hyperfine_list,
    parse_hyperfine_scan,
    placeholders,
    substitute,
)


def test_list_values_become_numbers_where_they_look_like_numbers():
    assert parse_assignment("size=small,large") == ("size", ["small", "large"])
    assert parse_assignment("n=1,2,10") == ("n", [1, 2, 10])
    assert parse_assignment("x=0.5,1.5") == ("x", [0.5, 1.5])


def test_ranges_inclusive_with_step_and_machine_variables():
    assert parse_assignment("n=1..4") == ("n", [1, 2, 3, 4])
    assert parse_assignment("n=64..256:64") == ("n", [64, 128, 192, 256])
    assert parse_assignment("g=1..2*ncpus", {"ncpus": 3}) == ("g", [1, 2, 3, 4, 5, 6])
    assert parse_assignment("t=0.5..1.5:0.5") == ("t", [0.5, 1.0, 1.5])


def test_list_and_range_name_the_same_points():
    assert parse_assignment("n=1,2")[1] == parse_assignment("n=1..2")[1]


@pytest.mark.parametrize("spec, message", [
    ("size", "expected name=a,b,c"),
    ("=1,2", "expected name=a,b,c"),
    ("n=", "no values"),
    ("n=1,,2", "empty value"),
    ("n=5..1", "empty"),
    ("n=1..5:0", "step must be positive"),
    ("n=a..b", "unknown variable"),
    ("g=1..2*cpus", "unknown variable 'cpus'"),
])
def test_bad_parameters_say_what_is_wrong(spec, message):
    with pytest.raises(UsageError, match=message):
        parse_assignment(spec)


def test_hyperfine_forms():
    assert parse_hyperfine_list("size", "a,b") == ("size", ["a", "b"])
    assert parse_hyperfine_scan("n", "1", "3") == ("n", [1, 2, 3])
    assert parse_hyperfine_scan("n", "0", "10", "5") == ("n", [0, 5, 10])


def test_cartesian_product_first_parameter_slowest():
    sweep = merge([("a", [1, 2]), ("b", ["x", "y"])])
    assert cartesian(sweep) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"},
                                {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    assert cartesian({}) == [{}]


def test_parameter_given_twice_is_refused():
    with pytest.raises(UsageError, match="given twice"):
        merge([("a", [1]), ("a", [2])])


def test_placeholders_and_substitution():
    assert placeholders("input-{size}.dat {n}") == {"size", "n"}
    assert placeholders("awk '{print $1}'") == set()
    assert placeholders("{{literal}}") == set()
    assert substitute("input-{size}.dat", {"size": "small"}) == "input-small.dat"
    assert substitute("-t {t}", {"t": 2.0}) == "-t 2"
    assert substitute("{{x}} {n}", {"n": 3}) == "{x} 3"
    with pytest.raises(UsageError, match=r"unknown placeholder \{size\}"):
        substitute("input-{size}.dat", {})


def test_evaluate_is_arithmetic_only():
    assert evaluate("2*ncpus+1", {"ncpus": 4}) == 9
    with pytest.raises(UsageError):
        evaluate("__import__('os')")


def test_listed_values_may_be_expressions_of_machine_variables():
    assert parse_assignment("p=2*ncpus", {"ncpus": 3}) == ("p", [6])
    assert parse_assignment("p=1,ncpus", {"ncpus": 3}) == ("p", [1, 3])
    assert parse_assignment("t=100%", {"ncpus": 3}) == ("t", ["100%"])
