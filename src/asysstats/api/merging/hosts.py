"""Rules over a merged report set: which rules, their ``device`` option, the ``Host`` column.

A rule runs unchanged on a :class:`~asysstats.reading.merged.report.MergedReport`; around it:

* ``device=0/1`` names local device ids and selects them on every host (it is rewritten
  to the job-wide device numbers of every report that has such a device);
* where the result lists processes or devices (``PID``, ``Device ID``, ``Last Process``,
  ...), their job-wide ids are printed as the local ids again and a ``Host`` column (text)
  is inserted before the first of them — ``Last Host`` before ``Last ...`` columns. A row's
  host comes from its device when it has one, else from its process.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from asysstats.analysis.declarations import Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.api.merging.reduce import run_reduced
from asysstats.api.running import run_rule
from asysstats.core.errors import AsysError
from asysstats.core.result import TEXT, Column, Result

# The summary and PCCL rules (and the gap rules) whose output over merged reports equals
# their output over one report holding all the events (tests/test_many_reports.py).
MERGEABLE = (
    "hggc_ppu_kern_sum", "hggc_ppu_kern_gb_sum", "hggc_api_sum", "hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum",
    "osrt_sum", "hgtx_sum", "hgtx_kern_sum", "hgtx_ppu_proj_sum", "hggc_ppu_kern_category_sum",
    "pccl_desync_trace", "pccl_desync_summary", "pccl_op_sum", "pccl_stage_sum", "ppu_gaps", "ppu_time_util",
    "ppu_memory_bandwidth", "ppu_memory_bandwidth_trace", "ppu_idle_breakdown", "ppu_queue_length",
    "ppu_queue_length_trace", "ppu_launch_trace", "ppu_launch_stats", "ppu_short_kernel_histogram",
    "ppu_short_kernels", "ppu_kernel_sequences",
)
PID_COLUMNS = ("PID", "Pid", "Last Process")
DEVICE_COLUMNS = ("Device ID", "DevId", "Last Device")


def check_mergeable(rule: Rule) -> None:
    if rule.name not in MERGEABLE:
        raise AsysError(f"rule '{rule.name}' does not support --merge-reports (rules that do: {', '.join(MERGEABLE)})")


def run_merged(rule: Rule[Any], options: Options, inputs: Inputs) -> Result:
    """Run ``rule`` on the merged report of ``inputs``; print local ids with their host."""
    report = inputs.report
    devices = getattr(options, "device", None)  # the rules that take device=
    if devices is not None:
        options = replace(options, device=job_devices(report, devices))  # type: ignore[call-arg]  # its rule's field
    if rule.summary is not None:  # statistics reduced where each report lives
        return with_hosts(run_reduced(rule, options, inputs), report)
    return with_hosts(run_rule(rule, options, inputs), report)


def job_devices(report, local: tuple[int, ...]) -> tuple[int, ...]:
    """Job-wide numbers of the given local device ids on every report that has them."""
    return tuple(m.at.device_offset + d for m in report.members for d in local
                 if m.at.device_span is None or d < m.at.device_span)


def with_hosts(result: Result, report) -> Result:
    """``result`` with local process and device ids and a ``Host`` column (when it lists any)."""
    names = [c.name for c in result.columns]
    ids = [n for n in names if n in PID_COLUMNS + DEVICE_COLUMNS]
    if not ids:
        return result
    frame = dict(result.frame)
    host = np.full(result.rows, -1, np.int64)
    for name in sorted(ids, key=lambda n: n in DEVICE_COLUMNS):  # devices last: they win
        index, frame[name] = (report.ids.devices if name in DEVICE_COLUMNS else report.ids.pids)(frame[name])
        host = np.where(index >= 0, index, host)
    labels = result.strings.intern(report.labels)
    first = names.index(ids[0])
    column = Column("Last Host" if ids[0].startswith("Last ") else "Host", TEXT,
                    "Host (report) of the process and device of the row")
    frame[column.name] = np.where(host >= 0, labels[np.maximum(host, 0)], -1)
    columns = result.columns[:first] + (column,) + result.columns[first:]
    return replace(result, columns=columns, frame={c.name: frame[c.name] for c in columns})
