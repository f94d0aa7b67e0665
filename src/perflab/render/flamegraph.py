"""Flame graphs as SVG from folded stacks, and differential ones (Brendan Gregg's style).

Input: root-first stacks -> weight (``a;b;c 42`` folded lines, parsed). Every frame is a
rectangle whose width is its share of the samples (itself and its callees), its
callers below it; siblings are sorted by name, as flamegraph.pl does, so the x axis is
not time. Each rectangle carries a ``<title>`` tooltip with its share; frames narrower
than ``MIN_WIDTH`` pixels are not drawn.

Differential (``base`` given, as difffolded.pl + flamegraph.pl): widths are the
candidate's ("after") profile; both profiles are normalised to shares first, and each
frame is coloured by the change of its *self* share (after - before, in percentage
points): red grew, blue shrank, white unchanged, the saturation proportional to the
change over the largest change. Frames only in the baseline have no width after and
are not drawn (the tooltip of their caller still shows its own change).

Our own small writer: no JavaScript, text escaped for XML, deterministic colours
(hashed from the name) so the same input gives the same file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

FRAME_HEIGHT = 16
FONT_SIZE = 12
FONT_WIDTH = 0.59     # average glyph width / font size (flamegraph.pl's value)
MIN_WIDTH = 0.1       # pixels
X_PAD = 10
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass
class Node:
    name: str
    after: float = 0.0          # inclusive share (or weight), candidate / single profile
    after_self: float = 0.0
    before: float = 0.0         # baseline (differential only)
    before_self: float = 0.0
    children: dict[str, Node] = field(default_factory=dict)


def _text(value: str) -> str:
    return escape(_NOT_XML.sub("?", value))


def _attr(value: str) -> str:
    return quoteattr(_NOT_XML.sub("?", value))


def add_stack(root: Node, stacks: Mapping[tuple[str, ...], float], scale: float, side: str) -> None:
    for stack, weight in stacks.items():
        w = weight * scale
        node = root
        setattr(node, side, getattr(node, side) + w)
        for frame in stack:
            child = node.children.get(frame)
            if child is None:
                child = node.children[frame] = Node(frame)
            setattr(child, side, getattr(child, side) + w)
            node = child
        setattr(node, side + "_self", getattr(node, side + "_self") + w)


def hot_colour(name: str) -> str:
    """flamegraph.pl's "hot" palette, hashed from the name instead of random."""
    digest = hashlib.blake2b(name.encode("utf-8", "replace"), digest_size=3).digest()
    v1, v2, v3 = (b / 255 for b in digest)
    return f"rgb({205 + int(50 * v3)},{int(230 * v1)},{int(55 * v2)})"


def diff_colour(delta: float, max_delta: float) -> str:
    if max_delta <= 0 or delta == 0:
        return "rgb(255,255,255)"
    fade = int(210 * (max_delta - abs(delta)) / max_delta)
    return f"rgb(255,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},255)"


def share_tree(stacks: Mapping[tuple[str, ...], float], base: Mapping[tuple[str, ...], float] | None) -> Node:
    """The call tree of ``stacks`` (and of ``base`` as ``before``), weights in % of each
    profile's samples, so two profiles of different sizes compare."""
    root = Node("all")
    total_after = float(sum(stacks.values()))
    add_stack(root, stacks, 100.0 / total_after if total_after > 0 else 0.0, "after")
    if base is not None:
        total_before = float(sum(base.values()))
        add_stack(root, base, 100.0 / total_before if total_before > 0 else 0.0, "before")
    return root


def max_self_change(root: Node) -> float:
    """The largest change of a frame's self share (0 for a single profile's tree)."""
    largest, todo = 0.0, [root]
    while todo:   # without recursion: a recursive program's stacks can be thousands deep
        node = todo.pop()
        largest = max(largest, abs(node.after_self - node.before_self))
        todo.extend(node.children.values())
    return largest


def frame_fill(node: Node, differential: bool, max_delta: float) -> str:
    return diff_colour(node.after_self - node.before_self, max_delta) if differential else hot_colour(node.name)


def frame_tooltip(node: Node, differential: bool) -> str:
    if not differential:
        text = f"{node.name} ({node.after:.2f}% of samples"
        return text + (f", self {node.after_self:.2f}%)" if node.children else ")")
    delta = node.after_self - node.before_self
    return (f"{node.name} ({node.after:.2f}% of samples, was {node.before:.2f}%; "
            f"self {node.before_self:.2f}% -> {node.after_self:.2f}%, {delta:+.2f} points)")


def _levels(root: Node) -> int:
    """Rows of frames with a width: the deepest drawn stack, root included."""
    levels, todo = 1, [(root, 1)]
    while todo:
        node, level = todo.pop()
        if node.after > 0:
            levels = max(levels, level)
        todo.extend((child, level + 1) for child in node.children.values())
    return levels


def _heading(width: int, height: int, title: str, subtitle: str) -> list[str]:
    out = [
        '<?xml version="1.0" standalone="no"?>',
        (f'<svg version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'xmlns="http://www.w3.org/2000/svg">'),
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="rgb(248,248,248)"/>',
        f'<g font-family="Verdana, sans-serif" font-size="{FONT_SIZE}">',
        (f'<text x="{width / 2:.1f}" y="{FONT_SIZE * 2}" text-anchor="middle" '
        f'font-size="{FONT_SIZE + 5}">{_text(title)}</text>'),
    ]
    if subtitle:
        out.append(f'<text x="{width / 2:.1f}" y="{FONT_SIZE * 3 + 4}" text-anchor="middle" '
                   f'fill="rgb(110,110,110)">{_text(subtitle)}</text>')
    return out


def _frames(root: Node, height: int, scale: float, differential: bool) -> list[str]:
    """Each frame wide enough to draw: its rectangle, tooltip and (if it fits) its name."""
    max_delta = max_self_change(root) if differential else 0.0
    out: list[str] = []
    pending = [(root, float(X_PAD), 0)] if root.after > 0 else []
    while pending:
        node, x, level = pending.pop()
        w = node.after * scale
        if w < MIN_WIDTH:
            continue
        y = height - FONT_SIZE * 2 - (level + 1) * FRAME_HEIGHT
        out.append(f"<g><title>{_text(frame_tooltip(node, differential))}</title>")
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{FRAME_HEIGHT - 1}" '
                   f'fill="{frame_fill(node, differential, max_delta)}" rx="2" ry="2"/>')
        chars = int(w / (FONT_SIZE * FONT_WIDTH))
        if chars >= 3:
            label = node.name if len(node.name) <= chars else node.name[:chars - 2] + ".."
            out.append(f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 4}">{_text(label)}</text>')
        out.append("</g>")
        offset = x
        for name in sorted(node.children):
            child = node.children[name]
            pending.append((child, offset, level + 1))
            offset += child.after * scale
    return out


def render_flamegraph(stacks: Mapping[tuple[str, ...], float], *, base: Mapping[tuple[str, ...], float] | None = None,
                      title: str = "Flame Graph", subtitle: str = "", width: int = 1200) -> str:
    """The SVG text of a flame graph of ``stacks`` (a differential one against ``base``)."""
    root = share_tree(stacks, base)
    top = FONT_SIZE * 3 + (FONT_SIZE + 4 if subtitle else 0)
    height = top + _levels(root) * FRAME_HEIGHT + FONT_SIZE * 2
    out = _heading(width, height, title, subtitle)
    if root.after <= 0:
        out.append(f'<text x="{X_PAD}" y="{top + FONT_SIZE}">no samples</text>')
    scale = (width - 2 * X_PAD) / root.after if root.after > 0 else 0.0
    out += _frames(root, height, scale, base is not None)
    out += ["</g>", "</svg>", ""]
    return "\n".join(out)


def parse_folded(lines: list[str]) -> dict[tuple[str, ...], float]:
    """``a;b;c 42`` lines (flamegraph.pl's input) -> stacks; blank lines are skipped."""
    stacks: dict[tuple[str, ...], float] = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        frames, _, count = line.rpartition(" ")
        try:
            weight = float(count)
        except ValueError:
            raise ValueError(f"line {number}: not 'frame;frame;... count': {line[:80]!r}") from None
        key = tuple(frames.split(";"))
        stacks[key] = stacks.get(key, 0.0) + weight
    return stacks
