"""Per-row text of a rule's frame (each value distinct, such as a range stack), as an Arrow
string array.

Frames hold numpy arrays, string ids for text; a text column that is not string ids stays
the Arrow array that string kernels built: the writers print it without converting it, and
no Python string is made per value.
"""

from __future__ import annotations

import pyarrow as pa

from asysstats.io.arrow import one_chunk


def text_column(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A string array without nulls as a frame's text column: one chunk."""
    return one_chunk(array) if isinstance(array, pa.ChunkedArray) else array
