"""Which commits bisect still suspects, and which one to probe next: git bisect's rule on the graph.

The commits of good..bad (every commit reachable from bad and not from good, as
`git bisect` takes them, or only the first-parent line with ``first_parent``) are
indexed parents first; good is index 0 and no candidate. Each commit's ancestors among
them are a bit mask, so a call narrows the suspects with one mask operation:

* a probe like the new end: the first new commit is it or one of its ancestors;
* a probe like the old end: the first new commit is none of it and its ancestors.

The next probe is git's: the suspect whose ancestors split the suspects most evenly.
A first-parent search that ends on a merge descends into the branch it merged
(`descend`): the merge's own commits less its first parent's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perflab.model.report.bisect import Commit
from perflab.vcs import GraphCommit


@dataclass
class Graph:
    """good..bad as bit masks: ``ancestors[i]`` holds i and its ancestors in the range."""

    commits: list[Commit]
    parents: list[tuple[int, ...]]      # indices of each commit's parents in the range
    first_parents: list[int | None]     # index of each commit's first parent, None when outside
    ancestors: list[int]
    spine: list[int]                    # the first-parent line from bad down to good's child, oldest first

    @classmethod
    def of(cls, good: GraphCommit, between: list[GraphCommit]) -> Graph:
        """``between``: good..bad parents first (as vcs.commit_graph gives it), bad last."""
        commits = [Commit(sha=good.sha, subject=good.subject, index=0)]
        commits += [Commit(sha=c.sha, subject=c.subject, index=i + 1, merge=len(c.parents) > 1) for i,
                    c in enumerate(between)]
        index = {c.sha: c.index for c in commits}
        parents = [()] + [tuple(index[p] for p in c.parents if p in index) for c in between]
        first_parents = [None] + [index.get(c.parents[0]) if c.parents else None for c in between]
        ancestors = [0]
        for i in range(1, len(commits)):
            mask = 1 << i
            for p in parents[i]:
                mask |= ancestors[p]
            ancestors.append(mask & ~1)   # good (bit 0) is no suspect
        spine: list[int] = []
        at: int | None = len(commits) - 1
        while at:
            spine.append(at)
            at = first_parents[at]
        return cls(commits, parents, first_parents, ancestors, spine[::-1])

    def mask(self, indices: list[int]) -> int:
        out = 0
        for i in indices:
            out |= 1 << i
        return out

    def line_from(self, index: int | None) -> list[int]:
        """The first-parent line down from ``index`` within the range, oldest first."""
        line = []
        while index:
            line.append(index)
            index = self.first_parents[index]
        return line[::-1]

    def path(self, index: int) -> list[int]:
        """How ``index`` reaches the first-parent line: the merge on it that brought it in,
        the merge on that branch's first-parent line, ..., then ``index`` ([index] when on it)."""
        out, line = [], self.spine
        while index not in line:
            merge = next(s for s in line if self.ancestors[s] >> index & 1)
            out.append(merge)
            side = [p for p in self.parents[merge] if p != self.first_parents[merge]]
            line = [c for p in side for c in self.line_from(p)]
        return [*out, index]


@dataclass
class Suspects:
    """The commits that may still be the first new one; ``tip`` is the earliest known new."""

    graph: Graph
    alive: int
    tip: int
    skipped: set[int] = field(default_factory=set)

    @classmethod
    def start(cls, graph: Graph, first_parent: bool) -> Suspects:
        alive = graph.mask(graph.spine) if first_parent else graph.ancestors[-1]
        return cls(graph, alive, len(graph.commits) - 1)

    def descend(self, merge: int) -> Suspects | None:
        """The suspects inside the branch ``merge`` brought in (its commits less its first
        parent's), the merge the known new tip; None when it is no merge."""
        if not self.graph.commits[merge].merge:
            return None
        first = self.graph.first_parents[merge]
        alive = self.graph.ancestors[merge] & ~(self.graph.ancestors[first] if first is not None else 0)
        return Suspects(self.graph, alive, merge, set(self.skipped))

    def members(self) -> list[int]:
        return [i for i in range(len(self.graph.commits)) if self.alive >> i & 1]

    def next_probe(self) -> int | None:
        """The suspect whose ancestors halve the suspects best (ties: the older); None when
        only the tip and skipped commits are left."""
        total = self.alive.bit_count()
        best, best_score = None, -1
        for i in self.members():
            if i == self.tip or i in self.skipped:
                continue
            below = (self.graph.ancestors[i] & self.alive).bit_count()
            score = min(below, total - below)
            if score > best_score:
                best, best_score = i, score
        return best

    def mark(self, index: int, new: bool) -> None:
        if new:
            self.alive &= self.graph.ancestors[index]
            self.tip = index
        else:
            self.alive &= ~self.graph.ancestors[index]

    def skip(self, index: int) -> None:
        self.skipped.add(index)
