"""A JSON result file read in memory that does not grow with its samples (ijson).

Pass 1 (``read_skeleton``) builds the document as Python values, except the arrays at the
given *patterns* (a path with ``None`` for any list index, e.g. ``("results", None,
"times")``): their items are checked a chunk at a time and dropped, and the array becomes a
:class:`Streamed` (its length and where its items start). A *reducer* may shrink each object
at a pattern as soon as it is complete (pyperf's runs). Pass 2 (:class:`ItemStream`) reads
the file again and yields the items of one pattern, from any position.

Every problem is a :class:`Malformed` line; the file is never held whole.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import ijson
from pydantic import PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from perflab.formats.common import Malformed, explain, quoted
from perflab.formats.nesting import MAX_DEPTH
from perflab.model.errors import UsageError

JsonPath = tuple[str | int, ...]
Pattern = tuple[str | None, ...]
#: (path of the array, the array, index of the first item, the items)
ChunkCheck = Callable[[JsonPath, "Streamed", int, list[Any]], None]
Reducer = Callable[[JsonPath, Any], Any]

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 8192          # items of a streamed array checked at once
_MAX_DEPTH = MAX_DEPTH
_READ = 1 << 16


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass
class Streamed:
    """An array of the file not kept in memory: its length, the position of its first item
    among all items of its pattern (what :class:`ItemStream` counts), and what the chunk
    check noted (pyperf: the first value above a limit)."""

    count: int
    start: int
    notes: dict[Any, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JsonFile:
    """A JSON file on disk, gzip-compressed or not; ``kind`` names it in messages."""

    path: Path
    shown: str
    kind: str
    gzipped: bool

    @classmethod
    def of(cls, path: str | os.PathLike[str], kind: str) -> JsonFile:
        shown = os.fspath(path)
        try:
            with open(path, "rb") as raw:
                head = raw.read(2)
        except FileNotFoundError:
            raise UsageError(f"cannot import {shown}: no such file") from None
        except IsADirectoryError:
            raise UsageError(f"cannot import {shown}: it is a directory, not a {kind} JSON file") from None
        except PermissionError:
            raise UsageError(f"cannot import {shown}: permission denied") from None
        except OSError as error:
            raise UsageError(f"cannot import {shown}: {error.strerror or error}") from None
        if head != _GZIP_MAGIC and shown.endswith(".gz"):
            raise UsageError(f"cannot import {shown}: named .gz but not gzip-compressed")
        return cls(Path(path).resolve(), shown, kind, head == _GZIP_MAGIC)

    def open(self, raw: Readable) -> Readable:
        """The file's JSON bytes, read from ``raw`` (the file as stored)."""
        return gzip.GzipFile(fileobj=raw, mode="rb") if self.gzipped else raw  # type: ignore[call-overload]

    def broken(self, error: BaseException) -> UsageError:
        return UsageError(f"cannot import {self.shown}: broken gzip data ({error})")


def streamed_array(min_length: int = 0) -> PlainValidator:
    """A pydantic field of a streamed array: "not a list" when the file has something else
    there, "is empty" below ``min_length`` items."""
    def check(value: Any) -> Streamed:
        if not isinstance(value, Streamed):
            raise PydanticCustomError("list_type", "Input should be a valid list")
        if value.count < min_length:
            raise PydanticCustomError("too_short", "List should have at least {min_length} item",
                                      {"min_length": min_length})
        return value
    return PlainValidator(check)


def explain_items(error: ValidationError, path: JsonPath, offset: int,
                  where: Callable[[JsonPath], str]) -> Malformed:
    """A schema violation in a chunk of a streamed array (items from ``offset``), placed in the file."""
    return explain(error, lambda loc: where((*path, offset + int(loc[0]), *loc[1:]) if loc else path))


#: told (bytes read, bytes in the file) as pass 1 reads
ReadProgress = Callable[[int, int], None]


class _Hashing:
    """A binary file that hashes what is read through it (the sha256 of the file as stored)."""

    def __init__(self, raw: Readable, progress: ReadProgress | None, size: int):
        self._raw, self.sha256 = raw, hashlib.sha256()
        self._progress, self._size, self._read = progress, size, 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.sha256.update(data)
        self._read += len(data)
        if self._progress is not None:
            self._progress(self._read, self._size)
        return data

    def rest(self) -> str:
        while self.read(_READ):
            pass
        return self.sha256.hexdigest()


class _Utf8Check:
    """Refuses a file that is not UTF-8 with one line, before the JSON parser says "invalid
    char"; strings inside the JSON are checked by the parser itself."""

    def __init__(self, source: Readable, shown: str, kind: str):
        self._source, self._decoder = source, codecs.getincrementaldecoder("utf-8")()
        self._shown, self._kind, self.seen_text = shown, kind, False

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size)
        if not self.seen_text:
            try:
                text = self._decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                raise UsageError(f"cannot import {self._shown}: not UTF-8 text, "
                                 f"so not a {self._kind} JSON file") from None
            self.seen_text = bool(text.strip())
        return data


class _Frame:
    """An open container of pass 1: a dict, a list, or a streamed array's pending chunk."""

    __slots__ = ("value", "path", "key", "streamed", "chunk", "check")

    def __init__(self, value: Any, path: JsonPath, streamed: Streamed | None = None,
                 check: ChunkCheck | None = None):
        self.value, self.path, self.key = value, path, ""
        self.streamed, self.check = streamed, check
        self.chunk: list[Any] = []

    def child(self) -> JsonPath:
        if isinstance(self.value, dict):
            return (*self.path, self.key)
        if self.streamed is not None:
            return (*self.path, self.streamed.count + len(self.chunk))
        return (*self.path, len(self.value))

    def add(self, value: Any) -> None:
        if isinstance(self.value, dict):
            self.value[self.key] = value
        elif self.streamed is None:
            self.value.append(value)
        else:
            self.chunk.append(value)
            if len(self.chunk) >= _CHUNK:
                self.flush()

    def flush(self) -> None:
        assert self.streamed is not None and self.check is not None
        if self.chunk:
            self.check(self.path, self.streamed, self.streamed.count, self.chunk)
            self.streamed.count += len(self.chunk)
            self.chunk = []


def _matches(path: JsonPath, pattern: Pattern) -> bool:
    return len(path) == len(pattern) and all(
        p == k if p is not None else isinstance(k, int) for k, p in zip(path, pattern))


def prefix(pattern: Pattern) -> str:
    """ijson's name of the items of arrays at ``pattern``."""
    return ".".join("item" if p is None else p for p in (*pattern, None))


@dataclass
class Skeleton:
    """Pass 1 over a file: the document with its streamed arrays as :class:`Streamed`."""

    arrays: dict[Pattern, ChunkCheck]
    reducers: dict[Pattern, Reducer] = field(default_factory=dict)
    where: Callable[[JsonPath], str] = lambda path: " ".join(map(str, path))
    root: Any = None
    _seen: dict[Pattern, int] = field(default_factory=dict)

    def read(self, file: JsonFile, progress: ReadProgress | None = None) -> tuple[Any, str]:
        """(the document, sha256 of the file as stored)."""
        try:
            with open(file.path, "rb") as raw:
                hashing = _Hashing(raw, progress, os.fstat(raw.fileno()).st_size)
                text = _Utf8Check(file.open(hashing), file.shown, file.kind)
                stack: list[_Frame] = []
                try:
                    self._build(ijson.basic_parse(text, use_float=True, buf_size=_READ), stack)
                except ijson.JSONError as error:
                    raise self._not_json(error, stack, text.seen_text) from None
                return self.root, hashing.rest()
        except (OSError, EOFError, zlib.error) as error:
            raise file.broken(error) from None

    def _build(self, events: Iterator[tuple[str, Any]], stack: list[_Frame]) -> None:
        # basic_parse: events without ijson's prefix strings, which grow with the depth (a
        # file of 65,536 '[' made 65,536 prefixes of up to 330 kB each: 10 GB before the limit)
        for event, value in events:
            if event == "map_key":
                frame = stack[-1]
                if value in frame.value:
                    raise Malformed(f'{self.where(frame.path) or "the top level"} has {quoted(value)} twice')
                frame.key = value
                self._unambiguous((*frame.path, value))
                continue
            if event == "start_map" or event == "start_array":
                path = stack[-1].child() if stack else ()
                if len(stack) >= _MAX_DEPTH:
                    raise Malformed("JSON nested too deeply")
                pattern = next((p for p in self.arrays if _matches(path, p)), None) \
                    if event == "start_array" else None
                if pattern is not None:
                    streamed = Streamed(0, self._seen.get(pattern, 0))
                    stack.append(_Frame(pattern, path, streamed, self.arrays[pattern]))
                    continue
                container: Any = {} if event == "start_map" else []
                if stack:  # attached at once: a place named mid-way can see what is read so far
                    stack[-1].add(container)
                else:
                    self.root = container
                stack.append(_Frame(container, path))
                continue
            if event == "end_map" or event == "end_array":
                frame = stack.pop()
                if frame.streamed is not None:  # its value is its pattern
                    frame.flush()
                    self._seen[frame.value] = frame.streamed.start + frame.streamed.count
                    self._attach(stack, frame.path, frame.streamed, new=True)
                else:
                    self._attach(stack, frame.path, frame.value, new=False)
                continue
            if stack:
                stack[-1].add(value)
            else:
                self.root = value

    def _attach(self, stack: list[_Frame], path: JsonPath, value: Any, new: bool) -> None:
        """A finished container into its parent (or as the root), shrunk by its reducer."""
        reduce = next((r for p, r in self.reducers.items() if _matches(path, p)), None)
        if reduce is None and not new:
            return
        if reduce is not None:
            value = reduce(path, value)
        if not stack:
            self.root = value
        elif new:
            stack[-1].add(value)
        elif isinstance(stack[-1].value, dict):
            stack[-1].value[stack[-1].key] = value
        else:
            stack[-1].value[-1] = value

    def counted(self, pattern: Pattern) -> int:
        """Items of the arrays at ``pattern`` read so far (all of them, after ``read``)."""
        return self._seen.get(pattern, 0)

    def _unambiguous(self, path: JsonPath) -> None:
        """ijson names a place by joining its keys with dots: a key that makes a place read
        like a streamed array's (a key with a dot, or named "item") would mix its items in."""
        name = ".".join("item" if isinstance(k, int) else k for k in path)
        for pattern in self.arrays:
            own = prefix(pattern)[:-len(".item")]
            if (name == own or name.startswith(own + ".")) and not _matches(path[:len(pattern)], pattern):
                raise Malformed(f'{self.where(path[:-1]) or "the top level"} has a key {quoted(str(path[-1]))} '
                                f"that reads like the place of other values")

    def _not_json(self, error: Exception, stack: list[_Frame], seen_text: bool) -> Malformed:
        context = str(error).strip()
        if context.startswith(("b'", 'b"')):  # yajl's message as a bytes repr: its lines are "\n"
            context = context[2:].replace("\\n", "\n")
        message = context.splitlines()[0] if context else type(error).__name__
        place = self.where(stack[-1].child()) if stack else ""
        if not seen_text and "premature EOF" in message:
            return Malformed("the file is empty")
        if message.startswith("lexical error") and any(w in context for w in ("NaN", "Infinity")):
            return Malformed(f"{place or 'a value'} is NaN or Infinity, not a finite number")
        if "overflow" in message:
            return Malformed(f"{place or 'a value'} is a number too large to read ({message.split(': ')[-1]})")
        return Malformed(f"not JSON ({message})")


class ItemStream:
    """Pass 2: the items of every array at one pattern, in file order, read again from the
    file; ``take(start, count)`` reopens the file only to go back, and closes it after the
    last of the ``total`` items pass 1 counted."""

    def __init__(self, file: JsonFile, pattern: Pattern, total: int):
        self._file, self._prefix, self._total = file, prefix(pattern), total
        self._items: Iterator[Any] | None = None
        self._handle: IO[bytes] | None = None
        self._position = 0

    def take(self, start: int, count: int) -> Iterator[Any]:
        if self._items is None or start < self._position:
            self.close()
            self._handle = open(self._file.path, "rb")  # noqa: SIM115 (closed by close())
            self._items = ijson.items(self._file.open(self._handle), self._prefix, use_float=True, buf_size=_READ)
            self._position = 0
        try:
            for _ in range(start - self._position):
                next(self._items)
            self._position = start
            for _ in range(count):
                item = next(self._items)
                self._position += 1
                if self._position >= self._total:  # before the yield: a zip may not resume us
                    self.close()
                yield item
        except (StopIteration, ijson.JSONError, OSError, EOFError, zlib.error):
            self.close()
            raise UsageError(f"cannot import {self._file.shown}: the file changed while it was imported") from None

    def __del__(self) -> None:  # a reader that stopped part-way (a test, an error) closes too
        self.close()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle, self._items = None, None
