"""Interval algebra on half-open ``[start, end)`` int64 nanosecond intervals.

Everything is a sorted sweep in numpy: unions by a running maximum of ends, covered
lengths by a +1/-1 event sweep (which also works per group, since coverage returns to
zero between groups), containment by ``searchsorted`` over time-sorted points.
Zero-length intervals cover nothing but still contain nothing and are contained normally.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted segments covering the same time as the input intervals."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(s)) - 1
    return s[first], e[last]


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total time covered by at least one interval."""
    s, e = union(starts, ends)
    return int((e - s).sum())


def covered_length_by_group(group: np.ndarray, starts: np.ndarray, ends: np.ndarray, n_groups: int) -> np.ndarray:
    """Time covered by the union of each group's intervals (``group`` in ``0..n_groups-1``)."""
    group = np.asarray(group, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    group, starts, ends = group[keep], starts[keep], ends[keep]
    out = np.zeros(n_groups, dtype=np.int64)
    if len(group) == 0:
        return out
    g = np.concatenate([group, group])
    t = np.concatenate([starts, ends])
    d = np.concatenate([np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)])
    order = np.lexsort((d, t, g))
    g, t, d = g[order], t[order], d[order]
    depth = np.cumsum(d)
    span = np.diff(t)
    active = (depth[:-1] > 0) & (g[1:] == g[:-1])
    np.add.at(out, g[:-1][active], span[active])
    return out


def intersection_length(a_starts, a_ends, b_starts, b_ends) -> int:
    """Time covered by both the union of intervals A and the union of intervals B."""
    sa, ea = union(a_starts, a_ends)
    sb, eb = union(b_starts, b_ends)
    if len(sa) == 0 or len(sb) == 0:
        return 0
    return int((cumulative_cover(sb, eb, ea) - cumulative_cover(sb, eb, sa)).sum())


def cumulative_cover(seg_starts: np.ndarray, seg_ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Covered time before each instant ``t`` by sorted disjoint segments (from :func:`union`)."""
    t = np.asarray(t, dtype=np.int64)
    if len(seg_starts) == 0:
        return np.zeros(t.shape, dtype=np.int64)
    lengths = seg_ends - seg_starts
    before = np.concatenate([[0], np.cumsum(lengths)])
    k = np.searchsorted(seg_starts, t, side="right") - 1
    inside = np.clip(t - seg_starts[np.maximum(k, 0)], 0, lengths[np.maximum(k, 0)])
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)


def busy_per_window(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Covered time of the union of intervals inside each window ``[edges[i], edges[i+1])``."""
    s, e = union(starts, ends)
    cover = cumulative_cover(s, e, np.asarray(edges, dtype=np.int64))
    return np.diff(cover)


def gaps(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Idle gaps ``[gap_start, gap_end)`` between the segments of the union."""
    s, e = union(starts, ends)
    return e[:-1], s[1:]


def enclosing_pairs(range_group: np.ndarray, range_start: np.ndarray, range_end: np.ndarray,
                    point_group: np.ndarray, point_time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (range index, point index) pairs with the same group and ``start <= time < end``.

    Loops over groups (threads), never over events; memory is linear in the pairs found.
    """
    range_group = np.asarray(range_group, dtype=np.int64)
    point_group = np.asarray(point_group, dtype=np.int64)
    range_start = np.asarray(range_start, dtype=np.int64)
    range_end = np.asarray(range_end, dtype=np.int64)
    point_time = np.asarray(point_time, dtype=np.int64)
    out_r: list[np.ndarray] = []
    out_p: list[np.ndarray] = []
    p_order = np.lexsort((point_time, point_group))
    pg_sorted = point_group[p_order]
    for g in np.intersect1d(np.unique(range_group), pg_sorted):
        lo_g, hi_g = np.searchsorted(pg_sorted, g, "left"), np.searchsorted(pg_sorted, g, "right")
        pts = p_order[lo_g:hi_g]
        times = point_time[pts]
        ridx = np.flatnonzero(range_group == g)
        lo = np.searchsorted(times, range_start[ridx], "left")
        hi = np.searchsorted(times, range_end[ridx], "left")
        r, p = expand_slices(lo, hi)
        out_r.append(ridx[r])
        out_p.append(pts[p])
    if not out_r:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_r), np.concatenate(out_p)


def expand_slices(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For slices ``[lo[i], hi[i])`` return (i repeated per element, element index)."""
    lengths = np.maximum(np.asarray(hi) - np.asarray(lo), 0)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    if len(owner) == 0:
        return owner, owner
    offsets = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, np.repeat(lo, lengths) + offsets


def overlap_components(group: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Label of the connected component of chained overlaps (``start < running end``) of
    each interval within its group; labels are numbered in (group, start) order."""
    group = np.asarray(group, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    n = len(starts)
    if n == 0:
        return np.empty(0, np.int64)
    order = np.lexsort((ends, starts, group))
    g, s, e = group[order], starts[order], ends[order]
    reach = pd.Series(e).groupby(g).cummax().to_numpy()
    new = np.ones(n, dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (s[1:] >= reach[:-1])
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.cumsum(new) - 1
    return labels
