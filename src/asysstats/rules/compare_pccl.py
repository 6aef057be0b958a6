"""``pccl_desync_summary_compare``: the ``pccl_desync_summary`` tables of two reports, PCCL
kernels matched by name (in the chosen name mode)."""

from __future__ import annotations

from asysstats.analysis.comparison import BASE, DEVICE_NAME, TARGET, comparison_rule, pair, side, single_rule_frame
from asysstats.analysis.declarations import DEVICE, HGTX_NAME, NAME_OPTIONS
from asysstats.core.columns import PAIR_INT, PAIR_PERCENT, PAIR_TEXT
from asysstats.rules.pccl_desync import DESYNC_SUMMARY

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
    side_frame=single_rule_frame(DESYNC_SUMMARY),
    keys=("Kernel Name",),
    sort="Time (%)",
    options=(HGTX_NAME,) + NAME_OPTIONS + (DEVICE,),
    reads=DESYNC_SUMMARY.reads,
)

RULES = [DESYNC_SUMMARY_COMPARE]
