"""Every change-point detector's and every compare test's output on a fixed set of generated
inputs, as one JSON text: tests/data/methods_golden.json holds it as recorded before the
methods became a registry (issue 43), and tests/stats/test_methods_golden.py checks that the
same inputs still give the same bytes.

    python tests/stats/methods_golden.py > tests/data/methods_golden.json   # record again

Record again only for a change meant to change a method's output, and say so in its commit.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from perflab.model.records import Direction, MeanKind


def _series() -> dict[str, Any]:
    """Flat series and groups of samples per point, from fixed seeds."""
    rng = np.random.default_rng(43)
    noise = rng.normal(0.0, 1.0, 400)
    step = np.r_[100 + 2 * noise[:60], 110 + 2 * noise[60:120]]
    steps = np.r_[50 + noise[:40], 56 + noise[40:90], 52 + noise[90:150]]
    steps[[10, 70, 71]] += 15.0                                     # spikes
    gaps = step.copy()
    gaps[[5, 30, 61, 62, 90]] = np.nan
    gaps[100] = np.inf
    spread = np.r_[20 + 0.5 * noise[:100], 20 + 3.0 * noise[100:200]]
    trend = 10 + 0.05 * np.arange(120) + 0.5 * noise[200:320]
    grouped = [tuple(v) for v in (np.r_[np.full(20, 30.0), np.full(20, 33.0)][:, None]
                                  + rng.normal(0, 1.0, (40, 3)))]
    grouped[7] = ()
    grouped[25] = (29.0,)
    commits = [tuple(v) for v in (np.r_[np.full(15, 8.0), np.full(3, 9.5), np.full(20, 8.0), np.full(14, 7.0)][:, None]
                                  * rng.lognormal(0, 0.02, (52, 4)))]
    return {
        "noise": (40 + noise[:150]).tolist(), "step": step.tolist(), "steps": steps.tolist(),
        "gaps": [float(v) for v in gaps], "spread": spread.tolist(), "trend": trend.tolist(),
        "short": step[54:66].tolist(), "tiny": [1.0, 2.0, 3.0], "constant": [5.0] * 30,
        "grouped": grouped, "commits": commits,
    }


#: (name, keywords of detect) for every method; each runs on every series
_DETECT_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("default", {}),
    ("min_magnitude", {"min_magnitude": 0.05}),
    ("median", {"centre": "median"}),
    ("commits", {"commits": True, "centre": "median"}),
    ("commits_magnitude", {"commits": True, "centre": "median", "min_magnitude": 0.05}),
]
_OWN_CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "mosum": [("rate", {"false_rate": 2.0, "min_size": 8}), ("spread", {"spread": True}),
              ("commits_rate", {"commits": True, "false_rate": 2.0}), ("bad", {"false_rate": 0.0})],
    "e-divisive": [("window", {"window": 20, "max_pvalue": 0.01}), ("bad", {"window": 2}),
                   ("bad_p", {"max_pvalue": 0.0})],
    "pelt": [("bic", {"penalty": "bic", "min_size": 5}), ("number", {"penalty": 4.0})],
    "binseg": [("aic", {"penalty": "aic"}), ("number", {"penalty": 4.0, "min_size": 4})],
}


def _detect(method: str, values: Any, keywords: dict[str, Any]) -> Any:
    """stats.changepoints.detect's points with `keywords` (the method's parameters, and
    centre and commits), or the error it raised. (Recorded when detect took every method's
    parameters as its own keywords.)"""
    from perflab.model.methods import change_point_method
    from perflab.stats.changepoints import detect
    options = dict(keywords)
    common = {k: options.pop(k) for k in ("centre", "commits") if k in options}
    try:
        points = detect(values, method=method, params=change_point_method(method).params(**options), **common)
    except ValueError as error:
        return {"error": str(error)}
    return [_plain(p) for p in points]


def changepoints() -> dict[str, Any]:
    out: dict[str, Any] = {}
    series = _series()
    for method in ("mosum", "e-divisive", "pelt", "binseg"):
        for call, keywords in _DETECT_CALLS + _OWN_CALLS[method]:
            for name, values in series.items():
                out[f"{method} {call} {name}"] = _detect(method, values, keywords)
    return out


def file_changes() -> dict[str, Any]:
    """analysis.changepoints.file_changes (perflab changepoints): auto, parameters, the tip."""
    from perflab.analysis.changepoints import file_changes as changes
    from perflab.formats.series import SeriesFile
    series = _series()
    flat = SeriesFile("flat", None, None, {k: [(v,) for v in series[k]] for k in ("step", "short", "steps")})
    labelled = SeriesFile("commits", "commit", [f"c{i}" for i in range(52)], {"t": list(series["commits"])})
    out: dict[str, Any] = {}
    for method in ("auto", "mosum", "e-divisive", "pelt", "binseg"):
        for spread in (False, True):
            for file in (flat, labelled):
                key = f"{method} spread={spread} {file.path}"
                try:
                    found = _file_changes(changes, file, method, spread)
                except Exception as error:   # the usage errors it raises are output too
                    out[key] = {"error": f"{type(error).__name__}: {error}"}
                    continue
                out[key] = _plain(found)
    return out


def _file_changes(changes: Callable[..., Any], file: Any, method: str, spread: bool) -> Any:
    from perflab.model.methods import DetectSettings
    settings = DetectSettings(window=30, max_pvalue=0.005, penalty="bic", min_magnitude=0.01, spread=spread)
    return changes(file, [], method=method, direction=Direction.LOWER, settings=settings)


def _pairs() -> list[tuple[str, Any]]:
    """(name, stats.difference.Pair) of every kind of row a report meets."""
    from perflab.stats.difference import Pair
    from perflab.stats.host_prior import Prior, Spread
    from perflab.stats.separate_runs import RunToRun
    from perflab.stats.variance import RunVariance
    rng = np.random.default_rng(4343)
    base = rng.lognormal(0.0, 0.03, 12) * 100
    same = rng.lognormal(0.0, 0.03, 12) * 100
    slower = rng.lognormal(0.0, 0.03, 12) * 106
    bimodal = np.r_[rng.normal(100, 1, 6), rng.normal(130, 1, 6)]
    stepped = np.round(base / 5) * 5
    prior = Prior(s0_squared=0.004536, d0=0.7430, groups=36, data_df=36.0)
    variance = RunVariance(sigma2=0.0004, df=6.0, runs=7, source="replicate runs")
    lower, higher, amean, hmean = Direction.LOWER, Direction.HIGHER, MeanKind.ARITHMETIC, MeanKind.HARMONIC
    return [
        ("same", Pair(base, same, lower, amean)),
        ("slower", Pair(base, slower, lower, amean)),
        ("slower rate", Pair(base, slower, higher, hmean, noise_floor=0.02)),
        ("three", Pair(base[:3], slower[:3], lower, amean)),
        ("one", Pair(base[:1], slower[:1], lower, amean)),
        ("empty", Pair([], slower, lower, amean)),
        ("unequal", Pair(base, slower[:5], higher, amean)),
        ("nonpositive", Pair(np.r_[base[:6], -1.0, 0.0], slower[:8], lower, amean)),
        ("constant", Pair([7.0] * 8, [7.0] * 8, lower, amean)),
        ("bimodal", Pair(base, bimodal, lower, amean)),
        ("stepped", Pair(stepped, np.round(slower / 5) * 5, lower, amean)),
        ("separate variance", Pair(base, slower, lower, amean, separate_runs=True, run_variance=variance,
                                   run_shares=(0.5, 0.5))),
        ("separate unknown", Pair(base, slower, lower, amean, separate_runs=True)),
        ("separate prior", Pair(base, slower, lower, amean, separate_runs=True, run_to_run=RunToRun(
            prior, default=True, benchmarks=12, own=Spread(0.0002, 3.0, 0.0001, 4.0), own_runs=4))),
        ("separate prior same", Pair(base, same, higher, hmean, separate_runs=True,
                                     run_to_run=RunToRun(prior, default=True, benchmarks=12))),
    ]


def compare_tests() -> dict[str, Any]:
    """compare_rows of every pair by every method, and decide over each method's report."""
    from perflab.stats.difference import compare, compare_rows, decide
    pairs = _pairs()
    out: dict[str, Any] = {}
    for method in ("welch-log", "mann-whitney", "mmtests", "lkp"):
        rows = compare_rows([p for _, p in pairs], method=method, confidence=0.95, seed=7)
        for (name, _), row in zip(pairs, rows):
            out[f"{method} {name}"] = _plain(row)
        for (name, _), row in zip(pairs, decide(rows, q=0.05)):
            out[f"{method} {name} decided"] = _plain(row)
        one = compare(pairs[1][1].base, pairs[1][1].new, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC,
                      method=method, confidence=0.9)
        out[f"{method} compare 90%"] = _plain(one)
    return out


def _plain(value: Any) -> Any:
    """JSON-able: dataclasses as dicts, enums as their values, arrays as lists, floats as
    they are (json writes each float's shortest repr, so equal text is equal bits)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else 0.0   # keep the sign of a zero
    return value


def golden() -> str:
    """The whole record, as the JSON text the file holds."""
    record = {**changepoints(), **{f"file {k}": v for k, v in file_changes().items()},
              **{f"compare {k}": v for k, v in compare_tests().items()}}
    # one line per output: a change shows which outputs moved
    return "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in record.items()) + "\n}\n"


if __name__ == "__main__":
    sys.stdout.write(golden())
