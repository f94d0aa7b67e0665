#!/usr/bin/env python3
"""Annotate the real regimes of the noise recordings by a stated rule, into labels.json.

The recordings (bench/data/noise, noise-quiet, noise-idle) are runs of unchanged commands,
but the machine has regimes: warm-up, load from other users, write-back. This labels them
by a rule that uses no change-point detector of perflab's, only block medians, at the
resolution of the robot's commit:

  1. Each recording is cut into blocks of BLOCK repetitions, the repetitions perflab
     measures a commit with by default (RunOptions.repetitions); a block's median is its level.
  2. The reference level is the median of the block levels. A level's noise is the
     within-block scatter: √(π/2)·s/√BLOCK (the sd of a median of BLOCK normal values), s
     the median over blocks of each block's 1.4826·MAD -- the repetitions' own scatter, which
     the regimes between blocks do not inflate.
  3. A block is off-level when its level is further from the reference than the metric's
     noise floor (perflab claims no change below it: MetricInfo.noise_floor, 1%) AND than
     z noise sds, z the two-sided Bonferroni bar for FALSE_LABEL per recording over its
     blocks: on change-free normal repetitions at most that share of recordings holds one
     off-level block by chance.
  4. A regime is a maximal run of at least MIN_BLOCKS consecutive off-level blocks on one
     side (one off-level commit is an outlier -- the issue's "suspect" --, a level held over
     two commits a regime); one that starts at the first block is a warm-up, the others
     level shifts.

Each file's header also gives the load average before and after its run, copied into the
labels (it dates a set's load, not a regime inside a run).

Usage: bench/label_regimes.py [--write] [--sets NAME ...]   (without --write: print the regimes)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))
sys.path.insert(0, str(ROOT))
SETS = ("noise", "noise-quiet", "noise-idle")
FALSE_LABEL = 0.05  # the conventional 5%: the chance that a change-free recording gets a label
MIN_BLOCKS = 2      # a regime is a level held over at least two commits


def block() -> int:
    """Repetitions per block: perflab's default per commit."""
    from perflab.model.run_request import RunOptions
    return RunOptions().repetitions


def floor() -> float:
    """The metric's relative noise floor (perflab's default)."""
    from perflab.model.records import MetricInfo
    return MetricInfo("", "").noise_floor


def regimes(x: np.ndarray) -> list[dict[str, object]]:
    """The regimes of one recording by the module's rule, positions in repetitions [first, end)."""
    import changepoints_accuracy as accuracy
    from scipy.stats import norm
    size = block()
    n = x.size // size
    blocks = x[:n * size].reshape(n, size)
    level = np.median(blocks, axis=1)
    ref = float(np.median(level))
    scale = float(np.median([accuracy.robust_scale(b) for b in blocks]))
    noise = math.sqrt(math.pi / 2) * scale / math.sqrt(size)
    bar = max(float(norm.isf(FALSE_LABEL / (2 * n))) * noise, floor() * abs(ref))
    side = np.where(np.abs(level - ref) > bar, np.sign(level - ref), 0)
    out, i = [], 0
    while i < n:
        j = i
        while j < n and side[j] != 0 and side[j] == side[i]:
            j += 1
        if side[i] != 0 and j - i >= MIN_BLOCKS:
            held = float(np.median(level[i:j]))
            out.append({"first": i * size, "end": j * size, "kind": "warm-up" if i == 0 else "level shift",
                        "level_pct": round(100.0 * (held - ref) / ref, 1),
                        "noise_sds": round(abs(held - ref) / noise, 1) if noise > 0 else None,
                        "bar_pct": round(100.0 * bar / abs(ref), 2)})
        i = max(j, i + 1)
    return out


def header(path: Path, key: str) -> str | None:
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), metavar="NAME",
                        help="recording sets under bench/data (default: the three)")
    parser.add_argument("--write", action="store_true", help="write labels.json beside each set")
    args = parser.parse_args()
    import changepoints_accuracy as accuracy
    for s in args.sets:
        folder = ROOT / "data" / s
        found = {name: regimes(x) for name, x in accuracy.load_noise(folder).items()}
        points = sum(x.size for x in accuracy.load_noise(folder).values())
        inside = sum(r["end"] - r["first"] for v in found.values() for r in v)  # type: ignore[operator]
        print(f"{s}: {sum(map(len, found.values()))} regimes in {len(found)} recordings, "
              f"{inside} of {points} repetitions inside them")
        for name, v in found.items():
            if v:
                print(f"  {name}: " + ", ".join(f"{r['first']}-{r['end']} {r['kind']} {r['level_pct']:+}%" for r in v))
        if args.write:
            doc = {"rule": __doc__.split("\n\n")[1] + "\n" + __doc__.split("\n\n")[2],
                   "block": block(), "false_label_per_recording": FALSE_LABEL, "min_pct": 100 * floor(),
                   "min_blocks": MIN_BLOCKS,
                   "load_average_before_after": {p.stem: header(p, "load average before / after")
                                                 for p in sorted(folder.glob("*.csv"))},
                   "regimes": found}
            (folder / "labels.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
