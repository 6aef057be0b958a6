"""HGGC PPU kernel summary (``hggc_ppu_kern_sum``)."""

from __future__ import annotations

from asysstats.analysis.declarations import Rows, Rule, Summary, merged_reads, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.kernels import KERNEL_NAME_READS, LAUNCH_COLUMNS, KernelOptions, kernel_name_key, on_devices
from asysstats.analysis.summary import StatColumns, keyed_frame
from asysstats.core.columns import TEXT, Column


def kernel_columns(options: KernelOptions) -> tuple[str, ...]:
    """The kernel columns read with these options, and no more (reading is the cost)."""
    columns = ["start", "end", "demangledName"]
    if options.device is not None:
        columns.append("deviceId")
    if options.mangled:
        columns.append("mangledName")
    if options.hgtx_name:
        columns += LAUNCH_COLUMNS
    return tuple(columns)


STATS = StatColumns.of("executions of this kernel")
SUM_COLUMNS = STATS.columns + (Column("Name", TEXT, "Name of the kernel"),)


def kern_sum_rows(inputs: Inputs, options: KernelOptions) -> Rows:
    kernels = on_devices(inputs.table("kernels", kernel_columns(options)), options.device)
    return Rows((kernel_name_key(inputs, kernels, name_mode(options), options.hgtx_name),),
                kernels["end"] - kernels["start"])


SUMMARY = Summary(kern_sum_rows, keyed_frame(STATS, "Name"))


KERN_SUM = Rule(
    name="hggc_ppu_kern_sum",
    title="HGGC PPU Kernel Summary",
    help="Kernel execution time per kernel name, in descending order of total time. "
         "'Time (%)' is the share of the total of all kernels in the table.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads=merged_reads({"kernels": ("start", "end", "deviceId")}, KERNEL_NAME_READS),
    options=KernelOptions,
    share="Time (%)",
)

RULES = [KERN_SUM]
