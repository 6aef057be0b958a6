"""PPU metric trace (``ppu_metric_trace``): one row per device, metric and sample.

A sample lasts from its timestamp to its ``end`` when the report stores one, else to the
next sample of the same device and metric (the last sample's duration is ``-``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.activity import row_index
from asysstats.analysis.declarations import DEVICE, ROWS, Option, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.compute.distinct import distinct, narrowed
from asysstats.compute.grouped import group_by
from asysstats.core.regexes import search
from asysstats.core.result import DECIMAL, INT, TEXT, Column, Frame, Gathered
from asysstats.core.tables import NA
from asysstats.rulebook.kernels import on_devices

if TYPE_CHECKING:
    import regex

METRICS = Option("metrics", "regex", "Only metrics whose name matches this regular expression (default: all).")
READS = {"metrics": ("deviceId", "start", "end", "metricId", "value"), "metric_info": ("metricId", "metricName", "unit")}


@dataclass(frozen=True)
class TraceOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    metrics: "regex.Pattern | None" = METRICS.field()

COLUMNS = (
    Column("Device ID", INT, "PPU device identifier"),
    Column("Start (ns)", INT, "Sample start timestamp"),
    Column("Duration (ns)", INT, "Sample duration"),
    Column("Name", TEXT, "Name of the PPU metric"),
    Column("Value", DECIMAL, "Value of the PPU metric"),
    Column("Unit", TEXT, "Unit of the PPU metric"),
)


def sample_durations(samples) -> np.ndarray:
    """``end - start`` where stored, else the time to the next sample of the same device and metric."""
    groups = group_by([samples["deviceId"], samples["metricId"]], samples["start"])
    ordered = samples["start"][groups.order]
    following = np.full(len(ordered), NA, dtype=np.int64)
    following[:-1] = ordered[1:]
    following[groups.bounds[1:] - 1] = NA
    next_start = np.empty(len(ordered), dtype=np.int64)
    next_start[groups.order] = following
    to_next = np.where(next_start != NA, next_start - samples["start"], NA)
    return np.where(samples["end"] >= samples["start"], samples["end"] - samples["start"], to_next)


def metric_trace(inputs: Inputs, options: TraceOptions) -> Frame:
    samples = on_devices(inputs.table("metrics"), options.device)
    info = inputs.table("metric_info")
    slot = row_index([info["metricId"]], [samples["metricId"]])  # each sample's row of info, and
    slot[slot < 0] = info.rows  # past them for a metric it lacks: its name and unit are missing (-1)
    slot = narrowed(slot, info.rows + 1)
    names, units = (np.append(info[column], -1) for column in ("metricName", "unit"))
    durations = sample_durations(samples)
    if options.metrics is not None:
        pattern, where = options.metrics, "rule 'ppu_metric_trace': option 'metrics'"
        uniq = distinct(names)[0]
        chosen = [u for u, t in zip(uniq.tolist(), inputs.strings.lookup(uniq)) if t and search(pattern, t, where)]
        keep = np.isin(names, np.asarray(chosen, dtype=np.int64))[slot]
        samples, slot, durations = samples.take(keep), slot[keep], durations[keep]
    order = np.lexsort((samples["metricId"], samples["deviceId"], inputs.strings.sort_rank(names)[slot],
                        samples["start"]))
    info_rows = slot[order]  # names and units are gathered through each sample's row of info
    return {"Device ID": Gathered(samples["deviceId"], order), "Start (ns)": Gathered(samples["start"], order),
            "Duration (ns)": Gathered(durations, order), "Name": Gathered(names, info_rows),
            "Value": Gathered(samples["value"], order), "Unit": Gathered(units, info_rows)}


METRIC_TRACE = Rule(
    name="ppu_metric_trace",
    title="PPU Metric Trace",
    help="One row per PPU device, metric and sampling time, in ascending order of time.",
    columns=COLUMNS,
    compute=metric_trace,
    reads=READS,
    options=TraceOptions,
)

RULES = [METRIC_TRACE]
