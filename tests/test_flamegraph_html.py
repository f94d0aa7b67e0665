"""Interactive flame graphs and speedscope files: from real perf profiles, opened in a
real headless chromium (zoom, search with % matched, reset), names kept as text."""

from __future__ import annotations

import json
import re

import pytest

from perflab.analysis.profile import folded_stacks
from perflab.render.flamegraph_html import SPEEDSCOPE_SCHEMA, render_flamegraph_html, speedscope_json
from perflab.store import Store

from browser import BROWSER_GROUP, chromium, console_errors
from conftest import run_cli
from profile_store import profiled_store

pytestmark = BROWSER_GROUP   # the session's one browser: its tests run on one xdist worker


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return profiled_store(tmp_path_factory.mktemp("fg"))


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def _stacks(db, label):
    with Store(db) as store:
        return folded_stacks(store, store.runs.resolve(label))


def test_speedscope_file_holds_every_stack(db, tmp_path):
    out = tmp_path / "fg.speedscope.json"
    run_cli("flamegraph", "base", "--vs", "patched", "--format", "speedscope", "-o", str(out), db=db, check=True)
    doc = json.loads(out.read_text())
    assert doc["$schema"] == SPEEDSCOPE_SCHEMA and len(doc["profiles"]) == 2
    names = [f["name"] for f in doc["shared"]["frames"]]
    for profile, label in zip(doc["profiles"], ("base", "patched")):
        stacks = _stacks(db, label)
        assert profile["type"] == "sampled" and label in profile["name"]
        assert len(profile["samples"]) == len(profile["weights"])
        rebuilt = {tuple(names[i] for i in sample): w for sample, w in zip(profile["samples"], profile["weights"])}
        assert rebuilt == {k: v for k, v in stacks.items() if v > 0}
        assert profile["endValue"] == pytest.approx(sum(stacks.values()))


def test_interactive_graph_zooms_searches_and_resets(db, tmp_path, browser):
    out = tmp_path / "fg.html"
    result = run_cli("flamegraph", "base", "--format", "html", "-o", str(out), db=db, check=True)
    assert "wrote" in result.stdout
    browser.get(out.as_uri())
    frames = browser.execute_script("return window.perflabFlamegraph.frames;")
    drawn = browser.find_elements("css selector", "#graph .frame")
    assert len(frames) > 3 and len(drawn) > 3
    width = browser.execute_script("return document.getElementById('graph').clientWidth;")
    # zoom: click the widest frame two levels up; it then spans the graph
    target = max((i for i, f in enumerate(frames) if f[1] > 0), key=lambda i: frames[i][2])
    browser.execute_script(f"document.querySelector('.frame[data-index=\"{target}\"]').click();")
    assert browser.execute_script("return window.perflabFlamegraph.zoomed();") == target
    zoomed_width = browser.execute_script(
        f"return document.querySelector('.frame[data-index=\"{target}\"]').getBoundingClientRect().width;")
    assert zoomed_width == pytest.approx(width, abs=1)
    # search: the % matched is the share of samples under a frame whose name matches
    stacks = _stacks(db, "base")
    name = frames[target][0]
    expected = 100 * sum(w for s, w in stacks.items() if any(re.search(re.escape(name), f) for f in s)) / sum(
        stacks.values())
    box = browser.find_element("id", "search")
    box.send_keys(re.escape(name))
    matched = browser.find_element("id", "matched").text
    assert matched == f"matched: {expected:.2f}% of samples"
    assert browser.find_elements("css selector", ".frame.match")
    browser.find_element("id", "reset").click()
    assert browser.execute_script("return window.perflabFlamegraph.zoomed();") == 0
    assert browser.find_element("id", "matched").text == ""
    assert not browser.find_elements("css selector", ".frame.match")
    assert console_errors(browser) == []


def test_differential_colours(db, tmp_path, browser):
    out = tmp_path / "diff.html"
    run_cli("flamegraph", "base", "--vs", "patched", "--format", "html", "-o", str(out), db=db, check=True)
    browser.get(out.as_uri())
    fills = {f[4] for f in browser.execute_script("return window.perflabFlamegraph.frames;")}
    assert any(re.fullmatch(r"rgb\(255,\d+,\d+\)", f) and f != "rgb(255,255,255)" for f in fills)  # grew
    assert any(re.fullmatch(r"rgb\(\d+,\d+,255\)", f) and f != "rgb(255,255,255)" for f in fills)  # shrank
    assert "Differential" in browser.title


def test_frame_names_are_text(tmp_path, browser):
    hostile = "<img src=x onerror=alert(1)>"
    page = render_flamegraph_html({("main", hostile): 3.0, ("main", "</script><b>x"): 1.0}, title=hostile)
    assert hostile not in page
    out = tmp_path / "x.html"
    out.write_text(page)
    browser.get(out.as_uri())
    assert browser.execute_script("return document.querySelectorAll('img, b').length;") == 0
    texts = [e.text for e in browser.find_elements("css selector", "#graph .frame")]
    assert hostile in texts and browser.title == hostile
    assert console_errors(browser) == []


def test_speedscope_of_nothing_is_an_empty_profile():
    doc = json.loads(speedscope_json([("empty", {})], "x"))
    assert doc["profiles"][0]["samples"] == [] and doc["profiles"][0]["endValue"] == 0
