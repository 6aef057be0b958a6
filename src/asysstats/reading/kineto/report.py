"""PyTorch profiler (Kineto) Chrome-trace JSON as a report
(:class:`~asysstats.reading.protocol.ReportSource`), over tables built in one streaming pass
at open, or read back from the columnar cache (:mod:`asysstats.reading.kineto.cache`).

Field mapping, rounding and what is counted: docs/kineto.md.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from asysstats.core.errors import AsysError
from asysstats.core.input_files import check_input_file
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable
from asysstats.reading.cache import ColumnCache
from asysstats.reading.kineto import cache as kineto_cache
from asysstats.reading.kineto.collect import Collector, as_int
from asysstats.reading.kineto.parse import TraceStream
from asysstats.reading.kineto.tables import Table, build_tables, distributed_info, global_tid
from asysstats.reading.schema import TABLES, derive_ids, missing_data

KINETO = "kineto"
EPOCH_US = 10**15  # a trace whose timestamps exceed this (2001-09) is in Unix-epoch microseconds
DEVICE_OPTION = "torch.profiler.profile(activities=[ProfilerActivity.CUDA])"
COLLECT = {
    "kernels": DEVICE_OPTION, "memcpy": DEVICE_OPTION, "memset": DEVICE_OPTION, "runtime": DEVICE_OPTION,
    "devices": DEVICE_OPTION, "hgtx": "activities=[ProfilerActivity.CPU], record_shapes=True",
    "memory_usage": "profile_memory=True; not read from PyTorch profiler traces yet",
    "callchains": "with_stack=True; not read from PyTorch profiler traces yet",
}


class KinetoReport:
    """A Kineto trace (``*.pt.trace.json`` or ``.json.gz``), parsed once when opened (unless
    cached: ``cache=False`` neither reads nor writes the cache)."""

    dialect = KINETO
    hgtx_end: int | None = None  # ranges without an end stop at the trace's last timestamp

    def __init__(self, path: str | os.PathLike[str], cache: bool = True) -> None:
        self.path = Path(path)
        check_input_file(self.path)
        self.strings = StringPool()
        column_cache = ColumnCache(self.path) if cache else None
        cached = kineto_cache.load(column_cache, self.strings) if column_cache is not None else None
        if cached is None:
            self.strings = StringPool()  # drop any strings a partial cache entry interned
            tables, self.metadata, unlinked = self._parse()
            if column_cache is not None:
                kineto_cache.store(column_cache, tables, self.metadata, unlinked, self.strings)
        else:
            tables, self.metadata, unlinked = cached
        self._tables = tables
        self.unlinked = unlinked  # device activities without their launch call in the trace
        self._cache: dict[tuple[str, tuple[str, ...]], EventTable] = {}
        if unlinked:
            print(f"{self.path.name}: note: {unlinked} GPU activities have no launching API call in the trace "
                  f"(launched before the profiling window, or dropped); they are kept", file=sys.stderr)

    def _parse(self) -> tuple[dict[str, Table], dict[str, Any], int]:
        """Tables, top-level members and unlinked count, from one streaming pass over the trace."""
        stream, collector = TraceStream(self.path), Collector()
        count = 0
        try:
            for count, event in enumerate(stream.events(), 1):
                if isinstance(event, dict):
                    collector.add(event)
        except (TypeError, ValueError, ArithmeticError, AttributeError) as exc:
            raise AsysError(f"{self.path.name}: trace event {count}: unexpected value ({exc})") from exc
        self.metadata = stream.metadata
        tables, unlinked = build_tables(collector, self.metadata, self.strings)
        tables.update(self._metadata_tables(collector, tables))
        return {k: v for k, v in tables.items() if self._present(k, v, tables)}, self.metadata, unlinked

    def __repr__(self) -> str:
        return f"KinetoReport({str(self.path)!r})"

    def close(self) -> None:
        self._tables.clear()
        self._cache.clear()

    @property
    def rank(self) -> int | None:
        """``distributedInfo.rank`` (None for a single-process trace)."""
        value = distributed_info(self.metadata).get("rank")
        return value if isinstance(value, int) else None

    @property
    def world_size(self) -> int | None:
        value = distributed_info(self.metadata).get("world_size")
        return value if isinstance(value, int) else None

    def derived(self, name: str, columns: Sequence[str], text: Sequence[str],
                build: Callable[[], Mapping[str, np.ndarray]]) -> EventTable:
        """A table computed from the report's tables (not cached: see ``SqliteReport.derived``)."""
        return EventTable(build())

    def transient(self) -> contextlib.AbstractContextManager[None]:
        """Loads inside the block are kept (see ``SqliteReport.transient``): the trace's tables stay in memory anyway."""
        return contextlib.nullcontext()

    def has(self, logical: str) -> bool:
        return logical in self._tables

    def physical_tables(self, logical: str) -> list[str]:
        return [f"{KINETO}:{logical}"] if self.has(logical) else []

    def missing_message(self, logical: str) -> str:
        spec = TABLES[logical]
        how = COLLECT.get(logical)
        hint = f"collect with {how}" if how else "not recorded by the PyTorch profiler"
        return f"{self.path.name} does not contain {spec.what} ({hint})"

    def load(self, logical: str, columns: Sequence[str] = ()) -> EventTable:
        """The logical table with the given columns (all when empty); raises MissingData."""
        spec = TABLES[logical]
        cols = tuple(columns) or tuple(c.name for c in spec.columns)
        key = (logical, cols)
        if key not in self._cache:
            if not self.has(logical):
                raise missing_data(self, logical)
            full = self._tables[logical]
            rows = len(next(iter(full.values())))
            out = {}
            for name in cols:
                col = spec.column(name)
                dtype = np.float64 if col.kind == "float" else np.int64
                out[name] = full[name].astype(dtype, copy=False) if name in full else np.full(rows, col.fill, dtype)
            self._cache[key] = derive_ids(EventTable(out))
        return self._cache[key]

    def _present(self, logical: str, table: Table, tables: dict[str, Table]) -> bool:
        """Device tables exist when the trace has any device activity or API call (CUDA
        activity was on), other tables when they have rows."""
        if logical in ("kernels", "memcpy", "memset", "runtime"):
            return any(len(tables[k]["start"]) for k in ("kernels", "memcpy", "memset", "runtime"))
        return len(next(iter(table.values()))) > 0

    def _metadata_tables(self, c: Collector, tables: dict[str, Table]) -> dict[str, Table]:
        intern = self.strings.intern
        props = self.metadata.get("deviceProperties")
        devices = [d for d in props if isinstance(d, dict)] if isinstance(props, list) else []
        pids = np.asarray(list(c.process_names), np.int64)
        threads = np.asarray(list(c.thread_names), np.int64).reshape(-1, 2)
        starts = [t["start"] for t in tables.values() if len(t["start"])]
        ends = [t["end"] for t in tables.values() if len(t["end"])]
        lo, hi = (int(min(s.min() for s in starts)), int(max(e.max() for e in ends))) if starts else (0, 0)
        out: dict[str, Table] = {
            "devices": {"id": device_ids(devices, tables),
                        "name": intern(str(d.get("name", "")) for d in devices),
                        **{col: np.asarray([as_int(d.get(key)) for d in devices], np.int64) for col, key in (
                            ("computeMajor", "computeMajor"), ("computeMinor", "computeMinor"),
                            ("cuCount", "numSms"), ("totalMemory", "totalGlobalMem"))}},
            "processes": {"globalPid": (pids & 0xFFFFFF) << 24, "pid": pids, "name": intern(c.process_names.values())},
            "threads": {"globalTid": global_tid(threads[:, 0], threads[:, 1]),
                        "nameId": intern(c.thread_names.values()), "priority": np.zeros(len(threads), np.int64)},
            "analysis": {"startTime": np.asarray([lo] if starts else [], np.int64),
                         "stopTime": np.asarray([hi] if starts else [], np.int64),
                         "duration": np.asarray([hi - lo] if starts else [], np.int64)},
        }
        epoch = session_epoch(self.metadata, lo)
        out["session_start"] = {"utcEpochNs": np.asarray([] if epoch is None else [epoch], np.int64)}
        return out


def device_ids(devices: list[dict[str, Any]], tables: dict[str, Table]) -> np.ndarray:
    """The ids of the listed devices. One device listed while the device activity runs on one
    other id (a ROCm trace under HIP_VISIBLE_DEVICES lists the logical device 0 and runs on the
    physical device 2) is that device: its name and peaks belong to the activity."""
    listed = np.asarray([as_int(d.get("id")) for d in devices], np.int64)
    used = np.unique(np.concatenate([tables[k]["deviceId"] for k in ("kernels", "memcpy", "memset")
                                     if k in tables and "deviceId" in tables[k]] or [np.empty(0, np.int64)]))
    if len(listed) == 1 and len(used) == 1 and used[0] >= 0 and used[0] != listed[0]:
        return used.astype(np.int64)
    return listed


def session_epoch(metadata: dict[str, Any], first_ns: int) -> int | None:
    """Unix-epoch ns of timestamp 0: ``baseTimeNanoseconds`` when given (newer Kineto writes
    ``ts`` relative to it), 0 for traces already in epoch microseconds, else unknown."""
    base = metadata.get("baseTimeNanoseconds")
    if isinstance(base, int):
        return base
    return 0 if first_ns >= EPOCH_US * 1000 else None
