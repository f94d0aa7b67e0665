"""Every change-point detector and compare test gives, on a fixed set of generated inputs,
exactly the output recorded before the methods became a registry (issue 43):
tests/stats/methods_golden.py makes it, tests/data/methods_golden.json holds it."""

from __future__ import annotations

import json
from pathlib import Path

from methods_golden import golden

RECORDED = Path(__file__).resolve().parents[1] / "data" / "methods_golden.json"


def test_every_method_gives_the_recorded_output_byte_for_byte():
    made, recorded = golden(), RECORDED.read_text()
    if made != recorded:
        now, then = json.loads(made), json.loads(recorded)
        moved = [k for k in then if now.get(k) != then[k]] + [k for k in now if k not in then]
        raise AssertionError(f"{len(moved)} outputs differ from {RECORDED.name}, first: {moved[:5]}")
    assert len(json.loads(recorded)) > 400   # every method on every input, not an empty record
