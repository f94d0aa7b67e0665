"""web.pages.server_collector: the dashboard server's cycle collector (what start-up made
frozen out of collections, young objects collected per GC_THRESHOLDS)."""

from __future__ import annotations

import gc

from perflab.web import pages


def test_the_server_collector_freezes_start_up_and_widens_the_young_generation():
    before = gc.get_threshold()
    try:
        pages.server_collector()
        assert gc.get_threshold() == pages.GC_THRESHOLDS
        assert gc.get_freeze_count() > 0 and gc.isenabled()
        garbage = [[]]
        garbage[0].append(garbage)   # a cycle: still collected
        del garbage
        assert gc.collect() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
