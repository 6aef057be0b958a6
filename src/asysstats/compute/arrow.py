"""numpy and Python values to Arrow arrays, and Arrow text to bytes, without ``pa.array``.

``pa.array`` and ``pa.scalar`` (which compute functions call on a Python ``str``
argument) import pandas on first use (0.3–0.7 s of every run); building arrays from
buffers does not, and it never makes a Python object per value.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def from_numpy(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A 1-d numeric or bool numpy array as an Arrow array (zero-copy when contiguous), null
    where ``valid`` is False."""
    values = np.ascontiguousarray(values)
    validity = None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [validity, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [validity, pa.py_buffer(values)])


def from_texts(values: Sequence[str | None] | np.ndarray) -> pa.Array:
    """Strings (``None`` for null) as an Arrow string array; 64-bit offsets for large text.
    Joined and encoded in one piece (C loops), per string only for non-ASCII text."""
    items = np.asarray(values, dtype=object).reshape(-1)
    valid = items != None  # noqa: E711 (element-wise)
    if not valid.all():
        items = np.where(valid, items, "")
    strings = items.tolist()
    joined = "".join(strings)
    data = joined.encode("utf-8", "surrogatepass")
    if len(data) != len(joined):  # some text is not ASCII: count bytes per string
        strings = [s.encode("utf-8", "surrogatepass") for s in strings]
    kind, width = (pa.string(), np.int32) if len(data) < 2 ** 31 else (pa.large_string(), np.int64)
    offsets = np.zeros(len(strings) + 1, dtype=width)
    np.cumsum(np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)), out=offsets[1:])
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(kind, len(strings), [validity, pa.py_buffer(offsets), pa.py_buffer(data)])


THREAD_ROWS = 1 << 16  # the fewest rows worth a thread of their own


@overload
def on_threads(function: Callable[[pa.Array], pa.Array], values: pa.Array) -> pa.Array: ...
@overload
def on_threads(function: Callable[[pa.Array], tuple[pa.Array, ...]], values: pa.Array) -> tuple[pa.Array, ...]: ...
def on_threads(function: Callable[[pa.Array], Any], values: pa.Array) -> Any:
    """``function(values)`` for a function of Arrow arrays that gives one value a row (an array, or
    a tuple of them), run on consecutive slices of the rows on parallel threads (Arrow's kernels
    release the GIL), the slices' results joined in order: a regex over 602 K PyTorch texts
    0.75 -> 0.37 s on two cores (docs/performance.md)."""
    threads = max(1, min(pa.cpu_count(), len(values) // THREAD_ROWS))
    if threads == 1:
        return function(values)
    step = -(-len(values) // threads)
    with ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(function, (values.slice(at, step) for at in range(0, len(values), step))))
    if isinstance(parts[0], tuple):
        return tuple(pa.concat_arrays(list(columns)) for columns in zip(*parts))
    return pa.concat_arrays(parts)


def to_numpy(column: pa.Array | pa.ChunkedArray, dtype: np.dtype) -> np.ndarray:
    """The values of a fixed-width column as numpy (whatever lies under a null), without a
    copy for a single chunk (a memory-mapped cache file)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
             for chunk in chunks if len(chunk)]
    if not parts:
        return np.empty(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def valid_mask(array: pa.Array) -> np.ndarray:
    """True where ``array`` holds a value (not null)."""
    bitmap = array.buffers()[0]
    if bitmap is None or array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset:array.offset + len(array)].astype(bool)


def one_chunk(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array: its only chunk as it is (``combine_chunks`` copies even that)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def text(value: str) -> pa.Scalar:
    """A string scalar for compute functions (pass it instead of a Python ``str``)."""
    return from_texts([value])[0]


def text_offsets(array: pa.Array) -> np.ndarray:
    """Where each string of a string array starts in its data buffer, and where the last ends."""
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    return np.frombuffer(array.buffers()[1], width, len(array) + 1, array.offset * np.dtype(width).itemsize)


def text_bytes(array: pa.Array) -> memoryview:
    """The concatenated UTF-8 of a string array without nulls: its data buffer, sliced, not copied."""
    if len(array) == 0:
        return memoryview(b"")
    offsets = text_offsets(array)
    return memoryview(array.buffers()[2])[int(offsets[0]):int(offsets[-1])]


def lines_bytes(lines: pa.Array) -> memoryview:
    """Every string followed by a newline, as one piece of bytes."""
    return text_bytes(pc.binary_join_element_wise(lines, text("\n"), text("")))


QUOTE, NOTHING = text('"'), text("")


def quoted(array: pa.Array) -> pa.Array:
    """CSV text cell: always double-quoted, embedded quotes doubled (docs/decisions.md D6); the text
    is searched for a quote once (a memchr of its bytes) before it is rewritten."""
    if array.null_count or b'"' in text_bytes(array).tobytes():
        array = pc.replace_substring(array, '"', '""')
    return pc.binary_join_element_wise(QUOTE, array, QUOTE, NOTHING)
