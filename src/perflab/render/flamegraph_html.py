"""Interactive flame graphs (one self-contained HTML page) and speedscope files.

HTML: the frames of ``render/flamegraph.py``'s tree, shares and colours as in the SVG
(the same hot palette; with a baseline the same red/blue by change of self share), drawn
by a small inline script: click a frame to zoom to it, click the root or "reset" to zoom
out, type in "search" (a regular expression) to highlight the matching frames and see
the % of samples they cover (a frame counted once even if its callers match too). No
network, no library: names reach the page only as JSON and are set with textContent.

speedscope: the sampled-profile file format of https://www.speedscope.app (schema
https://www.speedscope.app/file-format-schema.json): one shared frame table, each folded
stack a sample (root first) weighted by its count; with a baseline both profiles go in
one file, the baseline first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from perflab.render.compare_html import environment, script_json
from perflab.render.flamegraph import frame_fill, frame_tooltip, max_self_change, share_tree  # as the SVG

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
TEMPLATES = Path(__file__).parent / "templates"


def frame_table(stacks: Mapping[tuple[str, ...], float],
                base: Mapping[tuple[str, ...], float] | None = None) -> list[list]:
    """The frames, parents before children, as [name, parent index, share %, self share %,
    fill colour, tooltip]; siblings sorted by name as in the SVG. Frames absent from
    ``stacks`` (only in the baseline) have no width and are left out."""
    root = share_tree(stacks, base)
    differential = base is not None
    max_delta = max_self_change(root) if differential else 0.0
    rows: list[list] = []
    queue = [(root, -1)]
    while queue:  # breadth first without recursion: stacks can be thousands deep
        next_queue = []
        for node, parent in queue:
            if node.after <= 0:
                continue
            fill, tip = frame_fill(node, differential, max_delta), frame_tooltip(node, differential)
            rows.append([node.name, parent, round(node.after, 6), round(node.after_self, 6), fill, tip])
            index = len(rows) - 1
            next_queue += [(node.children[name], index) for name in sorted(node.children)]
        queue = next_queue
    return rows


def render_flamegraph_html(stacks: Mapping[tuple[str, ...], float], *,
                           base: Mapping[tuple[str, ...], float] | None = None,
                           title: str = "Flame Graph", subtitle: str = "") -> str:
    page = environment().get_template("flamegraph.html.j2").render(
        title=title, subtitle=subtitle, frames=script_json(frame_table(stacks, base)))
    return page if page.endswith("\n") else page + "\n"


def speedscope_json(profiles: Sequence[tuple[str, Mapping[tuple[str, ...], float]]], name: str) -> str:
    """speedscope's file format: ``profiles`` are (name, stacks), sampled, unit none."""
    frames: dict[str, int] = {}
    out_profiles = []
    for profile_name, stacks in profiles:
        samples, weights = [], []
        for stack, weight in stacks.items():
            if weight <= 0:
                continue
            samples.append([frames.setdefault(frame, len(frames)) for frame in stack])
            weights.append(weight)
        out_profiles.append({"type": "sampled", "name": profile_name, "unit": "none", "startValue": 0,
                             "endValue": sum(weights), "samples": samples, "weights": weights})
    document = {"$schema": SPEEDSCOPE_SCHEMA, "name": name, "exporter": "perflab", "activeProfileIndex": 0,
                "shared": {"frames": [{"name": frame} for frame in frames]}, "profiles": out_profiles}
    return json.dumps(document, ensure_ascii=False, allow_nan=False) + "\n"
