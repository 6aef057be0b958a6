"""``ppu_kernel_summary_compare``: the ``hggc_ppu_kern_sum`` tables of two reports, kernels
matched by name (in the chosen name mode)."""

from __future__ import annotations

from dataclasses import dataclass

from asysstats.analysis.comparison import (
    BASE,
    DEVICE_NAME,
    MATCHED_ONLY,
    TARGET,
    TOP,
    comparison_rule,
    pair,
    ratio,
    side,
    single_rule_frame,
)
from asysstats.analysis.declarations import BASE as BASE_NAME
from asysstats.analysis.declarations import DEVICE, HGTX_NAME, MANGLED, ROWS, Options
from asysstats.core.result import PAIR_INT, PAIR_PERCENT, PAIR_TEXT
from asysstats.rulebook.kernels import KERN_SUM


@dataclass(frozen=True)
class CompareOptions(Options):
    top: int | None = TOP.field()
    rows: int | None = ROWS.field()
    hgtx_name: bool = HGTX_NAME.field()
    base: bool = BASE_NAME.field()
    mangled: bool = MANGLED.field()
    device: tuple[int, ...] | None = DEVICE.field()
    matched_only: bool = MATCHED_ONLY.field()

CELLS = (
    pair("Device Name", DEVICE_NAME, PAIR_TEXT, "PPU device name"),
    pair("Instances", "Instances", PAIR_INT, "Number of executions of this kernel"),
    pair("Percent (%)", "Time (%)", PAIR_PERCENT, "Percentage of the total time of all kernels of the report"),
    pair("Avg (ns)", "Avg (ns)", PAIR_INT, "Average execution time of this kernel"),
    ratio("Avg Ratio", "Avg (ns)", "Target average time compared to base"),
    pair("Total (ns)", "Total Time (ns)", PAIR_INT, "Total execution time of this kernel"),
    ratio("Total Ratio", "Total Time (ns)", "Target total time compared to base"),
    side("Base Kernel", "Name", BASE, "Name of the kernel in the base report"),
    side("Target Kernel", "Name", TARGET, "Name of the kernel in the target report"),
)

KERNEL_SUMMARY_COMPARE = comparison_rule(
    name="ppu_kernel_summary_compare",
    title="PPU Kernel Summary Comparison",
    help="The hggc_ppu_kern_sum tables of the base and target reports, kernels matched by name; "
         "sorted by the larger of the two time percentages, descending.",
    cells=CELLS,
    side_frame=single_rule_frame(KERN_SUM, run_free=("Name",)),  # hgtx-name: the range prefix
    keys=("Name",),
    sort="Time (%)",
    options=CompareOptions,
    reads=KERN_SUM.reads,
    share="Total (ns)",
    label="Target Kernel",
)

RULES = [KERNEL_SUMMARY_COMPARE]
