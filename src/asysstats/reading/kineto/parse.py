"""Streaming read of a PyTorch profiler (Kineto) Chrome-trace JSON file, plain or gzip.

The ``traceEvents`` array is parsed incrementally with ijson (its C backend): one event
dict at a time, never the whole document tree, so memory stays bounded by the columns the
caller keeps. Numbers with a fraction arrive as ``Decimal`` (exact, for the nanosecond
conversion). The small top-level members (``deviceProperties``, ``distributedInfo``,
``baseTimeNanoseconds``, ...) are read from the bytes before and after the array: the
head up to the ``"traceEvents"`` key and the last bytes of the file. Every byte the parser reads is
checked first against the bounds of :mod:`asysstats.core.json_bounds` (nesting depth, the length of
a string or a number): a hostile trace is a one-line error, in time and memory linear in its size.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections import deque
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import ijson

from asysstats.core.errors import AsysError
from asysstats.core.json_bounds import JsonBounds

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
CHUNK = 1 << 16
HEAD_LIMIT = 16 << 20  # the top-level members before "traceEvents" are looked for this far
TAIL_KEEP = 1 << 21  # and those after the array in this many last bytes
TAIL_TRIES = 64  # ends of an array in those bytes tried as the end of traceEvents, from the last
EVENTS_KEY = b'"traceEvents"'
ARRAY_END = re.compile(rb"\]\s*(?:,\s*\"|\}\s*$)")


def looks_like_json_trace(path: Path) -> bool:
    """True for a gzip file or a file whose first non-blank byte opens a JSON object or array
    (UTF-8: no zero byte, which UTF-16 text has in every other byte)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return head.startswith(GZIP_MAGIC) or (head.lstrip(BOM + b" \t\r\n")[:1] in (b"{", b"[") and 0 not in head)


def to_ns(value: Any) -> int:
    """Microseconds (int, Decimal, float or numeric text) to integer nanoseconds, rounded
    once, half to even, from the exact decimal value."""
    if type(value) is int:
        return value * 1000
    try:
        exact = value if isinstance(value, Decimal) else Decimal(str(value))
        return int((exact * 1000).to_integral_value(ROUND_HALF_EVEN))
    except (ArithmeticError, ValueError):
        raise ValueError(f"time {value!r} is not a number of microseconds") from None


class TraceStream:
    """Iterate ``events()`` once; afterwards ``metadata`` holds the top-level members.

    The parser reads through :meth:`read`, which keeps the head of the document (up to the
    ``"traceEvents"`` key) and its last bytes for the top-level members.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.metadata: dict[str, Any] = {}
        self._stream: BinaryIO | None = None
        self._bounds = JsonBounds(path.name)
        self._head = bytearray()
        self._head_done = False
        self._tail: deque[bytes] = deque()
        self._tail_size = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)  # type: ignore[union-attr]
        if not self._bounds.offset and chunk.startswith(BOM):
            chunk = chunk[len(BOM):]
        self._bounds.feed(chunk)
        if not self._head_done:
            seen = max(len(self._head) - len(EVENTS_KEY), 0)  # the key may straddle two chunks
            self._head += chunk
            self._head_done = self._head.find(EVENTS_KEY, seen) >= 0 or len(self._head) > HEAD_LIMIT
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size - len(self._tail[0]) >= TAIL_KEEP:
            self._tail_size -= len(self._tail.popleft())
        return chunk

    def events(self) -> Iterator[dict]:
        """Each element of ``traceEvents`` (or of a top-level array) as a dict."""
        with self.path.open("rb") as probe:
            gz = probe.read(2) == GZIP_MAGIC
        try:
            with (gzip.open(self.path, "rb") if gz else self.path.open("rb")) as stream:
                self._stream = stream  # type: ignore[assignment]
                first = stream.peek(64) if hasattr(stream, "peek") else b""
                in_object = first.lstrip(BOM + b" \t\r\n")[:1] != b"["
                count = 0
                for count, event in enumerate(ijson.items(self, "traceEvents.item" if in_object else "item",
                                                          buf_size=CHUNK), 1):
                    if count == 1 and not isinstance(event, dict):
                        raise AsysError(f"{self.path.name}: is JSON but not a PyTorch profiler trace (its first "
                                        f"trace event is {json_kind(event)}, not an object)")
                    yield event
        except (ijson.JSONError, OSError, EOFError, zlib.error) as exc:
            raise AsysError(f"{self.path.name}: unreadable JSON trace ({exc})") from exc
        finally:
            self._stream = None
        if in_object:
            tail = b"".join(self._tail)
            if count == 0 and EVENTS_KEY not in self._head and EVENTS_KEY not in tail:
                raise AsysError(f"{self.path.name}: JSON without a traceEvents array (not a PyTorch profiler trace)")
            self.metadata = {**leading_members(bytes(self._head)), **trailing_members(tail)}


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, for a message: ``a list``, ``a string``, ``a number``..."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a list" if isinstance(value, list) else "a string" if isinstance(value, str) else "a number"


def leading_members(head: bytes) -> dict[str, Any]:
    """The top-level members written before the ``"traceEvents"`` key: one streaming pass over the
    head (its bytes are within the JSON bounds already), which ends at that key or where the head is cut."""
    members: dict[str, Any] = {}
    try:
        for key, value in ijson.kvitems(io.BytesIO(head), "", use_float=True):
            if key == "traceEvents":
                break
            members[key] = value
    except ijson.JSONError:
        pass
    return members


def trailing_members(tail: bytes) -> dict[str, Any]:
    """The top-level members written after the ``traceEvents`` array.

    Candidates are the ``]`` followed by ``,"`` or by the final ``}``; tried from the end (the last
    :data:`TAIL_TRIES`, so that the time stays linear), the earliest one whose remainder parses as
    the rest of an object is the array's end.
    """
    found: dict[str, Any] | None = None
    for match in reversed(list(ARRAY_END.finditer(tail))[-TAIL_TRIES:]):
        rest = tail[match.start() + 1:].lstrip().lstrip(b",")
        try:
            value = json.loads(b"{" + rest)
        except ValueError:
            if found is not None:
                break
            continue
        if isinstance(value, dict):
            found = value
    found = found or {}
    found.pop("traceEvents", None)
    return found
