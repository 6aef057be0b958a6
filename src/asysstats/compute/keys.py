"""Join keys of integer columns: two ids packed into one, and the row holding each wanted key."""

from __future__ import annotations

import numpy as np


def pair_key(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """One int64 join key of two ids (``high`` < 2**31; ``low`` keeps its low 32 bits)."""
    return (np.asarray(high, np.int64) << 32) | (np.asarray(low, np.int64) & 0xFFFFFFFF)


def lookup(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of ``keys`` holding each ``wanted`` value (its first occurrence), -1 when absent."""
    if len(keys) == 0:
        return np.full(len(wanted), -1, np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    slot = np.minimum(np.searchsorted(sorted_keys, wanted), len(keys) - 1)
    return np.where(sorted_keys[slot] == wanted, order[slot], -1)
