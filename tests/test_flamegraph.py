"""Flame graphs: valid SVG from real profiles, differential colours, widths, escaping, depth."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from perflab.analysis.profile import folded_stacks
from perflab.render.flamegraph import X_PAD, parse_folded, render_flamegraph
from perflab.store import Store

from profile_store import profiled_store

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    db = profiled_store(tmp_path_factory.mktemp("flame"))
    with Store(db) as store:
        return (folded_stacks(store, store.runs.resolve("base")),
                folded_stacks(store, store.runs.resolve("patched")))


def _frames(svg: str) -> dict[str, tuple[dict, str]]:
    """name -> (rect attributes, tooltip) of every drawn frame (the widest one per name)."""
    root = ET.fromstring(svg)
    out: dict[str, tuple[dict, str]] = {}
    for group in root.iter(f"{SVG}g"):
        title, rect = group.find(f"{SVG}title"), group.find(f"{SVG}rect")
        if title is None or rect is None:
            continue
        name = title.text.split(" (")[0]
        if name not in out or float(rect.get("width")) > float(out[name][0]["width"]):
            out[name] = (rect.attrib, title.text)
    return out


def _rgb(fill: str) -> tuple[int, int, int]:
    return tuple(int(x) for x in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())


def test_differential_flame_graph_is_valid_svg_naming_both_functions(stacks):
    base, patched = stacks
    svg = render_flamegraph(patched, base=base, title="base -> patched")
    frames = _frames(svg)
    texts = " ".join(t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text"))
    assert "hot_loop" in texts and "warm_loop" in texts
    warm, hot = frames["warm_loop"], frames["hot_loop"]
    r, g, b = _rgb(warm[0]["fill"])
    assert r == 255 and g == b < 200          # grew: red
    r, g, b = _rgb(hot[0]["fill"])
    assert b == 255 and r == g < 200          # shrank: blue
    assert re.search(r"self [\d.]+% -> [\d.]+%, \+\d+\.\d\d points", warm[1])
    assert re.search(r", -\d+\.\d\d points", hot[1])
    # widths are the candidate's shares: ~50/50
    width = float(frames["all"][0]["width"])
    share = float(warm[0]["width"]) / width
    assert 0.35 < share < 0.65


def test_plain_flame_graph_widths_are_shares(stacks):
    base, _ = stacks
    frames = _frames(render_flamegraph(base, width=1000))
    total = sum(base.values())
    hot = sum(w for s, w in base.items() if "hot_loop" in s)
    assert float(frames["all"][0]["x"]) == X_PAD
    assert float(frames["hot_loop"][0]["width"]) == pytest.approx((1000 - 2 * X_PAD) * hot / total, abs=0.02)
    assert "% of samples" in frames["hot_loop"][1]


def test_names_are_escaped_and_control_characters_dropped():
    weird = ("main", "operator<<(std::ostream&, \"x\")", "Foo<'bar'>::\x01baz")
    svg = render_flamegraph({weird: 3, ("main", "plain"): 1}, title="a & b <c>")
    root = ET.fromstring(svg)
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert any(t.startswith("operator<<(std::ostream&, \"x\") (75.00% of samples") for t in titles)
    assert any(t.startswith("Foo<'bar'>::?baz") for t in titles)
    assert "a & b <c>" in [t.text for t in root.iter(f"{SVG}text")]


def test_deep_recursion_and_tiny_frames():
    deep = ("main", *(["fib"] * 3000))
    svg = render_flamegraph({deep: 10, ("main", "tiny"): 0.0001})
    frames = _frames(svg)
    assert "fib" in frames and "tiny" not in frames  # under 0.1 px: not drawn
    assert int(ET.fromstring(svg).get("height")) > 3000 * 16


def test_empty_and_folded_input():
    ET.fromstring(render_flamegraph({}))
    assert parse_folded(["a;b 3", "", "a;c 1.5", "a;b 2"]) == {("a", "b"): 5.0, ("a", "c"): 1.5}
    with pytest.raises(ValueError, match="line 1"):
        parse_folded(["a;b three"])
