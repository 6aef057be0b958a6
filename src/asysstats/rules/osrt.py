"""OS runtime API summary (``osrt_sum``)."""

from __future__ import annotations

from typing import Any, Mapping

from asysstats.engine import Inputs
from asysstats.registry import ROWS, TEXT, Column, Rule
from asysstats.rules.api import call_summary
from asysstats.rules.summary import stat_columns

SUM_COLUMNS = stat_columns("calls to this function", count="Num Calls") + (
    Column("Name", TEXT, "Name of the function"),)


def osrt_sum(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    calls = inputs.table("osrt", ("start", "end", "nameId"))
    return call_summary(inputs, calls, inputs.strings.canonical(calls["nameId"]), SUM_COLUMNS)


OSRT_SUM = Rule(
    name="osrt_sum",
    title="OS Runtime Summary",
    help="Time spent in OS runtime API calls per function, in descending order of total time. "
         "'Time (%)' is the share of the total of all calls in the table.",
    columns=SUM_COLUMNS,
    compute=osrt_sum,
    reads=("osrt",),
    options=(ROWS,),
    share="Time (%)",
)

RULES = [OSRT_SUM]
