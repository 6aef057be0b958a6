"""OS runtime API summary (``osrt_sum``)."""

from __future__ import annotations

from typing import Any, Mapping

from asysstats.analysis.declarations import ROWS, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.summary import Rows, Summary, keyed_frame, stat_columns
from asysstats.core.columns import TEXT, Column

SUM_COLUMNS = stat_columns("calls to this function", count="Num Calls") + (
    Column("Name", TEXT, "Name of the function"),)


def osrt_sum_rows(inputs: Inputs, options: Mapping[str, Any]) -> Rows:
    calls = inputs.table("osrt", ("start", "end", "nameId"))
    return Rows((inputs.strings.map_coded(calls["nameId"], str),), calls["end"] - calls["start"])


SUMMARY = Summary(osrt_sum_rows, keyed_frame(SUM_COLUMNS, "Name"))


OSRT_SUM = Rule(
    name="osrt_sum",
    title="OS Runtime Summary",
    help="Time spent in OS runtime API calls per function, in descending order of total time. "
         "'Time (%)' is the share of the total of all calls in the table.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads=("osrt",),
    options=(ROWS,),
    share="Time (%)",
)

RULES = [OSRT_SUM]
