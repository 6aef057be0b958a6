"""HGTX ranges: loading, push/pop nesting, name filters and ``--filter-hgtx``.

:func:`all_ranges` turns the HGTX event table into one table of ranges (push/pop, event
type 59, and start/end, 60; marks and domain rows are dropped), with columns

* ``rangeId`` — the event's row id in the report (the ``RangeId`` the trace rules print);
* ``name`` — canonical string id of the display name, ``domain:range`` inside a domain
  (equal names share one id); ``domain`` — the domain's name id (-1: none);
* ``style`` — string id of ``PushPop`` / ``StartEnd``; ``pushpop`` — 1 for push/pop ranges;
* ``globalTid``, ``pid``, ``tid`` — the thread the range starts on; ``start``, ``end``
  (a range without an end lasts until the last HGTX timestamp, as in Nsight Systems);
* ``level`` (0 = outermost), ``parentId`` (``rangeId`` of the enclosing push/pop range,
  ``NA`` at level 0), ``children`` (immediate children) and ``childTime`` (their total
  duration) — push/pop ranges only; start/end ranges have level 0 and no parent.

Correlation with PPU activities lives in :mod:`asysstats.correlate`.
"""

from __future__ import annotations

import difflib
import weakref
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.distinct import distinct
from asysstats.compute.intervals import enclosing_pairs
from asysstats.engine import Gathered, Inputs, window_mask
from asysstats.errors import AsysError
from asysstats.io.arrow import from_numpy, text
from asysstats.io.tables import NA, EventTable, LazyColumns, empty_table
from asysstats.names import prefixed_ids
from asysstats.regexes import search
from asysstats.suspects import without_suspect_events

if TYPE_CHECKING:
    from asysstats.io.report import Report

PUSHPOP, STARTEND, DOMAIN_CREATE = 59, 60, 75
HGTX_COLUMNS = ("start", "end", "eventType", "globalTid", "domainId", "text", "textId")
CALL_COLUMNS = ("start", "end", "globalTid", "correlationId")
NAME_COLUMNS = ("rangeId", "name", "domain", "style", "pushpop", "globalTid", "pid", "tid", "start", "end")
NESTING_COLUMNS = ("level", "parentId", "children", "childTime")
RANGE_COLUMNS = NAME_COLUMNS + NESTING_COLUMNS

NESTING_BATCH = 1 << 18  # ranges whose nesting is computed at once (whole threads)

_CACHE: "weakref.WeakKeyDictionary[Report, EventTable]" = weakref.WeakKeyDictionary()


def all_ranges(report: "Report") -> EventTable:
    """Every push/pop and start/end range of the report (no time window), cached per report:
    two derived tables, the ranges from the events, then their nesting from the ranges (so
    that a cold run sorts for the nesting with the events no longer loaded)."""
    if report not in _CACHE:
        if not report.has("hgtx"):
            return _CACHE.setdefault(report, _empty_ranges())
        ranges = report.derived("hgtx_ranges", NAME_COLUMNS, ("name", "domain", "style"), lambda: _build_ranges(report))
        nested = report.derived("hgtx_nesting", NESTING_COLUMNS, (), lambda: _nesting_by_threads(ranges))
        _CACHE[report] = ranges.with_columns(**nested)
    return _CACHE[report]


def load_ranges(inputs: Inputs, columns: Sequence[str] = RANGE_COLUMNS) -> EventTable:
    """The ``columns`` of the ranges inside the analysis window (entirely inside, like every
    other event), without the suspect events that every table leaves out (:func:`trusted`);
    copied only when rows are left out."""
    ranges = all_ranges(inputs.report)
    keep = window_mask(ranges, inputs.window)
    if ranges.rows:
        rows = inputs.report.load("hgtx", ("start",)).rows
        kept = trusted(inputs, "hgtx", EventTable({"row": np.arange(1, rows + 1)}))["row"]
        if len(kept) < rows:
            keep &= np.isin(ranges["rangeId"], kept)
    return EventTable({c: ranges[c] for c in columns}).take(keep)


def trusted(inputs: Inputs, name: str, table: EventTable) -> EventTable:
    """``table`` (one row per row of the report's ``name`` table) without the suspect events
    of :mod:`asysstats.suspects`, unless ``--keep-suspect-events``."""
    if inputs.settings.keep_suspect_events:
        return table
    return without_suspect_events(inputs, name, table)


def _empty_ranges() -> EventTable:
    return EventTable({c: np.empty(0, np.int64) for c in RANGE_COLUMNS})


def _build_ranges(report: "Report") -> LazyColumns:
    """The ranges' own columns (:data:`NAME_COLUMNS`), each taken from the events when it is read."""
    events = report.load("hgtx", HGTX_COLUMNS)
    kind, start, end = events["eventType"], events["start"], events["end"]
    keep = np.flatnonzero((kind == PUSHPOP) | (kind == STARTEND))
    label = np.where(events["text"] >= 0, events["text"], events["textId"])  # per event
    pool = report.strings
    domains = pool.canonical(_domain_names(events, label, keep))
    names = prefixed_ids(pool, domains, pool.canonical(label[keep]), sep=":")
    del label
    styles = pool.intern(["PushPop", "StartEnd"])
    last = max(int(start.max(initial=0)), int(end.max(initial=0)),
               getattr(report, "hgtx_end", None) or 0)  # a part of merged reports: the set's last

    def ended() -> np.ndarray:
        kept = end[keep]
        return np.maximum(np.where(kept < 0, last, kept), start[keep])

    return LazyColumns({"rangeId": lambda: keep + 1, "name": lambda: names, "domain": lambda: domains,
                        "style": lambda: np.where(kind[keep] == PUSHPOP, *styles),
                        "pushpop": lambda: (kind[keep] == PUSHPOP).astype(np.int64),
                        **{c: (lambda c=c: events[c][keep]) for c in ("globalTid", "pid", "tid", "start")},
                        "end": ended})


def _nesting_by_threads(ranges: EventTable) -> dict[str, np.ndarray]:
    """:func:`nesting` of the ranges, over batches of whole threads of about ``NESTING_BATCH``
    ranges each (ranges nest within their thread): the memory of its sorts in proportion to a
    batch, not to every range."""
    thread = ranges["globalTid"]
    threads, counts = np.unique(thread, return_counts=True)
    batch_of_thread = np.cumsum(counts) // NESTING_BATCH
    if len(threads) < 2 or batch_of_thread[-2] == batch_of_thread[0]:  # one batch: no copies
        return nesting(thread, ranges["start"], ranges["end"], ranges["pushpop"] == 1, ranges["rangeId"])
    out = {c: np.empty(len(thread), np.int64) for c in NESTING_COLUMNS}
    for b in np.unique(batch_of_thread):
        rows = np.flatnonzero(np.isin(thread, threads[batch_of_thread == b]))
        part = nesting(thread[rows], ranges["start"][rows], ranges["end"][rows], ranges["pushpop"][rows] == 1,
                       ranges["rangeId"][rows])
        for c, values in part.items():
            out[c][rows] = values
    return out


def _domain_names(events: EventTable, label: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Per range (``keep``: its event row), the string id of its domain's name (-1 outside a
    named domain); ``label``: each event's text or text id.

    Domains are numbered per process: a range joins the creation row (event type 75) with
    the same ``domainId`` in the same process; the earliest creation row wins."""
    out = np.full(len(keep), -1, dtype=np.int64)
    created = np.flatnonzero(events["eventType"] == DOMAIN_CREATE)
    if len(created) == 0:
        return out
    pid, domain = events["pid"], events["domainId"]
    created = created[np.argsort(events["start"][created], kind="stable")]
    uniq, first = np.unique(pair_key(pid[created], domain[created]), return_index=True)
    inside = np.flatnonzero(domain[keep] != 0)
    rows = keep[inside]
    key = pair_key(pid[rows], domain[rows])
    slot = np.clip(np.searchsorted(uniq, key), 0, len(uniq) - 1)
    hit = uniq[slot] == key
    out[inside[hit]] = label[created][first[slot[hit]]]
    return out


def pair_key(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """One int64 join key of two ids (``high`` < 2**31; ``low`` keeps its low 32 bits)."""
    return (np.asarray(high, np.int64) << 32) | (np.asarray(low, np.int64) & 0xFFFFFFFF)


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


def range_stacks(report: "Report", range_ids: np.ndarray | Gathered) -> "StackColumn":
    """``:6:7:8`` per range of ``range_ids``: the range ids of its push/pop stack, outermost
    first (an ancestor may lie outside the time window), as a trace column joined a slice at
    a time (:class:`StackColumn`)."""
    return StackColumn(all_ranges(report), range_ids)


class TextColumn(Gathered):
    """A text column of a frame as Arrow strings, made for a slice of rows at a time as the
    writers read a column: ``values[rows]`` of a string array (text built once per distinct
    value, no string id interned for it)."""

    __slots__ = ()

    def __getitem__(self, key: slice) -> pa.Array:
        return self.values.take(from_numpy(self.rows[key]))  # type: ignore[union-attr]

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self[:].to_pylist(), dtype=object)


class StackColumn(TextColumn):
    """A text column of range stacks, joined by Arrow (no Python string per range) for a
    slice of rows at a time, as the writers read a column: the text of every row at once
    would outweigh the rest of a trace. ``values``: the report's ranges; ``rows``: the range
    id of each row; ``parent``: each range's parent row (-1 at level 0)."""

    __slots__ = ("parent",)

    def __init__(self, ranges: EventTable, range_ids: np.ndarray | Gathered) -> None:
        super().__init__(ranges, range_ids)  # type: ignore[arg-type]
        parent = np.searchsorted(ranges["rangeId"], ranges["parentId"])
        self.parent = np.where(ranges["level"] > 0, parent, -1).astype(np.int32)

    def __getitem__(self, key: slice) -> pa.Array:
        ranges: EventTable = self.values  # type: ignore[assignment]
        row = np.searchsorted(ranges["rangeId"], self.rows[key]).astype(np.int32)
        depth = int(ranges["level"][row].max(initial=-1)) + 1
        stack = np.full((len(row), depth), -1, np.int32)  # per row its ranges, outermost first; -1 before them
        for level in reversed(range(depth)):
            stack[:, level] = row
            row = np.where(row >= 0, self.parent[np.maximum(row, 0)], -1)
        used = stack >= 0
        offsets = np.zeros(len(stack) + 1, np.int32)
        np.cumsum(np.count_nonzero(used, axis=1), out=offsets[1:])
        ids = pc.cast(from_numpy(ranges["rangeId"][stack[used]]), pa.string())
        joined = pc.binary_join(pa.ListArray.from_arrays(from_numpy(offsets), ids), text(":"))
        return pc.binary_join_element_wise(text(""), joined, text(":"))  # ":" before the first id


# -- launching calls and the innermost range --------------------------------------------------
def runtime_calls(report: "Report") -> EventTable:
    """All API calls (no time window: a call is only looked up by correlation id)."""
    if not report.has("runtime"):
        return empty_table(list(CALL_COLUMNS) + ["pid", "tid"])
    return report.load("runtime", CALL_COLUMNS)


def lookup(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of ``keys`` holding each ``wanted`` value (its first occurrence), -1 when absent."""
    if len(keys) == 0:
        return np.full(len(wanted), -1, np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    slot = np.minimum(np.searchsorted(sorted_keys, wanted), len(keys) - 1)
    return np.where(sorted_keys[slot] == wanted, order[slot], -1)


def launch_rows(calls: EventTable, activities: EventTable) -> np.ndarray:
    """Row of the launching API call of each activity (same process and correlationId), or -1
    (also for correlationId 0, which marks activities no call caused)."""
    rows = lookup(pair_key(calls["pid"], calls["correlationId"]),
                  pair_key(activities["pid"], activities["correlationId"]))
    return np.where(activities["correlationId"] > 0, rows, -1)


def innermost_range_names(inputs: Inputs, activities: EventTable) -> np.ndarray:
    """Per activity row (kernels, memcpy, memset: ``pid``, ``correlationId``), the name id
    of the innermost range (latest start, then earliest end) on the launching call's thread
    that holds the call's start; -1 when none (conventions 13).

    Every range of the report counts (the time window selects activities, not the ranges
    around them); graph mapping does not apply."""
    out = np.full(activities.rows, -1, dtype=np.int64)
    ranges = all_ranges(inputs.report)
    if activities.rows == 0 or ranges.rows == 0:
        return out
    calls = runtime_calls(inputs.report)
    launch = launch_rows(calls, activities)
    have = np.flatnonzero(launch >= 0)
    r, p = enclosing_pairs(ranges["globalTid"], ranges["start"], ranges["end"],
                           calls["globalTid"][launch[have]], calls["start"][launch[have]])
    if len(r) == 0:
        return out
    by_depth = np.lexsort((ranges["rangeId"], -ranges["end"], ranges["start"]))  # innermost last
    rank = np.empty(ranges.rows, np.int64)
    rank[by_depth] = np.arange(ranges.rows)
    best = np.full(len(have), -1, np.int64)
    np.maximum.at(best, p, rank[r])
    found = best >= 0
    out[have[found]] = ranges["name"][by_depth[best[found]]]
    return out


def name_filter(inputs: Inputs, names: np.ndarray, options: Mapping[str, Any]) -> np.ndarray:
    """Mask of the range names passing ``range-include`` / ``range-exclude`` (regex lists,
    searched once per distinct name)."""
    include, exclude = options.get("range-include"), options.get("range-exclude")
    if (not include and not exclude) or len(names) == 0:
        return np.ones(len(names), dtype=bool)
    uniq, inverse = np.unique(names, return_inverse=True)
    texts = inputs.strings.lookup(uniq)
    keep = np.ones(len(uniq), dtype=bool)
    for i, name in enumerate(texts):
        name = name or ""
        if include:
            keep[i] = any(search(p, name, "option 'range-include'") for p in include)
        if exclude and keep[i]:
            keep[i] = not any(search(p, name, "option 'range-exclude'") for p in exclude)
    return keep[inverse.reshape(-1)]


# -- --filter-hgtx --------------------------------------------------------------------------
def filter_names(report: "Report", ranges: EventTable) -> dict[str, int]:
    """Name id of each distinct range by the way ``--filter-hgtx`` spells it:
    ``range@domain`` inside a domain, else the plain name."""
    pairs = np.unique(np.stack([ranges["name"], ranges["domain"]], axis=1), axis=0)
    names = report.strings.lookup(pairs[:, 0])
    domains = report.strings.lookup(pairs[:, 1])
    spelled = {}
    for name_id, name, domain in zip(pairs[:, 0].tolist(), names, domains):
        name = name or ""
        if domain is not None and name.startswith(domain + ":"):
            name = f"{name[len(domain) + 1:]}@{domain}"
        spelled.setdefault(name, name_id)
    return spelled


def find_filter_range(report: "Report", spec: str) -> EventTable:
    """The one range ``--filter-hgtx name[@domain][/index]`` names (the index-th, from 0,
    by start time); a one-line error naming the nearest existing names when there is none."""
    text, index = spec, 0
    head, slash, tail = spec.rpartition("/")
    if slash and tail.strip().isdigit():
        text, index = head, int(tail)
    ranges = all_ranges(report)
    spelled = filter_names(report, ranges) if ranges.rows else {}
    if text not in spelled:
        near = difflib.get_close_matches(text, list(spelled), n=3, cutoff=0.5)
        hint = f" (nearest: {', '.join(near)})" if near else ""
        raise AsysError(f"--filter-hgtx: {report.path.name} has no HGTX range named {text!r}{hint}")
    rows = np.flatnonzero(ranges["name"] == spelled[text])
    rows = rows[np.lexsort((ranges["rangeId"][rows], ranges["start"][rows]))]
    if index >= len(rows):
        raise AsysError(f"--filter-hgtx: HGTX range {text!r} has {len(rows)} instance(s), "
                        f"index {index} is out of range")
    return ranges.take(rows[index:index + 1])
