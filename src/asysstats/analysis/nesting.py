"""Push/pop nesting: each range's level, parent, child count and child time, by one sorted
sweep per report (ranges of one thread are properly nested)."""

from __future__ import annotations

import numpy as np

from asysstats.compute.distinct import distinct
from asysstats.core.tables import NA


def nesting(thread: np.ndarray, start: np.ndarray, end: np.ndarray, stacked: np.ndarray,
            range_id: np.ndarray) -> dict[str, np.ndarray]:
    """Level, parent id, child count and child time of the ``stacked`` (push/pop) ranges
    (``range_id`` ascending: the ranges in report order).

    Ranges of one thread are properly nested. One sorted sweep over +1/-1 events gives
    each range's stack depth at its start; its parent is the nearest earlier range (in
    start order, same thread) one level up. Ends sort before starts at equal times, and
    a zero-length range's end after them, so touching ranges are siblings and an empty
    range nests inside whatever starts with it."""
    n = len(start)
    level = np.zeros(n, np.int64)
    parent = np.full(n, NA, np.int64)
    children = np.zeros(n, np.int64)
    child_time = np.zeros(n, np.int64)
    idx = np.flatnonzero(stacked)
    if len(idx):
        g = distinct(thread[idx])[1].astype(np.int32)  # thread codes: a narrower sort key
        s, e = start[idx], end[idx]
        lvl, pos = _start_depths(g, s, e)
        local_parent = _parents(g, lvl, pos)
        level[idx] = lvl
        with_parent = local_parent >= 0
        parent[idx[with_parent]] = range_id[idx][local_parent[with_parent]]
        children[idx] = np.bincount(local_parent[with_parent], minlength=len(idx))
        child_time[idx] = np.bincount(local_parent[with_parent], weights=(e - s)[with_parent], minlength=len(idx))
    return {"level": level, "parentId": parent, "children": children, "childTime": child_time}


def _start_depths(g: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stack depth of each range at its start and its position in start order, from one
    stable sort of start events ``(g, s, 1, -e)`` (equal ones in row order) and end events
    ``(g, e, 0 or 2 when empty)`` (small key types: the sort of twice the ranges sets the
    peak memory of a cold run)."""
    m = len(s)
    kind = np.concatenate([np.ones(m, np.int8), np.where(e == s, 2, 0).astype(np.int8)])
    order = np.lexsort((np.concatenate([-e, np.zeros(m, np.int64)]), kind, np.concatenate([s, e]),
                        np.concatenate([g, g])))
    is_start = order < m
    depth = np.cumsum(np.where(is_start, np.int8(1), np.int8(-1)), dtype=np.int64)[is_start] - 1
    starts = order[is_start]
    lvl = np.empty(m, np.int64)
    lvl[starts] = depth
    pos = np.empty(m, np.int64)
    pos[starts] = np.arange(m)
    return lvl, pos


def _parents(g: np.ndarray, lvl: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Index of each range's parent, -1 at level 0: the last range one level up before it
    in start order, on the same thread."""
    m = len(lvl)
    key = lvl * m + pos
    by_key = np.argsort(key)
    has = np.flatnonzero(lvl > 0)
    cand = np.searchsorted(key[by_key], key[has] - m, "left") - 1
    par = by_key[np.maximum(cand, 0)]
    valid = (cand >= 0) & (lvl[par] == lvl[has] - 1) & (g[par] == g[has])
    local_parent = np.full(m, -1, np.int64)
    local_parent[has[valid]] = par[valid]
    return local_parent

