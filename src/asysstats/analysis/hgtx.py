"""HGTX ranges: loading, name filters and ``--filter-hgtx``.

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

The nesting columns come from :mod:`asysstats.analysis.nesting`; the launching calls of activities and
the innermost range around them from :mod:`asysstats.analysis.launches`; correlation with PPU
activities from :mod:`asysstats.analysis.correlate`.
"""

from __future__ import annotations

import difflib
import functools
import weakref
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from asysstats.analysis.names import prefixed_ids
from asysstats.analysis.nesting import nesting
from asysstats.analysis.reads import HGTX_COLUMNS
from asysstats.analysis.suspects import without_suspect_events
from asysstats.compute.keys import pair_key
from asysstats.core.errors import AsysError, quoted
from asysstats.core.integers import parse_int
from asysstats.core.regexes import search
from asysstats.core.result import Gathered, StackColumn
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable, LazyColumns, window_mask

if TYPE_CHECKING:
    import regex

    from asysstats.analysis.inputs import Inputs
    from asysstats.reading.protocol import ReportSource

PUSHPOP, STARTEND, DOMAIN_CREATE = 59, 60, 75
NAME_COLUMNS = ("rangeId", "name", "domain", "style", "pushpop", "globalTid", "pid", "tid", "start", "end")
NESTING_COLUMNS = ("level", "parentId", "children", "childTime")
RANGE_COLUMNS = NAME_COLUMNS + NESTING_COLUMNS

NESTING_BATCH = 1 << 18  # ranges whose nesting is computed at once (whole threads)

_CACHE: "weakref.WeakKeyDictionary[ReportSource, EventTable]" = weakref.WeakKeyDictionary()




def all_ranges(inputs: "Inputs") -> EventTable:
    """Every push/pop and start/end range of the report (no time window; the rule reads
    :data:`HGTX_READS`), cached per report: two derived tables, the ranges from the events,
    then their nesting from the ranges (so that a cold run sorts for the nesting with the
    events no longer loaded), the nesting only when one of its columns is first read."""
    inputs.reading("hgtx", HGTX_COLUMNS)
    report = inputs.report
    if report not in _CACHE:
        if not report.has("hgtx"):
            return _CACHE.setdefault(report, _empty_ranges())
        ranges = report.derived("hgtx_ranges", NAME_COLUMNS, ("name", "domain", "style"), lambda: _build_ranges(report))
        owner = weakref.ref(report)  # the cache holds the report weakly, so must what it keeps
        nested = functools.cache(lambda: owner().derived("hgtx_nesting", NESTING_COLUMNS, (),  # type: ignore[union-attr]
                                                         lambda: _nesting_by_threads(ranges)))
        _CACHE[report] = ranges.with_later_columns(**{c: (lambda c=c: nested()[c]) for c in NESTING_COLUMNS})
    return _CACHE[report]


def load_ranges(inputs: Inputs, columns: Sequence[str] = RANGE_COLUMNS) -> EventTable:
    """The ``columns`` of the ranges inside the analysis window (entirely inside, like every
    other event), without the suspect events that every table leaves out (:func:`trusted`);
    copied only when rows are left out."""
    ranges = all_ranges(inputs)
    keep = window_mask(ranges, inputs.window)
    if ranges.rows:
        rows = inputs.whole("hgtx", ("start",)).rows
        kept = trusted(inputs, "hgtx", EventTable({"row": np.arange(1, rows + 1)}))["row"]
        if len(kept) < rows:
            keep &= np.isin(ranges["rangeId"], kept)
    return EventTable({c: ranges[c] for c in columns}).take(keep)


def trusted(inputs: Inputs, name: str, table: EventTable) -> EventTable:
    """``table`` (one row per row of the report's ``name`` table) without the suspect events
    of :mod:`asysstats.analysis.suspects` (with ``--keep-suspect-events``, those it keeps)."""
    return without_suspect_events(inputs, name, table, keep=inputs.settings.keep_suspect_events)


def _empty_ranges() -> EventTable:
    return EventTable({c: np.empty(0, np.int64) for c in RANGE_COLUMNS})


def _build_ranges(report: "ReportSource") -> LazyColumns:
    """The ranges' own columns (:data:`NAME_COLUMNS`), each taken from the events when it is read.
    The events' text and domain columns are freed once the names are made: with a column cache
    the report does not keep the events loaded here (it maps them again at once)."""
    with report.transient():
        events = report.load("hgtx", HGTX_COLUMNS)
    kind, start, end = events["eventType"], events["start"], events["end"]
    keep = np.flatnonzero((kind == PUSHPOP) | (kind == STARTEND))
    label = np.where(events["text"] >= 0, events["text"], events["textId"])  # per event
    pool = report.strings
    domains = pool.canonical(_domain_names(events, label, keep))
    names = prefixed_ids(pool, domains, pool.canonical(label[keep]), sep=":")
    thread = {c: events[c] for c in ("globalTid", "pid", "tid")}
    del label, events
    styles = pool.intern(["PushPop", "StartEnd"])
    last = max(int(start.max(initial=0)), int(end.max(initial=0)),
               report.hgtx_end or 0)  # a part of merged reports: the set's last

    def ended() -> np.ndarray:
        kept = end[keep]
        return np.maximum(np.where(kept < 0, last, kept), start[keep])

    def threads(c: str) -> Callable[[], np.ndarray]:
        return lambda: thread[c][keep]

    return LazyColumns({"rangeId": lambda: keep + 1, "name": lambda: names, "domain": lambda: domains,
                        "style": lambda: np.where(kind[keep] == PUSHPOP, *styles),
                        "pushpop": lambda: (kind[keep] == PUSHPOP).astype(np.int64),
                        **{c: threads(c) for c in thread}, "start": lambda: start[keep],
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


def name_filter(inputs: "Inputs", names: np.ndarray, include: "Sequence[regex.Pattern] | None",
                exclude: "Sequence[regex.Pattern] | None") -> np.ndarray:
    """Mask of the range names passing ``range-include`` / ``range-exclude`` (regex lists,
    searched once per distinct name)."""
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
NVTX_FILTER = "--filter-nvtx"  # nsys's name of the filter, whose form takes a count
def filter_names(strings: StringPool, ranges: EventTable) -> dict[str, int]:
    """Name id of each distinct range by the way ``--filter-hgtx`` spells it:
    ``range@domain`` inside a domain, else the plain name."""
    pairs = np.unique(np.stack([ranges["name"], ranges["domain"]], axis=1), axis=0)
    names = strings.lookup(pairs[:, 0])
    domains = strings.lookup(pairs[:, 1])
    spelled: dict[str, int] = {}
    for name_id, name, domain in zip(pairs[:, 0].tolist(), names, domains):
        name = name or ""
        if domain is not None and name.startswith(domain + ":"):
            name = f"{name[len(domain) + 1:]}@{domain}"
        spelled.setdefault(name, name_id)
    return spelled


def find_filter_range(inputs: "Inputs", spec: str) -> EventTable:
    """The ranges ``--filter-hgtx name[@domain][/index]`` names (the index-th, from 0, by start
    time), or ``--filter-nvtx name[@domain][/index[/count]]`` (``count`` of them from the
    index-th); a one-line error naming the nearest existing names when there is none."""
    option = inputs.settings.range_filter
    text, index, count = spec, 0, 1
    parts = spec.split("/")
    numbers = 0  # the trailing numbers: index, and (nsys's form) count
    while numbers < min(len(parts) - 1, 2 if option == NVTX_FILTER else 1) and \
            parts[-1 - numbers].strip().isascii() and parts[-1 - numbers].strip().isdigit():
        numbers += 1
    if numbers:
        text = "/".join(parts[:-numbers])
        index, count = (parse_int(part, f"{option}: the {what}", minimum=minimum) for part, what, minimum in
                        zip(parts[-numbers:] + ["1"], ("index", "count"), (0, 1)))
    words = "NVTX" if option == NVTX_FILTER else "HGTX"
    ranges = all_ranges(inputs)
    spelled = filter_names(inputs.strings, ranges) if ranges.rows else {}
    if text not in spelled:
        near = difflib.get_close_matches(text, list(spelled), n=3, cutoff=0.5)
        hint = f" (nearest: {', '.join(near)})" if near else ""
        raise AsysError(f"{option}: {inputs.path.name} has no {words} range named {quoted(text)}{hint}")
    rows = np.flatnonzero(ranges["name"] == spelled[text])
    rows = rows[np.lexsort((ranges["rangeId"][rows], ranges["start"][rows]))]
    if index + count > len(rows):
        asked = f"index {index}" if count == 1 else f"{count} from index {index}"
        raise AsysError(f"{option}: {words} range {quoted(text)} has {len(rows)} instance(s), {asked} is out of range")
    return ranges.take(rows[index:index + count])


def range_stacks(inputs: "Inputs", range_ids: np.ndarray | Gathered) -> StackColumn:
    """``:6:7:8`` per range of ``range_ids``: the range ids of its push/pop stack, outermost
    first (an ancestor may lie outside the time window), as a trace column made a slice at
    a time (:class:`~asysstats.core.result.StackColumn`)."""
    return StackColumn(all_ranges(inputs), range_ids)
