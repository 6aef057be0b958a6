"""``MergedReport``: many reports behind the one-report interface every rule reads.

It is a :class:`~asysstats.reading.protocol.ReportSource`, so every rule runs unchanged
on the union of the reports. ``load`` asks the worker that owns
each report for the projected columns (placed: shifted times, job-wide ids), then
concatenates the parts in report order, re-interning text by value into one string pool.
Metadata tables become one report's worth: one analysis range (earliest start, latest
stop), the earliest session start, one row per enumeration id.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from asysstats.core.errors import AsysError
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable
from asysstats.reading.merged import worker
from asysstats.reading.merged.identity import JobIds, Placement, placements
from asysstats.reading.schema import TABLES, missing_data, missing_words
from asysstats.reading.sqlite import missing_message

NODE_SUFFIX = re.compile(r"_node_(.+)$")  # asys names per-node reports <name>_node_<hostname>
ENUM_TABLES = ("memcpy_kinds", "mem_kinds")


@dataclass(frozen=True)
class Member:
    path: Path
    owner: str
    info: worker.ReportInfo
    at: Placement


class MergedReport:
    """Several reports read as one (see the module doc); also one report with shifted clocks."""

    hgtx_end: int | None = None  # a part of the set (asysstats.api.merging.parts): the set's last HGTX time

    def __init__(self, members: list[Member], executor, cache: bool, path: Path, skipped: list[str]) -> None:
        self.members = members
        self.executor = executor
        self.path = path
        self.skipped = skipped  # one message per report left out (--skip-bad-reports)
        self.returned = 0  # bytes the reduced path brought back to this process (asysstats.api.merging.reduce)
        self.strings = StringPool()
        self.labels = host_labels([m.path for m in members])
        self.ids = JobIds(np.array([m.at.device_offset for m in members], np.int64))
        self.cache_columns = cache
        self._tables: dict[tuple[str, tuple[str, ...]], EventTable] = {}
        dialects = {m.info.dialect for m in members}
        if len(dialects) > 1:
            kinds = ", ".join(f"{m.path.name} is {m.info.dialect}" for m in members)
            raise AsysError(f"cannot merge reports of different kinds ({kinds})")
        self.dialect = dialects.pop()

    def __repr__(self) -> str:
        return f"MergedReport({len(self.members)} reports on {self.executor.name})"

    def derived(self, name: str, columns: Sequence[str], text: Sequence[str],
                build: Callable[[], Mapping[str, np.ndarray]]) -> EventTable:
        """A table computed from the report's tables (not cached: see ``SqliteReport.derived``)."""
        return EventTable(build())

    def transient(self) -> contextlib.AbstractContextManager[None]:
        """Loads inside the block are kept (see ``SqliteReport.transient``): loading again gathers from every report."""
        return contextlib.nullcontext()

    def has(self, logical: str) -> bool:
        return any(logical in m.info.physical for m in self.members)

    def physical_tables(self, logical: str) -> list[str]:
        return list(dict.fromkeys(t for m in self.members for t in m.info.physical.get(logical, ())))

    def missing_message(self, logical: str) -> str:
        spec = TABLES[logical]
        if len(self.members) == 1:
            return missing_message(self.members[0].path, spec, self.dialect)
        what, collect = missing_words(spec, self.dialect)
        return f"the {len(self.members)} merged reports do not contain {what} (collect with {collect})"

    def load(self, logical: str, columns: Sequence[str] = ()) -> EventTable:
        """The logical table over all reports with the given columns (all when empty)."""
        cols = tuple(columns) or tuple(c.name for c in TABLES[logical].columns)
        key = (logical, cols)
        if key not in self._tables:
            if not self.has(logical):
                raise missing_data(self, logical)
            self._tables[key] = one_report(logical, self._concat(self.parts(logical, cols)))
        return self._tables[key]

    def parts(self, logical: str, columns: tuple[str, ...]) -> list[worker.Part]:
        """The placed parts of the reports that have the table, in report order (from their owners)."""
        calls = [(m.owner, worker.load_part, (str(m.path), self.cache_columns, logical, columns, m.at))
                 for m in self.members]
        return [p for p in raise_failures(self.members, self.executor.run(calls)) if p is not None]

    def _concat(self, parts: list[worker.Part]) -> EventTable:
        columns = {}
        for name in parts[0]:
            pieces = [interned(self.strings, p[name]) for p in parts]
            columns[name] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        return EventTable(columns)

    def close(self) -> None:
        self.executor.run([(m.owner, worker.close, (str(m.path), self.cache_columns)) for m in self.members])
        self.executor.close()


def interned(strings: StringPool, column: np.ndarray | worker.Text) -> np.ndarray:
    """A column as ids of ``strings``: text (codes into distinct strings) is interned by value."""
    if not isinstance(column, tuple):
        return column
    codes, values = column
    if not values:
        return codes
    ids = strings.intern(values)
    return np.where(codes >= 0, ids[np.maximum(codes, 0)], -1)


def raise_failures(members: list[Member], results: list) -> list:
    """The results, or the first failure, which names its report."""
    for member, result in zip(members, results):
        if isinstance(result, Exception):
            raise named(member.path, result)
    return results


def named(path: Path, exc: Exception) -> Exception:
    """A failure as raised on the worker; an AsysError that does not name the report gets its name."""
    if isinstance(exc, AsysError) and path.name not in str(exc):
        return AsysError(f"{path}: {exc}")
    return exc


def one_report(logical: str, table: EventTable) -> EventTable:
    """Metadata tables of several reports folded into one report's worth."""
    if table.rows <= 1:
        return table
    if logical == "analysis":
        folded = {"startTime": table["startTime"].min(), "stopTime": table["stopTime"].max()} \
            if "startTime" in table and "stopTime" in table else {}
        if "duration" in table:
            folded["duration"] = folded["stopTime"] - folded["startTime"] if folded else table["duration"].max()
        return EventTable({n: np.array([folded.get(n, table[n][0])]) for n in table})
    if logical == "session_start":
        return table.take(np.argsort(table["utcEpochNs"], kind="stable")[:1]) if "utcEpochNs" in table else table
    if logical in ENUM_TABLES and "id" in table:
        return table.take(np.sort(np.unique(table["id"], return_index=True)[1]))
    return table


def host_labels(paths: list[Path]) -> list[str]:
    """The ``Host`` of each report: the host of an asys per-node name (``..._node_<host>``),
    else the file name without suffix; the file names (then the paths) when these repeat."""
    for labels in ([node_host(p) for p in paths], [p.stem for p in paths], [str(p) for p in paths]):
        if len(set(labels)) == len(labels):
            return labels
    return [str(p) for p in paths]


def node_host(path: Path) -> str:
    found = NODE_SUFFIX.search(path.stem)
    return found.group(1) if found else path.stem


def merged_path(paths: list[Path]) -> Path:
    """The name outputs next to the reports take: ``<common name prefix>_merged<suffix>``."""
    if len(paths) == 1:
        return paths[0]
    prefix = os.path.commonprefix([p.stem for p in paths])
    prefix = NODE_SUFFIX.sub("", prefix).rstrip("_-. ").removesuffix("_node").rstrip("_-. ") or "reports"
    return paths[0].parent / f"{prefix}_merged{paths[0].suffix}"


def open_merged(paths: Sequence[str], executor, cache: bool = True, normalize: bool = False,
                shifts: Sequence[int] = (), skip_bad: bool = False) -> MergedReport:
    """Open every report on its owner; a report that fails stops the run with a one-line
    error naming it, unless ``skip_bad`` (then it is left out and listed in ``skipped``)."""
    paths = [os.path.abspath(p) for p in paths]  # workers may run elsewhere, in another folder
    shifts = list(shifts) + [shifts[-1] if shifts else 0] * max(0, len(paths) - len(shifts))
    owners = executor.owners(paths)
    calls = [(o, worker.describe, (p, cache)) for p, o in zip(paths, owners) if o is not None]
    described = iter(executor.run(calls))
    kept, skipped = [], []
    for path, owner, shift in zip(paths, owners, shifts):
        info = next(described) if owner is not None else AsysError(f"{path}: no such file on {executor.name}")
        try:
            if isinstance(info, Exception):
                raise named(Path(path), info)
            kept.append((Path(path), owner, info, clock_shift(info, normalize) + shift))
        except AsysError as exc:
            if not skip_bad:
                raise
            skipped.append(str(exc))
    if not kept:
        raise AsysError(f"none of the {len(paths)} reports could be read")
    placed = placements([k[2].device_span for k in kept], [k[3] for k in kept])
    members = [Member(p, o, info, at) for (p, o, info, _), at in zip(kept, placed)]
    return MergedReport(members, executor, cache, merged_path([m.path for m in members]), skipped)


def clock_shift(info: worker.ReportInfo, normalize: bool) -> int:
    """``--ts-normalize``: the shift that turns the report's timestamps into UTC ns."""
    if not normalize:
        return 0
    if info.utc_start is None or info.capture_start is None:
        raise AsysError(f"{info.path}: --ts-normalize needs the session start time (TARGET_INFO_SESSION_START_TIME) "
                        f"and the analysis range (ANALYSIS_DETAILS); the report lacks them")
    return info.utc_start - info.capture_start
