"""Freed memory back to the system, between the phases of a run (a load, a derived build, a
rule's computation, each piece of CSV written), so that one phase's freed buffers do not stay in
the next one's peak."""

from __future__ import annotations

import ctypes
import functools
from typing import Callable

import pyarrow as pa


def release_memory() -> None:
    """Give freed memory back to the system: the buffers Arrow's allocator keeps for reuse (a
    load's read slices, casts and encodings: a fifth of the peak), and the free pages of the C
    heap, where glibc serves numpy arrays of up to 32 MB once freed ones have raised its mmap
    threshold (the arrays of a finished phase would stay in the peak of the next)."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None elsewhere (macOS, musl)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):
        return None
