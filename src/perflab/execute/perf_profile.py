"""Streaming post-processing of ``perf script`` output into lkp-style profile rows.

Input is the text ``perf script`` prints for a ``perf record -g`` (or
``--call-graph dwarf``) file: one header line per sample, then one line per frame
(tab-indented, ``addr symbol+off (dso)``, leaf first), then a blank line::

    prog  6891  5958.695206:     250000 cpu-clock:
    \t            116d hot_loop+0x24 (/tmp/prog)
    \t            11d4 main+0x17 (/tmp/prog)
    <blank>

Without a call graph perf prints the only frame on the header line itself and pads
the command name with leading spaces, so a frame line is recognised by its leading
*tab*, not by "any indentation".

:func:`aggregate` reads the lines in one pass and keeps only counters keyed by
distinct symbols, call-trace windows and stacks; it never stores samples or lines,
so memory depends on how many distinct things were seen, not on the sample count.

The names follow lkp-tests (the kernel test robot):

- ``perf-profile.self.cycles-pp.SYM``: the share of samples whose leaf frame is SYM;
- ``perf-profile.children.cycles-pp.SYM``: the share of samples with SYM anywhere on
  the stack, counted once per sample even when SYM recurses;
- ``perf-profile.calltrace.cycles-pp.A.B.C``: a chain of at most ``max_frames``
  consecutive frames, written **callee first** (lkp's order: ``A`` is called by ``B``,
  which is called by ``C``), e.g. ``intel_idle.cpuidle_enter_state.cpuidle_enter``.
  Every frame of a stack starts one window (itself and up to ``max_frames - 1`` of its
  callers), so the windows near the root are shorter; a window's share is the share of
  samples whose stack contains that chain (once per sample).

Symbols lose their ``+0x..`` offset and any ``.isra.N`` / ``.constprop.N`` / ``.part.N``
suffixes (``foo.constprop.0.isra.0`` -> ``foo``); values under ``min_percent`` are
dropped. Shares are weighted by the sample period when the header shows one (as
``perf report`` does; for ``cpu-clock`` the period is a constant number of ns), else
every sample weighs 1. Record one event per file: shares of different events are not
separated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from types import MappingProxyType

__all__ = [
    "PerfScriptError",
    "Profile",
    "aggregate",
    "folded_lines",
    "lkp_stats",
    "normalize_symbol",
    "parse_file",
]

UNKNOWN = "[unknown]"
# Distinct frame lines remembered by aggregate (one per distinct address, not per
# sample); cleared when full so memory stays bounded on any input.
LINE_CACHE_SIZE = 1 << 18

_SUFFIX = re.compile(r"(?:\.(?:isra|constprop|part)\.\d+)+$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_TIME = re.compile(r"^\d+\.\d+:$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


class PerfScriptError(ValueError):
    """The input is not ``perf script`` output (the message names the line)."""


def _empty() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class Profile:
    """The aggregate of one ``perf script`` stream.

    ``self_percent`` / ``children_percent``: symbol -> % (filtered at ``min_percent``).
    ``calltrace_percent``: callee-first tuple of frames -> % (filtered likewise).
    ``stacks``: root-first full stack -> sample count (unfiltered; feeds
    :func:`folded_lines`). ``events``: event names in order of first appearance.
    """

    total_samples: int = 0
    total_period: int = 0
    events: tuple[str, ...] = ()
    self_percent: Mapping[str, float] = field(default_factory=_empty)
    children_percent: Mapping[str, float] = field(default_factory=_empty)
    calltrace_percent: Mapping[tuple[str, ...], float] = field(default_factory=_empty)
    stacks: Mapping[tuple[str, ...], int] = field(default_factory=_empty)
    max_frames: int = 5
    min_percent: float = 0.05

    def top_self(self, n: int = 10) -> list[tuple[str, float]]:
        """The ``n`` symbols with the largest self share, largest first."""
        return sorted(self.self_percent.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def top_children(self, n: int = 10) -> list[tuple[str, float]]:
        return sorted(self.children_percent.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def normalize_symbol(raw: str) -> str:
    """``do_sys_poll.isra.0+0x1f`` -> ``do_sys_poll``; empty -> ``[unknown]``."""
    sym = _OFFSET.sub("", raw.strip())
    sym = _SUFFIX.sub("", sym)
    return sym or UNKNOWN


def _frame_symbol(text: str) -> str:
    """The symbol of ``addr symbol+off (dso)`` without its offset (suffixes kept)."""
    text = text.strip()
    _addr, _, rest = text.partition(" ")
    rest = rest.strip()
    if rest.endswith(")"):
        cut = rest.rfind(" (")
        if cut >= 0:
            rest = rest[:cut]
        elif rest.startswith("("):  # "addr (dso)": no symbol at all
            rest = ""
    rest = rest.rstrip()
    cut = rest.rfind("+0x")  # drop the offset here so caches key on the symbol
    if cut > 0:
        rest = rest[:cut]
    return rest


def _parse_header(line: str, lineno: int) -> tuple[str, int, str]:
    """(event, period, inline frame text) from a sample header line."""
    tokens = line.split()
    start = 0
    for i, tok in enumerate(tokens):
        if _TIME.match(tok):
            start = i + 1
            break
    period = 1
    event = ""
    for j in range(start, len(tokens)):
        tok = tokens[j]
        if tok.isdigit() and not event:
            period = int(tok)
            continue
        if tok.endswith(":"):
            event = tok[:-1]
            # without a call graph the only frame follows: "addr sym+off (dso)"
            rest = tokens[j + 1 :]
            if rest and _HEX.match(rest[0]):
                return event, period, " ".join(rest)
            return event, period, ""
        if start:  # a time stamp was found but nothing event-like follows
            break
    if not start:
        raise PerfScriptError(
            f"line {lineno}: not a perf script sample header: {line.strip()[:80]!r}"
        )
    return event, period, ""


def aggregate(
    lines: Iterable[str], *, max_frames: int = 5, min_percent: float = 0.05
) -> Profile:
    """Aggregate ``perf script`` lines in one streaming pass (see the module doc)."""
    if max_frames < 1:
        raise ValueError("max_frames must be at least 1")
    # Per-sample work is one dict update keyed by the distinct (leaf-first) stack;
    # self / children / call-trace shares are derived from the distinct stacks at
    # the end, so the cost per sample is small and memory is per distinct stack.
    stack_w, stack_n, events = _distinct_stacks(lines)
    total_period = sum(stack_w.values())
    self_w: dict[str, int] = {}
    child_w: dict[str, int] = {}
    trace_w: dict[tuple[str, ...], int] = {}
    stacks: dict[tuple[str, ...], int] = {}
    for key, w in stack_w.items():
        leaf = key[0]
        self_w[leaf] = self_w.get(leaf, 0) + w
        for sym in set(key):
            child_w[sym] = child_w.get(sym, 0) + w
        for window in {key[i : i + max_frames] for i in range(len(key))}:
            trace_w[window] = trace_w.get(window, 0) + w
        root_first = key[::-1]
        stacks[root_first] = stacks.get(root_first, 0) + stack_n[key]
    return Profile(
        total_samples=sum(stack_n.values()),
        total_period=total_period,
        events=events,
        self_percent=_percent(self_w, total_period, min_percent),
        children_percent=_percent(child_w, total_period, min_percent),
        calltrace_percent=_percent(trace_w, total_period, min_percent),
        stacks=MappingProxyType(stacks),
        max_frames=max_frames,
        min_percent=min_percent,
    )


def _distinct_stacks(
    lines: Iterable[str],
) -> tuple[dict[tuple[str, ...], int], dict[tuple[str, ...], int], tuple[str, ...]]:
    """(summed period, samples) per distinct leaf-first stack, and the events seen, in one pass."""
    norm_cache: dict[str, str] = {}
    line_cache: dict[str, str] = {}  # whole frame line -> symbol: one lookup per frame
    events: dict[str, None] = {}
    frames: list[str] = []  # the current sample only: bounded by stack depth
    period = 0
    in_sample = False
    stack_w: dict[tuple[str, ...], int] = {}  # distinct stack -> summed period
    stack_n: dict[tuple[str, ...], int] = {}  # distinct stack -> samples

    def end_sample() -> None:
        key = tuple(frames) if frames else (UNKNOWN,)
        stack_w[key] = stack_w.get(key, 0) + period
        stack_n[key] = stack_n.get(key, 0) + 1
        frames.clear()

    def norm(raw: str) -> str:
        sym = norm_cache.get(raw)
        if sym is None:
            sym = norm_cache[raw] = normalize_symbol(raw)
        return sym

    for lineno, line in enumerate(lines, 1):
        sym = line_cache.get(line)
        if sym is not None and in_sample:  # only frame lines are cached
            frames.append(sym)
            continue
        if line.startswith("\t"):
            if not in_sample:
                raise PerfScriptError(
                    f"line {lineno}: a call-graph frame before any sample header"
                )
            if len(line_cache) >= LINE_CACHE_SIZE:
                line_cache.clear()
            sym = line_cache[line] = norm(_frame_symbol(line))
            frames.append(sym)
            continue
        if in_sample:
            # a blank line ends the sample; so does a header with no blank before it
            end_sample()
            in_sample = False
        if not line.strip():
            continue
        event, period, inline = _parse_header(line, lineno)
        if event and event not in events:
            events[event] = None
        in_sample = True
        if inline:
            frames.append(norm(_frame_symbol(inline)))
    if in_sample:
        end_sample()
    return stack_w, stack_n, tuple(events)


def _percent(weights: Mapping, total: int, min_percent: float) -> Mapping:
    """Each key's share of ``total`` in %, those under ``min_percent`` left out."""
    if not total:
        return _empty()
    out = {}
    for key, w in weights.items():
        p = 100.0 * w / total
        if p >= min_percent:
            out[key] = p
    return MappingProxyType(out)


def _read_lines(path: str | PathLike[str]) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        yield from fh


def parse_file(
    path: str | PathLike[str], *, max_frames: int = 5, min_percent: float = 0.05
) -> Profile:
    """:func:`aggregate` over a saved ``perf script`` output file, line by line."""
    return aggregate(_read_lines(path), max_frames=max_frames, min_percent=min_percent)


def folded_lines(profile: Profile) -> Iterator[str]:
    """Flamegraph "folded" lines, ``root;...;leaf count``, most frequent first."""
    for stack, count in sorted(profile.stacks.items(), key=lambda kv: (-kv[1], kv[0])):
        yield f"{';'.join(stack)} {count}"


def lkp_stats(profile: Profile, event: str = "cycles-pp") -> dict[str, float]:
    """lkp-tests stat names -> values (``perf-profile.self.cycles-pp.SYM`` ...)."""
    out: dict[str, float] = {}
    for sym, p in profile.self_percent.items():
        out[f"perf-profile.self.{event}.{sym}"] = p
    for sym, p in profile.children_percent.items():
        out[f"perf-profile.children.{event}.{sym}"] = p
    for trace, p in profile.calltrace_percent.items():
        out[f"perf-profile.calltrace.{event}.{'.'.join(trace)}"] = p
    return out
