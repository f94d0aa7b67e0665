"""web.pages.collector_paused: the cycle collector off while any page is being made (pages
are made on several threads at once), on again after the last, and left off if it was off."""

from __future__ import annotations

import gc
import threading

from perflab.web.pages import collector_paused


def test_the_collector_is_on_again_only_after_the_last_page():
    assert gc.isenabled()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait(10)
        seen["after first"] = gc.isenabled()   # the second page is still being made
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with collector_paused():
            second_in.set()
            first_out.wait(10)
            seen["inside second"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"after first": False, "inside second": False}
    assert gc.isenabled()


def test_a_failing_page_turns_it_back_on_and_an_off_collector_stays_off():
    try:
        with collector_paused():
            raise ValueError("a page's mistake")
    except ValueError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pages_that_keep_overlapping_are_collected_now_and_then(monkeypatch):
    """With pages always being made, the collector never comes back on by itself: past
    COLLECT_AFTER_S, the page made then collects (a full collection, gc's callbacks see it)."""
    from perflab.web import pages
    collections: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    monkeypatch.setattr(pages, "COLLECT_AFTER_S", 0.0)
    gc.callbacks.append(seen)
    try:
        with collector_paused():
            with collector_paused():
                pass
            # the inner page collected (the collector off: no collection but the one asked for)
            assert collections == [2] and not gc.isenabled()
        assert gc.isenabled()   # the last one out turns it back on instead
    finally:
        gc.callbacks.remove(seen)
