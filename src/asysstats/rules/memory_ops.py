"""HGGC PPU memory operation summaries: ``hggc_ppu_mem_time_sum`` and ``hggc_ppu_mem_size_sum``.

Operations are ``[HGGC memset]`` and ``[HGGC memcpy <copy kind label>]`` (labels from the
report's memcpy kind enumeration, e.g. ``[HGGC memcpy Host-to-Device]``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from asysstats.engine import Inputs
from asysstats.registry import ROWS, TEXT, Column, Rule
from asysstats.rules.activity import kind_label_ids
from asysstats.rules.summary import stat_cells, stat_columns, summarize

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


def operation_summary(inputs: Inputs, values: np.ndarray, labels: np.ndarray, columns: tuple[Column, ...]) -> dict:
    groups, stats, order = summarize(inputs.strings, [labels], values, 0)
    frame = stat_cells(columns[:-1], stats, order)
    frame[OPERATION.name] = groups.keys[0][order]
    return frame


TIME_COLUMNS = stat_columns("executions of this operation", count="Count") + (OPERATION,)
SIZE_COLUMNS = stat_columns("sizes of this operation", count="Count", unit="bytes", percent=False) + (OPERATION,)


def mem_time_sum(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    labels, durations, _ = operations(inputs)
    return operation_summary(inputs, durations, labels, TIME_COLUMNS)


def mem_size_sum(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    labels, _, sizes = operations(inputs)
    return operation_summary(inputs, sizes, labels, SIZE_COLUMNS)


MEM_TIME_SUM = Rule(
    name="hggc_ppu_mem_time_sum",
    title="HGGC PPU Memory Time Summary",
    help="Time of HGGC PPU memory operations (memset, memcpy by copy kind), in descending order of total "
         "time. 'Time (%)' is the share of the total of all operations in the table.",
    columns=TIME_COLUMNS,
    compute=mem_time_sum,
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
    compute=mem_size_sum,
    reads=("memcpy", "memset"),
    options=(ROWS,),
    requires=("memcpy", "memset"),
    share="Total (bytes)",
)

RULES = [MEM_TIME_SUM, MEM_SIZE_SUM]
