"""Job-wide identities in a merged report set, and the clock shift of each report.

Every report of a distributed job numbers its own processes, threads and devices, so the
same pid or device 0 appears in many reports. When reports are merged, each loaded
column is rewritten so that identities stay distinct and rules need no change:

* devices: report ``k``'s device ``d`` becomes ``offset[k] + d``, where the offsets count
  the devices of the reports before it (job-wide device numbers, 0, 1, 2, ... in report
  order); a device id outside the report's span is an error;
* processes: the derived ``pid`` (and ``PROCESSES.pid``) becomes ``k << 24 | pid``
  (a pid has 24 bits in ``globalTid``), so ``pid`` keys stay below 2**32;
* threads: ``globalTid``, ``globalPid``, ``endGlobalTid`` keep their low 48 bits (pid, tid)
  and fold ``k`` into the bits above (``(high * count + k) << 48``);
* per-report ids that tables join on (``callchainId``, ``metricId``) become ``k << 32 | id``;
* timestamps (``start``, ``end``, ``startTime``, ``stopTime``) move by the report's shift.

With one report (``k = 0``, ``count = 1``, offset 0) every rewrite is the identity.
Negative values (missing cells: -1 fills, ``NA``) are never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.core.errors import AsysError
from asysstats.core.tables import NA

PID_BITS = 24
LOW_BITS = 48
MAX_REPORTS = 1 << 8  # pid keys (k << 24 | pid) stay below 2**32, as compute.keys.pair_key needs
TIME_COLUMNS = frozenset({"start", "end", "startTime", "stopTime"})
THREAD_COLUMNS = frozenset({"globalTid", "globalPid", "endGlobalTid"})
LOCAL_ID_COLUMNS = frozenset({("runtime", "callchainId"), ("osrt", "callchainId"), ("callchains", "id"),
                              ("metrics", "metricId"), ("metric_info", "metricId")})


@dataclass(frozen=True)
class Placement:
    """Where one report sits in the merged set."""

    index: int = 0
    count: int = 1
    device_offset: int = 0
    device_span: int | None = None  # devices of the report; ids at or above it are an error when merging
    shift: int = 0  # ns added to every timestamp


def is_device_column(table: str, column: str) -> bool:
    return column == "deviceId" or (table == "devices" and column == "id")


def place(table: str, column: str, values: np.ndarray, at: Placement, where: str) -> np.ndarray:
    """``values`` of one loaded column rewritten for the merged set (see the module doc)."""
    if values.dtype.kind != "i":
        return values
    present = values >= 0
    if column in TIME_COLUMNS:
        return np.where(present, values + at.shift, values) if at.shift else values
    if is_device_column(table, column):
        if at.device_span is not None and present.any() and int(values[present].max()) >= at.device_span:
            raise AsysError(f"{where}: table {table} has device id {int(values[present].max())}, beyond the "
                            f"{at.device_span} devices of the report; cannot merge it")
        return np.where(present, values + at.device_offset, values) if at.device_offset else values
    if at.index == 0 and at.count == 1:
        return values
    if column == "pid":
        return np.where(present, (at.index << PID_BITS) | values, values)
    if column in THREAD_COLUMNS:
        folded = ((values >> LOW_BITS) * at.count + at.index) << LOW_BITS | (values & ((1 << LOW_BITS) - 1))
        return np.where(present, folded, values)
    if (table, column) in LOCAL_ID_COLUMNS:
        return np.where(present, (at.index << 32) | values, values)
    return values


def placements(spans: list[int], shifts: list[int]) -> list[Placement]:
    """One placement per report, devices numbered job-wide in report order."""
    if len(spans) > MAX_REPORTS:
        raise AsysError(f"--merge-reports: {len(spans)} reports; at most {MAX_REPORTS} can be merged at once")
    offsets = np.concatenate(([0], np.cumsum(spans)[:-1])).astype(int)
    count = len(spans)
    return [Placement(k, count, int(offsets[k]), spans[k] if count > 1 else None, shifts[k]) for k in range(count)]


@dataclass(frozen=True)
class JobIds:
    """Decodes job-wide ids back to (report index, local id) for printing."""

    device_offsets: np.ndarray  # first job-wide device number of each report

    def devices(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(report index, local device id); -1 and ``values`` unchanged where missing."""
        values = np.asarray(values, np.int64)
        present = values >= 0
        index = np.searchsorted(self.device_offsets, values, side="right") - 1
        return np.where(present, index, -1), np.where(present, values - self.device_offsets[np.maximum(index, 0)],
                                                      values)

    @staticmethod
    def pids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(report index, local pid); -1 and ``values`` unchanged where missing (``NA``)."""
        values = np.asarray(values, np.int64)
        present = (values >= 0) & (values != NA)
        return (np.where(present, values >> PID_BITS, -1),
                np.where(present, values & ((1 << PID_BITS) - 1), values))
