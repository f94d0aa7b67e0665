"""Pages kept while the store's data is what they were made from (store/data_version.py):
a page asked again with nothing written since is sent as made, not made again. At most
MAX_BYTES of pages, the least recently used dropped first."""

from __future__ import annotations

import threading
from collections import OrderedDict

#: a fleet's history page of 5,000 commits x 4 hosts is about 5 MB
MAX_BYTES = 64 * 1024 * 1024


class PageCache:
    """Page bodies by (request key, data version); only the newest version of a key is kept."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._pages: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: str, version: str | None) -> bytes | None:
        """The page of ``key`` made at ``version``, or None (never for an unknown version)."""
        if version is None:
            return None
        with self._lock:
            found = self._pages.get(key)
            if found is None or found[0] != version:
                return None
            self._pages.move_to_end(key)
            return found[1]

    def put(self, key: str, version: str | None, body: bytes) -> None:
        """Keep ``body`` as the page of ``key`` at ``version`` (unless it alone is over the bound)."""
        if version is None or len(body) > self.max_bytes:
            return
        with self._lock:
            old = self._pages.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._pages[key] = (version, body)
            self._bytes += len(body)
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._pages.popitem(last=False)
                self._bytes -= len(dropped)
