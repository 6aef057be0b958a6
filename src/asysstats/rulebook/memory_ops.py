"""HGGC PPU memory operation summaries: ``hggc_ppu_mem_time_sum`` and ``hggc_ppu_mem_size_sum``.

Operations are ``[HGGC memset]`` and ``[HGGC memcpy <copy kind label>]`` (labels from the
report's memcpy kind enumeration, e.g. ``[HGGC memcpy Host-to-Device]``); on an Nsight export
in CUDA's words, ``[CUDA memset]`` and ``[CUDA memcpy Host-to-Device]``.
"""

from __future__ import annotations

import numpy as np

from asysstats.analysis.activity import kind_label_ids
from asysstats.analysis.declarations import Rows, RowsOptions, Rule, Summary
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import KIND_READS
from asysstats.analysis.summary import StatColumns, keyed_frame
from asysstats.core.result import TEXT, Column
from asysstats.reading.schema import NSYS

OPERATION = Column("Operation", TEXT, "Name of the memory operation")
API_WORDS = {NSYS: "CUDA"}  # the API named in the labels, by report dialect (else HGGC)
READS = {"memcpy": ("start", "end", "bytes", "copyKind"), "memset": ("start", "end", "bytes"),
         "memcpy_kinds": KIND_READS["memcpy_kinds"]}


def operations(inputs: Inputs, api: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(operation label id, duration, bytes) of every memcpy and memset, the labels naming
    ``api`` (default: the report's, :data:`API_WORDS`)."""
    memcpy, memset = inputs.table("memcpy"), inputs.table("memset")
    api = api or API_WORDS.get(inputs.dialect, "HGGC")
    labels = np.concatenate([
        kind_label_ids(inputs, "memcpy_kinds", memcpy["copyKind"], f"[{api} memcpy {{}}]"),
        np.repeat(inputs.strings.intern([f"[{api} memset]"]), memset.rows)])
    durations = np.concatenate([memcpy["end"] - memcpy["start"], memset["end"] - memset["start"]])
    return labels, durations, np.concatenate([memcpy["bytes"], memset["bytes"]])


TIME_STATS = StatColumns.of("executions of this operation", count="Count")
SIZE_STATS = StatColumns.of("sizes of this operation", count="Count", unit="bytes", percent=False)


def time_rows(inputs: Inputs, options: RowsOptions) -> Rows:
    labels, durations, _ = operations(inputs)
    return Rows((labels,), durations)


def size_rows(inputs: Inputs, options: RowsOptions) -> Rows:
    labels, _, sizes = operations(inputs)
    return Rows((labels,), sizes)


TIME_SUMMARY = Summary(time_rows, keyed_frame(TIME_STATS, OPERATION.name))
SIZE_SUMMARY = Summary(size_rows, keyed_frame(SIZE_STATS, OPERATION.name))


MEM_TIME_SUM = Rule(
    name="hggc_ppu_mem_time_sum",
    title="HGGC PPU Memory Time Summary",
    help="Time of HGGC PPU memory operations (memset, memcpy by copy kind), in descending order of total "
         "time. 'Time (%)' is the share of the total of all operations in the table.",
    columns=TIME_STATS.columns + (OPERATION,),
    compute=TIME_SUMMARY.compute,
    reads=READS,
    options=RowsOptions,
    requires=("memcpy", "memset"),
    share="Time (%)",
)

MEM_SIZE_SUM = Rule(
    name="hggc_ppu_mem_size_sum",
    title="HGGC PPU Memory Size Summary",
    help="Bytes moved or set by HGGC PPU memory operations (memset, memcpy by copy kind), in descending "
         "order of total size.",
    columns=SIZE_STATS.columns + (OPERATION,),
    compute=SIZE_SUMMARY.compute,
    reads=READS,
    options=RowsOptions,
    requires=("memcpy", "memset"),
    share="Total (bytes)",
)

RULES = [MEM_TIME_SUM, MEM_SIZE_SUM]
