"""The ``asys analyze`` rule of frequent kernel sequences (HTA's frequent-pattern search, issue 30):
``ppu_kernel_sequences``, the most frequent runs of ``length`` consecutive kernels on a stream.

The kernels of each stream (process, device, stream) in start order are cut into every window of
``length`` consecutive kernels (windows overlap: a run of 4 equal kernels holds 2 windows of 3). A
window's names are folded into one integer key, a pair of (key so far, next name code) at a time,
renumbered densely whenever the next fold could overflow int64; the keys are then counted. Time and
memory are linear in the kernels (a few int64 columns), whatever the length (docs/decisions.md D40).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.analysis.declarations import BASE, DEVICE, MANGLED, ROWS, Option, Options, Rule, merged_reads, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import KERNEL_NAME_READS
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import dense_group_ids, id_time_order
from asysstats.core.result import INT, TEXT, Column, Frame
from asysstats.rulebook.kernels import kernel_name_key, on_devices

LENGTH = Option("length", "int", "Number of consecutive kernels in a sequence.", 3, minimum=2, maximum=64)
TOP = Option("top", "int", "Number of sequences printed, most frequent first.", 10, minimum=1)
SEPARATOR = " | "  # between the kernel names of a sequence
FOLD_LIMIT = 1 << 62  # keys times the name count stay under this (int64)
COLUMNS = ("start", "end", "deviceId", "streamId", "globalPid")


@dataclass(frozen=True)
class SequenceOptions(Options):
    length: int = LENGTH.field()
    top: int = TOP.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()
    device: tuple[int, ...] | None = DEVICE.field()
    rows: int | None = ROWS.field()


def window_keys(codes: np.ndarray, first: np.ndarray, length: int, names: int) -> np.ndarray:
    """A key per window (the ``length`` codes from each ``first``), equal exactly when the codes are."""
    key = codes[first].astype(np.int64)
    bound = names
    for j in range(1, length):
        if bound * names >= FOLD_LIMIT:
            uniq, key = distinct(key)
            bound = len(uniq)
        key = key * names + codes[first + j]
        bound *= names
    return key


SEQUENCE_COLUMNS = (
    Column("Count", INT, "Occurrences of the sequence (windows of consecutive kernels on one stream)"),
    Column("Total Time (ns)", INT, "Sum over the occurrences of the durations of their kernels"),
    Column("Avg (ns)", INT, "Total time per occurrence"),
    Column("Streams", INT, "Number of streams it occurs on"),
    Column("First Start (ns)", INT, "Start of its first occurrence"),
    Column("Sequence", TEXT, f"The kernel names in launch order, separated by '{SEPARATOR.strip()}'"),
)


def ppu_kernel_sequences(inputs: Inputs, options: SequenceOptions) -> Frame:
    kernels = on_devices(inputs.table("kernels", COLUMNS + (("mangledName",) if options.mangled else ())
                                      + ("demangledName",)), options.device)
    names = kernel_name_key(inputs, kernels, name_mode(options))
    stream, stream_keys = dense_group_ids([kernels["globalPid"], kernels["deviceId"], kernels["streamId"]])
    order = id_time_order(stream, len(stream_keys[0]), kernels["start"], kernels["end"])
    stream, codes = stream[order], names.codes[order].astype(np.int64)
    start, end = kernels["start"][order], kernels["end"][order]
    n, length = len(order), options.length
    first = np.flatnonzero(stream[:n - length + 1] == stream[length - 1:]) if n >= length else np.empty(0, np.int64)
    if len(first) == 0:
        return {c.name: np.empty(0, np.int64) for c in SEQUENCE_COLUMNS}
    _, sequence = distinct(window_keys(codes, first, length, max(len(names.values), 1)))
    count = np.bincount(sequence).astype(np.int64)
    elapsed = np.concatenate([[0], np.cumsum(end - start)])
    total = np.bincount(sequence, weights=elapsed[first + length] - elapsed[first], minlength=len(count))
    earliest = np.full(len(count), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(earliest, sequence, start[first])
    at = np.empty(len(count), np.int64)
    at[sequence] = first  # any occurrence: all of a sequence's windows hold the same names
    stream_count = int(stream[-1]) + 1  # dense ids, sorted
    pairs, _ = distinct(sequence * stream_count + stream[first])  # the distinct (sequence, stream) pairs
    streams = np.bincount(pairs // stream_count, minlength=len(count))
    ranked = np.lexsort((earliest, -total, -count))[:options.top]
    texts = [SEPARATOR.join(name or "" for name in inputs.strings.lookup(names.values[codes[at[s]:at[s] + length]]))
             for s in ranked.tolist()]
    return {"Count": count[ranked], "Total Time (ns)": total[ranked].astype(np.int64),
            "Avg (ns)": (total[ranked] / np.maximum(count[ranked], 1)), "Streams": streams[ranked],
            "First Start (ns)": earliest[ranked], "Sequence": inputs.strings.intern(texts)}


PPU_KERNEL_SEQUENCES = Rule(
    name="ppu_kernel_sequences",
    title="PPU Kernel Sequences",
    help="The most frequent sequences of 'length' consecutive kernels on one stream (process, device, stream; "
         "kernels in start order), counted over every window of that many kernels (windows overlap), with the "
         "total of their kernels' durations; the 'top' most frequent, ties by more total time, then earliest.",
    columns=SEQUENCE_COLUMNS,
    compute=ppu_kernel_sequences,
    reads=merged_reads({"kernels": COLUMNS}, KERNEL_NAME_READS),
    options=SequenceOptions,
    command="analyze",
)

RULES = [PPU_KERNEL_SEQUENCES]
