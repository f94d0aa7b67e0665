#!/usr/bin/env python3
"""Annotate the real regimes of the noise recordings by a stated rule, into labels.json.

The recordings (bench/data/noise, noise-quiet, noise-idle) are runs of unchanged commands,
but the machine has regimes: warm-up, load from other users, write-back. This labels them
by a rule that uses no change-point detector of perflab's, only block medians:

  1. Each recording is cut into blocks of BLOCK repetitions; each block's median is its level.
  2. The reference level is the median of the block levels; the blocks' noise is
     1.4826·MAD of successive differences of block levels / √2 (a regime moves few of them).
  3. A block is off-level when its level is further than FAR noise sds AND MIN_PCT % from
     the reference.
  4. A regime is a maximal run of at least MIN_BLOCKS consecutive off-level blocks on one
     side; one that starts at the first block is a warm-up, the others level shifts.

Each file's header also gives the load average before and after its run, copied into the
labels (it dates a set's load, not a regime inside a run).

Usage: bench/label_regimes.py [--write]   (without --write: print the regimes)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
SETS = ("noise", "noise-quiet", "noise-idle")
BLOCK = 10      # repetitions per block
FAR = 5.0       # noise sds of the block levels
MIN_PCT = 3.0   # % of the reference level
MIN_BLOCKS = 2  # a regime lasts at least this many blocks (20 repetitions)


def regimes(x: np.ndarray) -> list[dict[str, object]]:
    """The regimes of one recording by the module's rule, positions in repetitions [first, end)."""
    n = x.size // BLOCK
    level = np.median(x[:n * BLOCK].reshape(n, BLOCK), axis=1)
    ref = float(np.median(level))
    d = np.diff(level)
    noise = 1.482602 * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2)
    side = np.where(np.abs(level - ref) > max(FAR * noise, MIN_PCT / 100 * abs(ref)), np.sign(level - ref), 0)
    out, i = [], 0
    while i < n:
        j = i
        while j < n and side[j] != 0 and side[j] == side[i]:
            j += 1
        if side[i] != 0 and j - i >= MIN_BLOCKS:
            pct = 100.0 * (float(np.median(level[i:j])) - ref) / ref
            out.append({"first": i * BLOCK, "end": j * BLOCK, "kind": "warm-up" if i == 0 else "level shift",
                        "level_pct": round(pct, 1)})
        i = max(j, i + 1)
    return out


def header(path: Path, key: str) -> str | None:
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write labels.json beside each set")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import changepoints_accuracy as accuracy
    for s in SETS:
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
                   "block": BLOCK, "far_sds": FAR, "min_pct": MIN_PCT, "min_blocks": MIN_BLOCKS,
                   "load_average_before_after": {p.stem: header(p, "load average before / after")
                                                 for p in sorted(folder.glob("*.csv"))},
                   "regimes": found}
            (folder / "labels.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
