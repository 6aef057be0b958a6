"""Text built by Arrow string kernels as a text column of a rule's frame.

Frames hold numpy arrays; a text column that is not string ids (each value distinct, such
as a range stack) is a ``StringDType`` array: short values are stored inline, with no
Python string per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.dtypes import StringDType

from asysstats.io.arrow import from_numpy, from_texts, text, text_bytes, to_numpy


def text_column(array: pa.Array) -> np.ndarray:
    """A string array without nulls (nor NUL characters) as a ``StringDType`` array, copied
    by C loops through fixed-width bytes (each value padded with NULs to the longest: meant
    for short text)."""
    if len(array) == 0:
        return np.empty(0, StringDType())
    lengths = to_numpy(pc.cast(pc.binary_length(array), pa.int64()), np.dtype(np.int64))
    width = max(int(lengths.max()), 1)
    padding = from_texts(["\0" * k for k in range(width + 1)]).take(from_numpy(width - lengths))
    padded = pc.binary_join_element_wise(array, padding, text(""))
    return np.frombuffer(text_bytes(padded), f"S{width}").astype(StringDType())
