"""Change-point detection: synthetic series with known steps, scored by precision/recall.

A detection within ±5 points of a true change counts (one detection per change), the
margin of the public annotated evaluation data (TCPDBench). `pytest -s` prints the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from perflab.model.records import Direction
from perflab.stats import ChangePoint, e_divisive, oriented, pelt
from perflab.stats.changepoints import energy_statistic, robust_noise_sd

MARGIN = 5
METHODS = {"e_divisive": e_divisive, "pelt": pelt, "none": lambda x: []}


@dataclass(frozen=True)
class Series:
    values: np.ndarray
    changes: tuple[int, ...]
    ratios: tuple[float, ...]  # |step| / noise sd, per change


def make_series(rng: np.random.Generator, n: int, n_changes: int, *, large: bool = False) -> Series:
    """Level 100, steps of 1-10% (either sign), Gaussian noise of CoV 1-5%, spacing >= 20.

    ``large``: CoV 1-2% and steps of 5·CoV to 10%, i.e. every step >= ~5 noise sds.
    """
    cov = rng.uniform(0.01, 0.02) if large else rng.uniform(0.01, 0.05)
    sd = 100 * cov
    changes: list[int] = []
    for _ in range(200):
        if len(changes) == n_changes:
            break
        c = int(rng.integers(20, n - 20))
        if all(abs(c - o) >= 20 for o in changes):
            changes.append(c)
    changes.sort()
    level = np.full(n, 100.0)
    ratios = []
    for c in changes:
        low = 5 * cov if large else 0.01
        step = level[c - 1] * rng.uniform(low, 0.10) * rng.choice([-1, 1])
        level[c:] += step
        ratios.append(abs(step) / sd)
    return Series(level + rng.normal(0, sd, n), tuple(changes), tuple(ratios))


def match(truth: tuple[int, ...], found: list[int]) -> set[int]:
    """Indices into `truth` matched one-to-one by a detection within ±MARGIN (greedy, nearest)."""
    pairs = sorted((abs(t - f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found)
                   if abs(t - f) <= MARGIN)
    used_t, used_f = set(), set()
    for _, i, j in pairs:
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
    return used_t


def tcpd_f1(truth: tuple[int, ...], found: list[int]) -> float:
    """F1 as TCPDBench scores it: index 0 counts as a change in both truth and detections."""
    t, f = (0, *truth), [0, *found]
    tp = len(match(t, f))
    precision, recall = tp / len(f), tp / len(t)
    return 2 * precision * recall / (precision + recall)


def lengths(rng: np.random.Generator, k: int) -> list[int]:
    return [int(v) for v in np.exp(rng.uniform(math.log(50), math.log(5000), k))]


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(20261122)
    stepped = [make_series(rng, n, max(1, min(8, n // 150))) for n in lengths(rng, 60)]
    flat = [make_series(rng, n, 0) for n in lengths(rng, 40)]
    large = [make_series(rng, n, max(1, min(8, n // 150)), large=True) for n in lengths(rng, 30)]
    out = {}
    for name, method in METHODS.items():
        buckets = {"<2sd": [0, 0], "2-5sd": [0, 0], ">=5sd": [0, 0]}  # [found, total]
        tp = fp = 0
        f1 = []
        for k, s in enumerate(stepped + large):
            found = [c.index for c in method(s.values)]
            hit = match(s.changes, found)
            if k < len(stepped):  # precision and F1 on the mixed suite only
                tp += len(hit)
                fp += len(found) - len(hit)
                f1.append(tcpd_f1(s.changes, found))
            for i, r in enumerate(s.ratios):
                b = buckets["<2sd" if r < 2 else "2-5sd" if r < 5 else ">=5sd"]
                b[0] += i in hit
                b[1] += 1
        aa_found = [len(method(s.values)) for s in flat]
        out[name] = {
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": {k: v[0] / v[1] for k, v in buckets.items()},
            "n": {k: v[1] for k, v in buckets.items()},
            "f1": float(np.mean(f1)),
            "aa_series_clean": sum(k == 0 for k in aa_found) / len(flat),
            "aa_false_per_1000": 1000 * sum(aa_found) / sum(s.values.size for s in flat),
        }
    n = out["none"]["n"]
    print(f"\nSeries of 50-5000 points, margin ±5. Precision and F1(tcpd): 60 series with steps of"
          f" 1-10%, noise CoV 1-5%.\nRecall: those plus 30 with steps >= 5 sd (changes: {n['<2sd']}"
          f" <2sd, {n['2-5sd']} 2-5sd, {n['>=5sd']} >=5sd). A/A: 40 series without steps.")
    print(f"{'method':<11}{'precision':>10}{'rec<2sd':>9}{'rec2-5sd':>9}{'rec>=5sd':>9}"
          f"{'F1(tcpd)':>9}{'A/A clean':>10}{'A/A fp/1k':>10}")
    for name, r in out.items():
        rec = r["recall"]
        print(f"{name:<11}{r['precision']:>10.3f}{rec['<2sd']:>9.3f}{rec['2-5sd']:>9.3f}"
              f"{rec['>=5sd']:>9.3f}{r['f1']:>9.3f}{r['aa_series_clean']:>10.3f}"
              f"{r['aa_false_per_1000']:>10.3f}")
    return out


# The series are seeded, so the scores are fixed numbers; the thresholds sit below what
# was measured (in the comments) to guard regressions, not to prove a rate.

@pytest.mark.parametrize("name", ["e_divisive", "pelt"])
def test_recall_of_steps_of_2_sd_and_more(scores, name):
    # measured: >=5 sd 1.000 (106 changes) for both; 2-5 sd 0.992 / 1.000 (128 changes)
    assert scores[name]["recall"][">=5sd"] >= 0.95
    assert scores[name]["recall"]["2-5sd"] >= 0.9


@pytest.mark.parametrize("name", ["e_divisive", "pelt"])
def test_precision_on_stepped_series(scores, name):
    # measured 0.929 / 0.902: the false ones are mostly sub-2-sd steps found more than 5
    # points away from where they are (a location error counts as a false detection)
    assert scores[name]["precision"] >= 0.85


@pytest.mark.parametrize("name", ["e_divisive", "pelt"])
def test_few_false_detections_on_aa_series(scores, name):
    # measured: 39 of 40 A/A series without any detection, 0.034 false per 1000 points
    assert scores[name]["aa_series_clean"] >= 0.9
    assert scores[name]["aa_false_per_1000"] <= 0.2


@pytest.mark.parametrize("name", ["e_divisive", "pelt"])
def test_beats_the_no_change_baseline(scores, name):
    assert scores[name]["f1"] > scores["none"]["f1"]


STEP = np.concatenate([np.full(40, 100.0), np.full(40, 110.0)]) + np.random.default_rng(3).normal(0, 1, 80)


@pytest.mark.parametrize("method", [e_divisive, pelt])
def test_a_clear_step_is_described(method):
    (cp,) = method(STEP)
    assert isinstance(cp, ChangePoint)
    assert cp.index == 40
    assert cp.mean_before == pytest.approx(STEP[:40].mean())
    assert cp.mean_after == pytest.approx(STEP[40:].mean())
    assert cp.stddev_before == pytest.approx(STEP[:40].std(ddof=1))
    assert cp.stddev_after == pytest.approx(STEP[40:].std(ddof=1))
    assert cp.change_pct == pytest.approx(100 * (cp.mean_after - cp.mean_before) / cp.mean_before)
    assert 9 < cp.change_pct < 11
    assert cp.p_value < 1e-20
    assert cp.method == method.__name__.replace("_", "-")


def test_oriented_makes_positive_better():
    assert oriented(10.0, Direction.HIGHER) == 10.0
    assert oriented(10.0, Direction.LOWER) == -10.0


@pytest.mark.parametrize("method", [e_divisive, pelt])
def test_nan_gaps_are_dropped_and_indices_stay_original(method):
    x = STEP.copy()
    gaps = [3, 17, 38, 39, 40, 41, 60, 79]
    x[gaps] = np.nan
    x[5] = np.inf
    (cp,) = method(x)
    assert cp.index == 42  # first finite value of the new regime in the caller's numbering
    finite = np.isfinite(x)
    assert cp.mean_after == pytest.approx(x[42:][finite[42:]].mean())


@pytest.mark.parametrize("method", [e_divisive, pelt])
def test_index_mapping_with_many_gaps(method):
    rng = np.random.default_rng(5)
    clean = np.concatenate([np.full(100, 50.0), np.full(100, 45.0), np.full(100, 52.0)])
    clean += rng.normal(0, 0.5, 300)
    x = np.full(600, np.nan)
    x[::2] = clean  # every other point missing: clean index i is original 2i
    assert [c.index for c in method(x)] == [200, 400]


@pytest.mark.parametrize("method", [e_divisive, pelt])
@pytest.mark.parametrize("values", [[], [1.0], [1.0, 2.0, 3.0], [np.nan] * 10, [7.0] * 200,
                                    [np.nan, 7.0, 7.0, np.nan] * 50])
def test_short_empty_and_constant_series_give_nothing(method, values):
    assert method(values) == []


def test_pelt_too_short_for_min_size():
    assert pelt([1.0, 1.0, 1.0, 9.0, 9.0], min_size=3) == []
    assert [c.index for c in pelt([1.0, 1.0, 1.0, 9.0, 9.0, 9.0], min_size=3)] == [3]


@pytest.mark.parametrize("method", [e_divisive, pelt])
def test_ten_thousand_points_complete(method):
    rng = np.random.default_rng(11)
    levels = np.repeat(100 + rng.normal(0, 5, 20), 500)
    found = method(levels + rng.normal(0, 1, 10_000))
    assert 15 <= len(found) <= 25  # 19 true steps, a few may be tiny


def test_min_magnitude_merges_small_changes_away():
    rng = np.random.default_rng(2)
    x = np.concatenate([np.full(200, 100.0), np.full(200, 102.0)]) + rng.normal(0, 0.3, 400)
    assert [c.index for c in e_divisive(x)] == [200]
    assert e_divisive(x, min_magnitude=0.05) == []


def test_pelt_penalties():
    rng = np.random.default_rng(4)
    x = rng.normal(100, 1, 3000)
    assert len(pelt(x, penalty="aic")) >= len(pelt(x, penalty="bic")) >= len(pelt(x, penalty="mbic"))
    assert len(pelt(x, penalty=0.0)) == 0  # no penalty: no usable fit, nothing reported
    with pytest.raises(ValueError):
        pelt(x, penalty="nope")


def test_energy_statistic_matches_the_definition():
    x = np.random.default_rng(8).normal(0, 1, 12)
    q = energy_statistic(x)
    for tau in range(2, 11):
        a, b = x[:tau], x[tau:]
        m, n = a.size, b.size
        between = np.abs(a[:, None] - b[None, :]).sum() * 2 / (m * n)
        within_a = np.abs(a[:, None] - a[None, :]).sum() / (m * (m - 1))
        within_b = np.abs(b[:, None] - b[None, :]).sum() / (n * (n - 1))
        assert q[tau] == pytest.approx(m * n / (m + n) * (between - within_a - within_b))
    assert np.isnan(q[[0, 1, 11, 12]]).all()


def test_robust_noise_sd_ignores_steps():
    rng = np.random.default_rng(9)
    x = np.repeat([0.0, 50.0, -20.0], 1000) + rng.normal(0, 2, 3000)
    assert robust_noise_sd(x) == pytest.approx(2, rel=0.1)
    assert robust_noise_sd([3.0] * 5) == 0.0
    assert math.isnan(robust_noise_sd([1.0]))
