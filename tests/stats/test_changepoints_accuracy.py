"""Change-point accuracy on synthetic series with known steps: precision and recall per cell.

Grid: step 1, 2, 5, 10% x noise CoV 1, 2, 5% x length 50, 500, 5000 (seeded). Level 100,
steps of the cell's size with a random sign, Gaussian noise, changes at least 20 points
apart. A detection within ±5 points of a true change counts (one detection per change),
the margin of the public annotated evaluation data (TCPDBench). `pytest -s` prints the
table; the thresholds below sit under what was measured, and are stated in noise sds
because that, not the % step, decides what any method can see.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from perflab.model.methods import CHANGE_POINT_NAMES as METHODS
from perflab.stats.changepoints import detect

MARGIN = 5
STEPS = (0.01, 0.02, 0.05, 0.10)
COVS = (0.01, 0.02, 0.05)
#: length -> (series per cell, changes per series): ~10-20 changes per cell and length
LENGTHS = {50: (12, 1), 500: (4, 3), 5000: (1, 12)}


@dataclass(frozen=True)
class Series:
    values: np.ndarray
    changes: tuple[int, ...]


def make_series(rng: np.random.Generator, n: int, n_changes: int, step: float, cov: float) -> Series:
    changes: list[int] = []
    while len(changes) < n_changes:
        c = int(rng.integers(20, n - 19))
        if all(abs(c - o) >= 20 for o in changes):
            changes.append(c)
    changes.sort()
    level = np.full(n, 100.0)
    for c in changes:
        level[c:] += level[c - 1] * step * rng.choice([-1, 1])
    return Series(level + rng.normal(0, 100 * cov, n), tuple(changes))


def match(truth: tuple[int, ...], found: list[int]) -> int:
    """True changes matched one-to-one by a detection within ±MARGIN (greedy, nearest first)."""
    pairs = sorted((abs(t - f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found)
                   if abs(t - f) <= MARGIN)
    used_t, used_f = set(), set()
    for _, i, j in pairs:
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
    return len(used_t)


def tcpd_f1(truth: tuple[int, ...], found: list[int]) -> float:
    """F1 as TCPDBench scores it: index 0 counts as a change in both truth and detections."""
    tp = match((0, *truth), [0, *found])
    precision, recall = tp / (len(found) + 1), tp / (len(truth) + 1)
    return 2 * precision * recall / (precision + recall)


@dataclass
class Cell:
    step: float
    cov: float
    length: int
    changes: int = 0
    found: dict | None = None     # method -> detections
    hits: dict | None = None      # method -> matched true changes

    @property
    def sds(self) -> float:
        return self.step / self.cov

    def precision(self, method: str) -> float:
        return self.hits[method] / self.found[method] if self.found[method] else float("nan")

    def recall(self, method: str) -> float:
        return self.hits[method] / self.changes


def _fmt(v: float) -> str:
    return "    -" if v != v else f"{v:5.2f}"


@pytest.fixture(scope="module")
def grid():
    rng = np.random.default_rng(20261122)
    cells, f1 = [], {m: [] for m in (*METHODS, "none")}
    for step in STEPS:
        for cov in COVS:
            for length, (count, n_changes) in LENGTHS.items():
                cell = Cell(step, cov, length, found=dict.fromkeys(METHODS, 0),
                            hits=dict.fromkeys(METHODS, 0))
                for _ in range(count):
                    s = make_series(rng, length, n_changes, step, cov)
                    cell.changes += len(s.changes)
                    f1["none"].append(tcpd_f1(s.changes, []))
                    for method in METHODS:
                        found = [c.index for c in detect(s.values, method=method)]
                        cell.found[method] += len(found)
                        cell.hits[method] += match(s.changes, found)
                        f1[method].append(tcpd_f1(s.changes, found))
                cells.append(cell)
    print("\nPrecision P and recall R within ±5 points; step in noise sds = step / CoV.")
    print(f"{'step':>5}{'CoV':>4}{'sds':>5}{'length':>7}{'changes':>8}"
          + "".join(f"{m:>14}" for m in METHODS))
    print(" " * 29 + "    P     R   " * len(METHODS))
    for c in cells:
        print(f"{c.step:>5.0%}{c.cov:>4.0%}{c.sds:>5.1f}{c.length:>7}{c.changes:>8}"
              + "".join(f" {_fmt(c.precision(m))} {_fmt(c.recall(m))}  " for m in METHODS))
    means = {m: float(np.mean(v)) for m, v in f1.items()}
    print("mean F1 (TCPDBench, index 0 counted): "
          + ", ".join(f"{m} {v:.3f}" for m, v in means.items()))
    return cells, means


def _pooled(cells, method, keep) -> tuple[float, float]:
    chosen = [c for c in cells if keep(c)]
    hits = sum(c.hits[method] for c in chosen)
    return hits / sum(c.found[method] for c in chosen), hits / sum(c.changes for c in chosen)


# Measured with this seed (pooled over the cells of each band; precision, recall):
#   band      e-divisive     pelt           binseg
#   < 1 sd    0.57  0.04     0.35  0.09     0.35  0.09   (found, but often > 5 points off)
#   1-2 sd    0.86  0.44     0.80  0.61     0.80  0.61
#   2-5 sd    0.96  0.98     0.98  0.99     0.98  0.99
#   >= 5 sd   1.00  1.00     0.93  1.00     0.93  1.00   (pelt/binseg: 4 extra on 50 points)
# Under 1 sd nothing is asserted: a change that small is located more than 5 points off
# as often as not, by any method (the noise, not the method, decides).

def _counted(method: str, c: Cell) -> bool:
    """mosum spends a false-alarm budget per point (0.2 per 1,000), so on 50 points it
    keeps only ~1% for the whole series and misses mid-size steps there (2-5 sds: recall
    0.56): its 50-point cells have their own test below, the other grid tests count its
    longer cells."""
    return method != "mosum" or c.length >= 500


@pytest.mark.parametrize("method", METHODS)
def test_steps_of_5_sds_are_found_in_every_cell(grid, method):
    cells, _ = grid
    for c in cells:
        if c.sds >= 5 and _counted(method, c):  # measured 1.00 in every such cell
            assert c.recall(method) >= 0.9, (c.step, c.cov, c.length)


@pytest.mark.parametrize("method", METHODS)
def test_steps_of_2_sds_and_more_are_found_where_they_are(grid, method):
    precision, recall = _pooled(grid[0], method, lambda c: c.sds >= 2 and _counted(method, c))
    assert recall >= 0.95      # measured 0.99-1.00 (mosum, >= 500 points: 0.97)
    assert precision >= 0.9    # measured 0.96-0.98 (mosum 0.98)


def test_mosum_on_50_points_finds_5_sd_steps_and_invents_none(grid):
    precision, recall = _pooled(grid[0], "mosum", lambda c: c.sds >= 5 and c.length == 50)
    assert precision >= 0.95   # measured 1.00
    assert recall >= 0.9       # measured 1.00 (0.75 before the whole-series test; e-divisive, pelt: 1.00)


@pytest.mark.parametrize("method", METHODS)
def test_steps_of_1_to_2_sds_are_rarely_misplaced(grid, method):
    precision, recall = _pooled(grid[0], method, lambda c: 1 <= c.sds < 2 and _counted(method, c))
    assert precision >= 0.7    # measured 0.80-0.86 (mosum 0.80)
    assert recall >= 0.3       # measured 0.44 (e-divisive's t-test is the strictest), 0.61 (mosum 0.60)


@pytest.mark.parametrize("method", METHODS)
def test_beats_the_no_change_answer(grid, method):
    # measured mean F1: mosum 0.794, e-divisive 0.834, pelt 0.838, binseg 0.838, no change 0.573
    assert grid[1][method] > grid[1]["none"] + 0.1


@pytest.mark.parametrize("method", METHODS)
def test_few_false_detections_without_steps(method):
    """A/A: 20 flat series of 50-5000 points, CoV 1-5%: (nearly) nothing to report."""
    rng = np.random.default_rng(7)
    false, points = 0, 0
    for n in np.geomspace(50, 5000, 20).astype(int):
        x = 100 + rng.normal(0, 100 * rng.uniform(0.01, 0.05), n)
        false += len(detect(x, method=method))
        points += n
    # measured over 23,038 points: e-divisive and mosum 2 false detections, pelt and binseg 0
    assert 1000 * false / points <= 0.2

