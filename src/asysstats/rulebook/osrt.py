"""OS runtime API summary (``osrt_sum``)."""

from __future__ import annotations

from asysstats.analysis.declarations import Rows, RowsOptions, Rule, Summary
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.summary import StatColumns, keyed_frame
from asysstats.core.result import TEXT, Column

STATS = StatColumns.of("calls to this function", count="Num Calls")
SUM_COLUMNS = STATS.columns + (Column("Name", TEXT, "Name of the function"),)
READ = ("start", "end", "nameId")


def osrt_sum_rows(inputs: Inputs, options: RowsOptions) -> Rows:
    calls = inputs.table("osrt", READ)
    return Rows((inputs.strings.map_coded(calls["nameId"], str),), calls["end"] - calls["start"])


SUMMARY = Summary(osrt_sum_rows, keyed_frame(STATS, "Name"))


OSRT_SUM = Rule(
    name="osrt_sum",
    title="OS Runtime Summary",
    help="Time spent in OS runtime API calls per function, in descending order of total time. "
         "'Time (%)' is the share of the total of all calls in the table.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads={"osrt": READ},
    options=RowsOptions,
    share="Time (%)",
)

RULES = [OSRT_SUM]
