"""A look at the start of a JSON result file before any parser: nesting deeper than a result
file has (65,536 '[' in 131 kB) is refused from the file's first 64 KiB, before the parsers
(pydantic, ijson) and the store are even imported. The parser's own limit (jsonstream) still
holds for nesting that begins later or inside a gzip file; this only makes the common shape
cheap."""

from __future__ import annotations

import os

MAX_DEPTH = 512   # deeper nesting is no result file (and would exhaust pydantic's recursion)
_HEAD = 1 << 16
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = b"[{", b"]}", 0x22, 0x5C


def too_deep_at_start(path: str | os.PathLike[str]) -> bool:
    """Whether the first 64 KiB of the (uncompressed) file nest past MAX_DEPTH, outside strings."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD)
    except OSError:
        return False   # the parser says what is wrong with the file
    if head[:2] == b"\x1f\x8b":
        return False
    depth, in_string, escaped = 0, False, False
    for byte in head:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif byte in _CLOSE:
            depth -= 1
    return False
