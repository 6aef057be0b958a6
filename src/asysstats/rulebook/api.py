"""HGGC API rules: ``hggc_api_sum`` (time per API name) and ``hggc_api_trace`` (every call)."""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

from asysstats.analysis.activity import row_index, take_or_na
from asysstats.analysis.declarations import Rows, RowsOptions, Rule, Summary
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.summary import StatColumns, keyed_frame
from asysstats.compute.distinct import Coded, tie_order
from asysstats.core.result import INT, TEXT, Column, Frame, Gathered
from asysstats.core.tables import NA
from asysstats.reading.schema import NSYS

API_COLUMNS = ("start", "end", "globalTid", "correlationId", "nameId")
# Nsight Systems exports name runtime APIs with the version they appeared in
# (cudaLaunchKernel_v7000); `nsys stats` prints them without it.
VERSION_SUFFIX = re.compile(r"_v[0-9]{4}$")


def api_name_key(inputs: Inputs, name_ids: np.ndarray) -> Coded:
    """API names as printed, coded: on Nsight exports a trailing ``_v`` + four digits is dropped."""
    if inputs.dialect != NSYS:
        return inputs.strings.map_coded(name_ids, str)
    return inputs.strings.map_coded(name_ids, lambda name: VERSION_SUFFIX.sub("", name))


def api_name_ids(inputs: Inputs, name_ids: np.ndarray) -> np.ndarray:
    """Per-call API name ids (:func:`api_name_key`)."""
    return api_name_key(inputs, name_ids).rows()


THREAD_READS = {"threads": ("globalTid", "nameId")}  # what thread_names reads


def thread_values(inputs: Inputs, column: str) -> Callable[[np.ndarray], np.ndarray]:
    """The ``column`` of ``ThreadNames`` for each of some global thread ids: a canonical name id
    (-1 for an unnamed thread) for ``nameId``, else the value (NA for a thread not listed)."""
    threads = inputs.table("threads", ("globalTid", column))
    names = column == "nameId"
    values = inputs.strings.canonical(threads[column]) if names else threads[column]
    return lambda global_tids: take_or_na(values, row_index([threads["globalTid"]], [global_tids]),
                                          missing=-1 if names else NA)


def thread_names(inputs: Inputs) -> Callable[[np.ndarray], np.ndarray]:
    """The name id of each of some global thread ids (``ThreadNames``), -1 for an unnamed thread."""
    return thread_values(inputs, "nameId")


STATS = StatColumns.of("calls to this function", count="Num Calls")
SUM_COLUMNS = STATS.columns + (Column("Name", TEXT, "Name of the function"),)


def api_sum_rows(inputs: Inputs, options: RowsOptions) -> Rows:
    calls = inputs.table("runtime", API_COLUMNS)
    return Rows((api_name_key(inputs, calls["nameId"]),), calls["end"] - calls["start"])


SUMMARY = Summary(api_sum_rows, keyed_frame(STATS, "Name"))


TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Start time of the API call"),
    Column("Duration (ns)", INT, "Duration of the API call"),
    Column("Name", TEXT, "API function name"),
    Column("CorrID", INT, "Correlation ID used to map to other HGGC traces"),
    Column("Pid", INT, "Process ID that made the call"),
    Column("Tid", INT, "Thread ID that made the call"),
    Column("Thread Name", TEXT, "Name of the thread that made the API call"),
)


def api_trace(inputs: Inputs, options: RowsOptions) -> Frame:
    return api_trace_frame(inputs)


def api_trace_frame(inputs: Inputs) -> Frame:
    """Every API call in start order (ties: correlation id, thread, process, end, name), each
    column gathered by one row index as it is written."""
    calls = inputs.table("runtime", API_COLUMNS)
    names = api_name_key(inputs, calls["nameId"]).narrow()
    rank = inputs.strings.sort_rank(names.values)  # of each distinct name
    order = tie_order(calls["start"], lambda rows: (calls["correlationId"][rows], calls["tid"][rows],
                                                    calls["pid"][rows], calls["end"][rows], rank[names.codes[rows]]))
    threads = Coded.of(calls["globalTid"], narrow=True)
    thread_labels = threads.mapped(thread_names(inputs)(threads.values))
    return {  # gathered in order as written: no sorted copies
        "Start (ns)": Gathered(calls["start"], order),
        "Duration (ns)": Gathered(lambda rows: calls["end"][rows] - calls["start"][rows], order),
        "Name": Gathered(names, order), "CorrID": Gathered(calls["correlationId"], order),
        "Pid": Gathered(calls["pid"], order), "Tid": Gathered(calls["tid"], order),
        "Thread Name": Gathered(thread_labels, order)}


API_SUM = Rule(
    name="hggc_api_sum",
    title="HGGC API Summary",
    help="Time spent in HGGC API calls per API name, in descending order of total time. "
         "'Time (%)' is the share of the total of all API calls in the table.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads={"runtime": API_COLUMNS},
    options=RowsOptions,
    share="Time (%)",
)

API_TRACE = Rule(
    name="hggc_api_trace",
    title="HGGC API Trace",
    help="One row per HGGC API call, in ascending order of start time.",
    columns=TRACE_COLUMNS,
    compute=api_trace,
    reads={"runtime": API_COLUMNS, **THREAD_READS},
    options=RowsOptions,
)

RULES = [API_SUM, API_TRACE]
