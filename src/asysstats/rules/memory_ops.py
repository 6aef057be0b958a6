"""HGGC PPU memory operation summaries: ``hggc_ppu_mem_time_sum`` and ``hggc_ppu_mem_size_sum``.

Operations are ``[HGGC memset]`` and ``[HGGC memcpy <copy kind label>]`` (labels from the
report's memcpy kind enumeration, e.g. ``[HGGC memcpy Host-to-Device]``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from asysstats.analysis.activity import kind_label_ids
from asysstats.analysis.declarations import ROWS, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.summary import Rows, Summary, keyed_frame, stat_columns
from asysstats.core.columns import TEXT, Column

OPERATION = Column("Operation", TEXT, "Name of the memory operation")


def operations(inputs: Inputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(operation label id, duration, bytes) of every memcpy and memset."""
    memcpy = inputs.table("memcpy", ("start", "end", "bytes", "copyKind"))
    memset = inputs.table("memset", ("start", "end", "bytes"))
    labels = np.concatenate([
        kind_label_ids(inputs, "memcpy_kinds", memcpy["copyKind"], "[HGGC memcpy {}]"),
        np.repeat(inputs.strings.intern(["[HGGC memset]"]), memset.rows)])
    durations = np.concatenate([memcpy["end"] - memcpy["start"], memset["end"] - memset["start"]])
    return labels, durations, np.concatenate([memcpy["bytes"], memset["bytes"]])


TIME_COLUMNS = stat_columns("executions of this operation", count="Count") + (OPERATION,)
SIZE_COLUMNS = stat_columns("sizes of this operation", count="Count", unit="bytes", percent=False) + (OPERATION,)


def time_rows(inputs: Inputs, options: Mapping[str, Any]) -> Rows:
    labels, durations, _ = operations(inputs)
    return Rows((labels,), durations)


def size_rows(inputs: Inputs, options: Mapping[str, Any]) -> Rows:
    labels, _, sizes = operations(inputs)
    return Rows((labels,), sizes)


TIME_SUMMARY = Summary(time_rows, keyed_frame(TIME_COLUMNS, OPERATION.name))
SIZE_SUMMARY = Summary(size_rows, keyed_frame(SIZE_COLUMNS, OPERATION.name))


MEM_TIME_SUM = Rule(
    name="hggc_ppu_mem_time_sum",
    title="HGGC PPU Memory Time Summary",
    help="Time of HGGC PPU memory operations (memset, memcpy by copy kind), in descending order of total "
         "time. 'Time (%)' is the share of the total of all operations in the table.",
    columns=TIME_COLUMNS,
    compute=TIME_SUMMARY.compute,
    reads=("memcpy", "memset"),
    options=(ROWS,),
    requires=("memcpy", "memset"),
    share="Time (%)",
)

MEM_SIZE_SUM = Rule(
    name="hggc_ppu_mem_size_sum",
    title="HGGC PPU Memory Size Summary",
    help="Bytes moved or set by HGGC PPU memory operations (memset, memcpy by copy kind), in descending "
         "order of total size.",
    columns=SIZE_COLUMNS,
    compute=SIZE_SUMMARY.compute,
    reads=("memcpy", "memset"),
    options=(ROWS,),
    requires=("memcpy", "memset"),
    share="Total (bytes)",
)

RULES = [MEM_TIME_SUM, MEM_SIZE_SUM]
