"""``ppu_time_util_compare``: each device's PPU time utilisation in two reports, matched by
device index.

A device's utilisation is ``ppu_time_util`` with a single chunk and every chunk reported:
the union of its PPU activities (kernels, memcpy, memset; all processes) over its time
range (``range-mode``). The columns are those of the reference's example output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from asysstats.analysis.activity import device_names
from asysstats.analysis.comparison import BASE, DEVICE_NAME, MATCHED_ONLY, TARGET, comparison_rule, pair, side
from asysstats.analysis.declarations import RANGE_MODE, Options, merged_reads
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import DEVICE_READS
from asysstats.core.result import INT, PAIR_INT, PAIR_PERCENT, PAIR_TEXT, Frame
from asysstats.rulebook.analyze import ACTIVITY_KINDS, PPU_TIME_UTIL, TimeUtilOptions

WHOLE_RANGE = TimeUtilOptions(chunks=1, threshold=101, merge_process_id=True)  # one chunk per device, always reported


@dataclass(frozen=True)
class CompareOptions(Options):
    range_mode: str = RANGE_MODE.field()
    matched_only: bool = MATCHED_ONLY.field()


def device_utilisation(inputs: Inputs, options: CompareOptions) -> Frame:
    """Per device: In-Use (%), Duration (ns), PPU Active Time (ns), Device ID, Device Name."""
    util = PPU_TIME_UTIL.compute(inputs, replace(WHOLE_RANGE, range_mode=options.range_mode))
    in_use, duration = util["In-Use (%)"], util["Duration (ns)"]
    names = device_names(inputs)
    return {
        "In-Use (%)": in_use, "Duration (ns)": duration,
        "PPU Active Time (ns)": np.rint(in_use * duration / 100.0).astype(np.int64),
        "Device ID": util["Device ID"],
        DEVICE_NAME: np.array([names.get(d) for d in util["Device ID"].tolist()], dtype=object),
    }


CELLS = (
    pair("Device Name", DEVICE_NAME, PAIR_TEXT, "PPU device name"),
    pair("In-Use (%)", "In-Use (%)", PAIR_PERCENT, "Percentage of time the PPU was active"),
    pair("Duration (ns)", "Duration (ns)", PAIR_INT, "Duration of the time range"),
    pair("PPU Active Time (ns)", "PPU Active Time (ns)", PAIR_INT, "PPU active time, overlaps counted once"),
    side("Base Device ID", "Device ID", BASE, "PPU device identifier in the base report", INT),
    side("Target Device ID", "Device ID", TARGET, "PPU device identifier in the target report", INT),
)

TIME_UTIL_COMPARE = comparison_rule(
    name="ppu_time_util_compare",
    title="PPU Time Utilization Comparison",
    help="Each device's time utilisation (active time over the time range of 'range-mode') in the base and "
         "target reports, matched by device index; sorted by the larger of the two In-Use values, descending.",
    cells=CELLS,
    side_frame=device_utilisation,
    keys=("Device ID",),
    sort="In-Use (%)",
    options=CompareOptions,
    reads=merged_reads(PPU_TIME_UTIL.reads, DEVICE_READS),
    requires=ACTIVITY_KINDS,
)

RULES = [TIME_UTIL_COMPARE]
