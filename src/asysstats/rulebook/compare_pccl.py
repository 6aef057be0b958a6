"""``pccl_desync_summary_compare``: the ``pccl_desync_summary`` tables of two reports, PCCL
kernels matched by name (in the chosen name mode)."""

from __future__ import annotations

from dataclasses import dataclass

from asysstats.analysis.comparison import (
    BASE,
    DEVICE_NAME,
    MATCHED_ONLY,
    TARGET,
    comparison_rule,
    pair,
    side,
    single_rule_frame,
)
from asysstats.analysis.declarations import BASE as BASE_NAME
from asysstats.analysis.declarations import DEVICE, HGTX_NAME, MANGLED, ROWS, Options
from asysstats.core.result import PAIR_INT, PAIR_PERCENT, PAIR_TEXT
from asysstats.rulebook.pccl_desync import DESYNC_SUMMARY


@dataclass(frozen=True)
class CompareOptions(Options):
    rows: int | None = ROWS.field()
    hgtx_name: bool = HGTX_NAME.field()
    base: bool = BASE_NAME.field()
    mangled: bool = MANGLED.field()
    device: tuple[int, ...] | None = DEVICE.field()
    matched_only: bool = MATCHED_ONLY.field()

CELLS = (
    pair("Device Name", DEVICE_NAME, PAIR_TEXT, "PPU device name"),
    pair("Time (%)", "Time (%)", PAIR_PERCENT, "Percentage of 'Total Duration'"),
    pair("Count", "Count", PAIR_INT, "Number of communications of this PCCL kernel"),
    pair("Desync P90 (%)", "Desync P90 (%)", PAIR_PERCENT, "90th percentile desynchronisation rate"),
    pair("Desync Avg (%)", "Desync Avg (%)", PAIR_PERCENT, "Average desynchronisation rate"),
    pair("Total Duration (ns)", "Total Duration (ns)", PAIR_INT, "Total elapsed duration of all communications"),
    pair("Total Overlap (ns)", "Total Overlap (ns)", PAIR_INT, "Total overlap duration of all communications"),
    side("Base Kernel", "Kernel Name", BASE, "Name of the kernel in the base report"),
    side("Target Kernel", "Kernel Name", TARGET, "Name of the kernel in the target report"),
)

DESYNC_SUMMARY_COMPARE = comparison_rule(
    name="pccl_desync_summary_compare",
    title="PCCL Desynchronization Summary Comparison",
    help="The pccl_desync_summary tables of the base and target reports, PCCL kernels matched by name; "
         "sorted by the larger of the two time percentages, descending.",
    cells=CELLS,
    side_frame=single_rule_frame(DESYNC_SUMMARY, run_free=("Kernel Name",)),  # hgtx-name: the range prefix
    keys=("Kernel Name",),
    sort="Time (%)",
    options=CompareOptions,
    reads=DESYNC_SUMMARY.reads,
    share="Total Duration (ns)",
    label="Target Kernel",
)

RULES = [DESYNC_SUMMARY_COMPARE]
