#!/usr/bin/env python3
"""The tip detector's false alerts on change-free noise whose size is a share of its level
(stats/tip.py), rule against rule on the same series.

A robot watches each series (`tip.watch`'s memory of confirmed levels, one look a commit);
an alert is a distinct (state, first commit) it raised. Per cell -- noise family (normal:
1 + cv·N(0, 1); lognormal: exp(σ·N(0, 1)), σ² = ln(1 + cv²), the same CV), CV, series length
-- the suspects and confirmed alerts per 1,000 looks with exact Poisson 95% intervals, and
how many of them are downward. The stated rate is tip.FALSE_RATE_PER_1000 (0.5).

Rules: ``code`` is `tip.look` as in src (positive values on their values and their logs,
both rules both ways, each scale at half the rate); ``values`` reads the values alone at the
full rate; ``boxcox`` reads ONE scale at the full rate, the one of the larger Box-Cox profile
likelihood (lambda = 1 values, lambda = 0 logs, Jacobian included) of the history before the
look's longest tip; ``lighter-suspects`` and ``boxcox-suspects`` keep the code's
confirmations and read the suspect rule at the full rate, the first a way up on the logs and
a way down on the values (each way's lighter tail for noise normal on either scale), the
second both ways on the Box-Cox scale. (Candidates of issue #18's tip-scale; bench/README.md.)

Usage: bench/tip_null.py [--looks 40000] [--lengths 40 100] [--cv 1 5 10 20 30]
       [--families normal lognormal] [--rules code lighter-suspects boxcox-suspects] [--jobs 2] [--seed 2026]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from perflab.stats import tip

CHUNK = 2_000  # looks per task: small enough to share the work across the jobs evenly
RATE = tip.FALSE_RATE_PER_1000
LOOK = tip.look  # the code's look, kept should a caller put a candidate in tip.look's place
RANK = {tip.CONFIRMED: 2, tip.SUSPECT: 1}


def logs_fit_better(history: np.ndarray) -> bool:
    """Box-Cox profile log-likelihoods l(1) = −n/2·ln σ̂²(x), l(0) = −n/2·ln σ̂²(ln x) − Σ ln x:
    l(0) > l(1) exactly when sd(x)/sd(ln x) exceeds the geometric mean (scale-free)."""
    logs = np.log(history)
    sd_x, sd_log = float(history.std()), float(logs.std())
    return sd_log > 0.0 and math.log(sd_x) - math.log(sd_log) > float(logs.mean())


def _prepared(values: np.ndarray, since: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(positive values from ``since``, their indices, the look's longest tip), or None when
    the look is `tip.look`'s own (undecided, or values not all positive: one scale)."""
    x = np.asarray(values, dtype=float)
    where = np.flatnonzero(np.isfinite(x[since:])) + since
    top = min(tip.MAX_TIP, where.size - tip.MIN_HISTORY)
    v = x[where]
    return (v, where, top) if top >= 1 and bool((v > 0).all()) else None


def look_boxcox(values: np.ndarray, *, since: int = 0) -> tip.TipFinding:
    """ONE scale a look, chosen from the history before the longest tip, at the full rate."""
    ready = _prepared(values, since)
    if ready is None:
        return LOOK(values, since=since)
    v, where, top = ready
    logs = np.log(v)
    if not logs_fit_better(v[:-top][-tip.HISTORY_CAP:]):
        return tip._look_on(v, logs, where, top, RATE)
    found = tip._look_on(logs, logs, where, top, RATE)
    if found.status in (tip.SUSPECT, tip.CONFIRMED):
        found = replace(found, level=math.exp(found.level), level_after=float(np.median(v[-found.commits:])))
    return found


def _suspect(scales: list[tuple[np.ndarray, float]], where: np.ndarray, top: int, rate: float) -> tip.TipFinding:
    """The suspect rule (m = 1 .. SUSPECT_TIP) at the look's full rate, each (scale, sign) read
    one way (sign 0: both ways); the first test past its bar, else NONE."""
    for m in range(1, min(top, tip.SUSPECT_TIP) + 1):
        for s, sign in scales:
            past = s[:-m][-tip.HISTORY_CAP:]
            sd = float(past.std(ddof=1))
            z = (float(s[-m:].mean()) - float(past.mean())) / sd if sd > 0 else 0.0
            if (sign == 0 or sign * z > 0) and abs(z) * math.sqrt(m) > tip.suspect_bar(past.size, m, rate, top):
                return tip.TipFinding(tip.SUSPECT, int(where[-m]), m, float(past.mean()), sd, math.nan, z,
                                      tip.suspect_bar(past.size, m, rate, top), past.size)
    return tip.TipFinding(tip.NONE, -1, 0, math.nan, math.nan, math.nan, math.nan, math.nan, 0)


def _with_suspects(values: np.ndarray, *, since: int = 0, false_rate: float = RATE, scales: str) -> tip.TipFinding:
    """main's confirmations (the median rule on values and logs, each at half the rate) with
    the suspect rule read on ``scales``: "lighter" a way up on the logs, a way down on the
    values; "boxcox" both ways on the scale `logs_fit_better` picks from the history before
    the look's longest tip."""
    ready = _prepared(values, since)
    if ready is None:
        return LOOK(values, since=since, false_rate=false_rate)
    v, where, top = ready
    logs = np.log(v)
    on_values = tip._look_on(v, logs, where, top, false_rate / 2)
    on_logs = tip._look_on(logs, logs, where, top, false_rate / 2)
    for found in (on_values, on_logs):
        if found.status == tip.CONFIRMED:
            return found
    if scales == "lighter":
        return _suspect([(logs, 1.0), (v, -1.0)], where, top, false_rate)
    return _suspect([(logs if logs_fit_better(v[:-top][-tip.HISTORY_CAP:]) else v, 0.0)], where, top, false_rate)


def look_values(values: np.ndarray, *, since: int = 0) -> tip.TipFinding:
    """The values alone at the full rate."""
    ready = _prepared(values, since)
    if ready is None:
        return LOOK(values, since=since)
    v, where, top = ready
    return tip._look_on(v, np.log(v), where, top, RATE)


RULES: dict[str, Callable[..., tip.TipFinding]] = {
    "code": LOOK, "boxcox": look_boxcox, "values": look_values,
    "lighter-suspects": partial(_with_suspects, scales="lighter"),
    "boxcox-suspects": partial(_with_suspects, scales="boxcox")}


def watch(x: np.ndarray, rule: Callable[..., tip.TipFinding]) -> list[tip.TipFinding]:
    """`tip.watch` with ``rule`` for its look (the robot's memory of confirmed levels)."""
    looks, begin = [], 0
    for end in range(tip.MIN_HISTORY + 1, x.size + 1):
        found = rule(x[:end], since=begin)
        looks.append(found)
        if found.status == tip.CONFIRMED and found.start > begin:
            begin = found.start
    return looks


def noise(rng: np.random.Generator, family: str, cv: float, length: int) -> np.ndarray:
    if family == "normal":
        return 1.0 + cv * rng.standard_normal(length)
    return np.exp(math.sqrt(math.log1p(cv * cv)) * rng.standard_normal(length))


def chunk(task: tuple[str, float, int, int, tuple[str, ...], int]) -> dict[str, np.ndarray]:
    """(looks, suspects, confirmed, downward) per rule over one chunk's series, each series
    read by every rule (paired)."""
    family, cv, length, series, rules, seed = task
    rng = np.random.default_rng(seed)
    out = {rule: np.zeros(4, dtype=int) for rule in rules}
    for _ in range(series):
        x = noise(rng, family, cv, length)
        for rule in rules:
            found = watch(x, RULES[rule])
            alerts = {(f.status, f.start): f for f in found if f.status in (tip.SUSPECT, tip.CONFIRMED)}
            out[rule] += [len(found), sum(s == tip.SUSPECT for s, _ in alerts),
                          sum(s == tip.CONFIRMED for s, _ in alerts), sum(f.z < 0 for f in alerts.values())]
    return out


def poisson_interval(count: int, exposure: float) -> tuple[float, float]:
    """Exact (Garwood) 95% interval of a Poisson rate per 1,000 of ``exposure``."""
    from scipy.stats import chi2
    low = chi2.ppf(0.025, 2 * count) / 2 if count else 0.0
    high = chi2.ppf(0.975, 2 * count + 2) / 2
    return 1000 * low / exposure, 1000 * high / exposure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--looks", type=int, default=40_000, help="looks per cell and rule")
    parser.add_argument("--lengths", nargs="+", type=int, default=[40, 100])
    parser.add_argument("--cv", nargs="+", type=float, default=[1, 5, 10, 20, 30], help="noise sd, %% of level")
    parser.add_argument("--families", nargs="+", default=["normal", "lognormal"], choices=("normal", "lognormal"))
    parser.add_argument("--rules", nargs="+", default=["code", "lighter-suspects", "boxcox-suspects"],
                        choices=tuple(RULES))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    cells = [(f, cv / 100, n) for f in args.families for n in args.lengths for cv in args.cv]
    tasks = []
    for i, (family, cv, length) in enumerate(cells):
        per_series = length - tip.MIN_HISTORY
        series = math.ceil(args.looks / per_series)
        step = max(1, CHUNK // per_series)
        tasks += [(i, (family, cv, length, min(step, series - s), tuple(args.rules),
                       args.seed * 1_000_003 + i * 7919 + s)) for s in range(0, series, step)]
    totals = {(i, r): np.zeros(4, dtype=int) for i in range(len(cells)) for r in args.rules}
    with ProcessPoolExecutor(args.jobs) as pool:
        for (i, _), result in zip(tasks, pool.map(chunk, [t for _, t in tasks]), strict=True):
            for rule, counts in result.items():
                totals[i, rule] += counts
    print(f"stated {tip.FALSE_RATE_PER_1000} per 1,000 looks; per 1,000 looks (exact Poisson 95%)")
    print("| family | CV | length | rule | looks | suspect | confirmed | all (down) |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (family, cv, length) in enumerate(cells):
        for rule in args.rules:
            looks, sus, con, down = (int(c) for c in totals[i, rule])
            cols = [f"{1000 * c / looks:.2f} ({lo:.2f}-{hi:.2f})"
                    for c in (sus, con, sus + con) for lo, hi in [poisson_interval(c, looks)]]
            print(f"| {family} | {100 * cv:g}% | {length} | {rule} | {looks} | {cols[0]} | {cols[1]} | "
                  f"{cols[2]} ({down}) |")


if __name__ == "__main__":
    main()
