"""``hgtx_ppu_projection_summary_compare``: the ``hgtx_ppu_proj_sum`` tables of two reports,
HGTX ranges matched by name and style, a PyTorch range's name without its per-run ids
(``seq``, ``op_id``, ``input_op_ids``), which it shows without them too; ranges of one name
after that pair in order of their figures (the k-th largest of the base with the k-th of the
target), not of the names their ids made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.comparison import (
    BASE,
    DEVICE_NAME,
    MATCHED_ONLY,
    TARGET,
    comparison_rule,
    pair,
    ratio,
    side,
    single_rule_frame,
)
from asysstats.analysis.declarations import (
    DEVICE,
    NO_GRAPH_MAPPING,
    RANGE_EXCLUDE,
    RANGE_INCLUDE,
    RANGE_MODE,
    ROWS,
    Options,
)
from asysstats.analysis.inputs import Inputs
from asysstats.core.result import PAIR_INT, PAIR_PERCENT, PAIR_TEXT, Frame
from asysstats.rulebook.hgtx_projection import PROJ_SUM

if TYPE_CHECKING:
    import regex


@dataclass(frozen=True)
class CompareOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_mode: str = RANGE_MODE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    matched_only: bool = MATCHED_ONLY.field()


PAIRING_ORDER = ("In-Use (%)", "Total Proj Time (ns)", "Total Range Time (ns)", "Range Instances", "Proj Avg (ns)")
run_free_frame = single_rule_frame(PROJ_SUM, run_free=("Range",))


def projection_frame(inputs: Inputs, options: CompareOptions) -> Frame:
    """One report's ``hgtx_ppu_proj_sum`` rows by :data:`PAIRING_ORDER` descending: the order in
    which ranges of one name (without per-run ids) pair."""
    frame = run_free_frame(inputs, options)
    order = np.lexsort([-np.asarray(frame[name], dtype=np.float64) for name in reversed(PAIRING_ORDER)])
    return {name: np.asarray(values)[order] for name, values in frame.items()}


def projection_pair(name: str, source: str, help: str, ratio_name: str) -> tuple:
    return (pair(name, source, PAIR_INT, help), ratio(ratio_name, source, f"Target {help[0].lower()}{help[1:]}"))


CELLS = (
    pair("Device Name", DEVICE_NAME, PAIR_TEXT, "PPU device name"),
    pair("In-Use (%)", "In-Use (%)", PAIR_PERCENT, "Percentage of projected active time to the time range"),
    pair("Range Instance", "Range Instances", PAIR_INT, "Number of instances of this range"),
    *projection_pair("Proj Avg (ns)", "Proj Avg (ns)", "Average projected time of this range", "Proj Avg Ratio"),
    *projection_pair("Proj Active Time (ns)", "Proj Active Time (ns)",
                     "Projected time of this range name, overlaps counted once", "Proj Active Ratio"),
    *projection_pair("Total Proj Time (ns)", "Total Proj Time (ns)",
                     "Total projected time of all instances of this range name", "Total Proj Ratio"),
    *projection_pair("Total Range Time (ns)", "Total Range Time (ns)",
                     "Total original HGTX range time of all instances of this range name", "Total Range Ratio"),
    side("Base Range", "Range", BASE, "Name of the HGTX range in the base report"),
    side("Target Range", "Range", TARGET, "Name of the HGTX range in the target report"),
)

PROJECTION_SUMMARY_COMPARE = comparison_rule(
    name="hgtx_ppu_projection_summary_compare",
    title="HGTX to PPU Projection Summary Comparison",
    help="The hgtx_ppu_proj_sum tables of the base and target reports, ranges matched by name and style; "
         "sorted by the larger of the two In-Use values, descending.",
    cells=CELLS,
    side_frame=projection_frame,
    keys=("Range", "Style"),
    sort="In-Use (%)",
    options=CompareOptions,
    reads=PROJ_SUM.reads,
    share="Total Proj Time (ns)",
    label="Target Range",
)

RULES = [PROJECTION_SUMMARY_COMPARE]
