"""The logical tables of a Kineto trace, built vectorised from the collected columns.

* ``start`` = the event's ``ts`` and ``end`` = ``start + dur``, each converted once from
  the exact decimal microseconds to nanoseconds (so a duration is exactly the trace's
  ``dur``); a negative ``dur`` counts as 0. Rows are sorted by start.
* ``globalTid`` = ``pid << 24 | tid`` (each masked to 24 bits); a device activity's
  ``globalPid`` is the process of its launching API call (same ``correlation``), else
  the trace's main process.
* Memcpy/memset kinds come from the event name (``Memcpy HtoD (Pageable -> Device)``) in
  the numbering of :data:`MEMCPY_KIND_LABELS` / :data:`MEM_KIND_LABELS`; a memcpy without
  ``bytes`` (ROCm) takes the ``bytes``/``size`` argument of its launching call.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from asysstats.core.strings import StringPool
from asysstats.reading.kineto.collect import COLLECTIVE_ARGS, Collector, as_int
from asysstats.reading.kineto.nccl import NCCL_DOMAIN, collective_ranges, collective_text

Table = dict[str, np.ndarray]
PUSHPOP = 59
COPY_KINDS = {"HtoD": 1, "DtoH": 2, "HtoA": 3, "AtoH": 4, "AtoA": 5, "AtoD": 6, "DtoA": 7, "DtoD": 8,
              "HtoH": 9, "PtoP": 10}
MEM_KINDS = {"Pageable": 1, "Pinned": 2, "Device": 3, "Array": 4, "Managed": 5}  # CUPTI numbering
MEMCPY_NAME = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")
MEMSET_NAME = re.compile(r"Memset\s*\((\w+)\)")


def global_tid(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return ((pid & 0xFFFFFF) << 24) | (tid & 0xFFFFFF)


def timed(cols: Table) -> Table:
    """Replace ``dur`` by ``end`` and sort the rows by (start, end), in place."""
    cols["end"] = cols["start"] + np.maximum(cols.pop("dur"), 0)
    order = np.lexsort((cols["end"], cols["start"]))
    for name in cols:  # one column at a time, so that only one extra copy is alive
        cols[name] = cols[name][order]
    return cols


def first_match(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of the first ``keys`` equal to each non-negative ``wanted`` value, -1 when none."""
    out = np.full(len(wanted), -1, np.int64)
    valid = np.flatnonzero(keys >= 0)
    if len(valid) == 0 or len(wanted) == 0:
        return out
    uniq, first = np.unique(keys[valid], return_index=True)
    slot = np.minimum(np.searchsorted(uniq, wanted), len(uniq) - 1)
    hit = (wanted >= 0) & (uniq[slot] == wanted)
    out[hit] = valid[first[slot[hit]]]
    return out


def distributed_info(metadata: dict[str, Any]) -> dict[str, Any]:
    """The top-level ``distributedInfo`` member (rank, world_size, pg_config), else {}."""
    info = metadata.get("distributedInfo")
    return info if isinstance(info, dict) else {}


def main_pid(runtime: Table, ranges: Table) -> int:
    """The profiled process: the most frequent pid of the API calls, else of the CPU ranges."""
    for pids in (runtime["pid"], ranges["pid"]):
        if len(pids):
            values, counts = np.unique(pids, return_counts=True)
            return int(values[np.argmax(counts)])
    return 0


def name_codes(names: list[str], index: np.ndarray, pattern: re.Pattern, group: int, kinds: dict[str, int],
               unmatched: int) -> np.ndarray:
    """A kind parsed from each row's name (one regex search per distinct name)."""
    uniq, inverse = np.unique(index, return_inverse=True)
    codes = np.full(len(uniq), unmatched, np.int64)
    for k, i in enumerate(uniq.tolist()):
        match = pattern.search(names[i])
        if match and match.group(group):
            codes[k] = kinds.get(match.group(group), 0)
    return codes[inverse.reshape(-1)]


def build_tables(c: Collector, metadata: dict[str, Any], pool: StringPool) -> tuple[dict[str, Table], int]:
    """The event tables of the trace (kernels, memcpy, memset, runtime, hgtx) and the number
    of device activities whose launching API call is absent from the trace."""
    names = list(c.names)
    name_ids = pool.intern(names) if names else np.empty(0, np.int64)
    runtime, ranges = timed(c.runtime.numpy()), timed(c.ranges.numpy())
    default_pid = main_pid(runtime, ranges)
    tables: dict[str, Table] = {}
    unlinked = 0
    for kind, columns in (("kernels", c.kernels), ("memcpy", c.memcpy), ("memset", c.memset)):
        cols = timed(columns.numpy())
        launch = first_match(runtime["correlationId"], cols["correlationId"])
        unlinked += int(np.count_nonzero((launch < 0) & (cols["correlationId"] >= 0)))
        pids = np.full(len(launch), default_pid, np.int64)
        pids[launch >= 0] = runtime["pid"][launch[launch >= 0]]
        tables[kind] = {**cols, "globalPid": (pids & 0xFFFFFF) << 24, "launch": launch}
    finish_device_tables(tables, names, name_ids, runtime)
    rank = as_int(distributed_info(metadata).get("rank"))
    texts = [collective_text(key[0], dict(zip(COLLECTIVE_ARGS, key[1:])), rank)
             for key in map(json.loads, c.collectives)]
    nccl = collective_ranges(tables["kernels"], runtime, texts, pool)
    tables["runtime"] = {"start": runtime["start"], "end": runtime["end"], "nameId": name_ids[runtime["name"]],
                         "globalTid": global_tid(runtime["pid"], runtime["tid"]),
                         "correlationId": runtime["correlationId"]}
    tables["hgtx"] = hgtx_table(ranges, name_ids, nccl)
    return tables, unlinked


def hgtx_table(ranges: Table, name_ids: np.ndarray, nccl: Table) -> Table:
    """CPU ops and annotations as push/pop ranges (domain 0), then the NCCL-domain rows."""
    n, m = len(ranges["start"]), len(nccl["start"])
    cols = {"start": np.concatenate([ranges["start"], nccl["start"]]),
            "end": np.concatenate([ranges["end"], nccl["end"]]),
            "eventType": np.concatenate([np.full(n, PUSHPOP, np.int64), nccl["eventType"]]),
            "globalTid": global_tid(np.concatenate([ranges["pid"], nccl["pid"]]),
                                    np.concatenate([ranges["tid"], nccl["tid"]])),
            "domainId": np.concatenate([np.zeros(n, np.int64), np.full(m, NCCL_DOMAIN, np.int64)]),
            "text": np.concatenate([name_ids[ranges["name"]], nccl["text"]])}
    order = np.lexsort((-cols["end"], cols["start"]))
    cols = {k: v[order] for k, v in cols.items()}
    none = np.full(n + m, -1, np.int64)
    return {**cols, "rangeId": none, "category": none, "endGlobalTid": none, "textId": none}


def finish_device_tables(tables: dict[str, Table], names: list[str], name_ids: np.ndarray, runtime: Table) -> None:
    """Memory kinds, bytes and name ids of the kernel, memcpy and memset tables (in place)."""
    memcpy, memset = tables["memcpy"], tables["memset"]
    memcpy["copyKind"] = name_codes(names, memcpy["name"], MEMCPY_NAME, 1, COPY_KINDS, 0)
    memcpy["srcKind"] = name_codes(names, memcpy["name"], MEMCPY_NAME, 2, MEM_KINDS, -1)
    memcpy["dstKind"] = name_codes(names, memcpy["name"], MEMCPY_NAME, 3, MEM_KINDS, -1)
    memset["memKind"] = name_codes(names, memset["name"], MEMSET_NAME, 1, MEM_KINDS, -1)
    linked = memcpy["launch"] >= 0
    call_bytes = np.full(len(linked), -1, np.int64)
    call_bytes[linked] = runtime["bytes"][memcpy["launch"][linked]]
    memcpy["bytes"] = np.maximum(np.where(memcpy["bytes"] >= 0, memcpy["bytes"], call_bytes), 0)
    memset["bytes"] = np.maximum(memset["bytes"], 0)
    for cols in tables.values():
        cols["name"] = name_ids[cols["name"]]
    kernels = tables["kernels"]
    kernels.update(demangledName=kernels["name"], shortName=kernels["name"], mangledName=kernels["name"],
                   dynamicSharedMemory=np.zeros(len(kernels["name"]), np.int64))
