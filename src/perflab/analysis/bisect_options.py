"""What `perflab bisect` is asked: the shell lines and the metric (a BenchSpec), the error rates
and the search's choices; and the per-step test it makes of them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.execute.bisect_runs import BenchSpec
from perflab.stats.sequential import SequentialTest


@dataclass(frozen=True)
class BisectOptions(BenchSpec):
    """`perflab bisect`'s options, typed (cli/bisect.py builds them, check_options checks them):
    what to do with each commit (the BenchSpec the builds and runs take, so open_bench takes
    these options as they are) and the search's error rates and choices."""

    higher_is_better: bool = False  # of --metric-regex's figure (times are lower-is-better)
    confidence: float = 0.99   # of the result: split over the steps
    min_pairs: int = 3
    max_pairs: int = 100
    end_pairs: int = 10        # pairs of the ends at the first look (the noise scale needs them); doubled
    max_end_pairs: int = 160
    ends_alpha: float = 0.01
    seed: int | None = None    # of the order inside pairs; None: drawn and reported
    fixed_runs: int | None = None  # the classic peer: N unpaired runs per commit, closer end wins
    first_parent: bool = False     # search the first-parent line only (descending into merges)
    direction: str = "any"         # which change to look for: any, regression, improvement
    neither: str = "continue"      # at a commit like neither end: continue, skip, stop
    terms: tuple[str, str] = ("old", "new")

    def test(self, candidates: int) -> SequentialTest:
        """The per-step test: the result's error rate split over ceil(log2 N) steps."""
        error = (1.0 - self.confidence) / steps_for(candidates)
        return SequentialTest(error, error, self.min_pairs, self.max_pairs)


def steps_for(candidates: int) -> int:
    """Steps of a bisect over ``candidates`` commits (the first new one is one of them)."""
    return max(1, math.ceil(math.log2(max(candidates, 2))))
