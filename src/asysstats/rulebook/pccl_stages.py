"""PCCL transfer stage summary (``pccl_stage_sum``)."""

from __future__ import annotations

import numpy as np

from asysstats.analysis.declarations import RowsOptions, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.summary import StatColumns, summarize
from asysstats.compute.grouped import Key
from asysstats.core.result import INT, TEXT, Column, Frame

KEY_COLUMNS = (
    Column("PID", INT, "Process identifier"),
    Column("Device ID", INT, "PPU device identifier"),
    Column("TID", INT, "Thread identifier"),
    Column("Channel ID", INT, "PCCL channel identifier"),
    Column("Channel Type", TEXT, "PCCL channel type (TX or RX)"),
    Column("Name", TEXT, "Stage name"),
)
# The reference's example header carries no units (docs/decisions.md D6: the example wins).
STATS = StatColumns({
    "sum": Column("Total Time", INT, "Stage total time (ns)"),
    "count": Column("Instances", INT, "Number of instances"),
    "mean": Column("Avg", INT, "Average of stage duration (ns)"),
    "median": Column("Med", INT, "Median of stage duration (ns)"),
    "min": Column("Min", INT, "Minimum of stage duration (ns)"),
    "max": Column("Max", INT, "Maximum of stage duration (ns)"),
    "std": Column("Stdev", INT, "Population standard deviation of stage duration (ns)"),
})
READ = ("start", "end", "globalTid", "deviceId", "channelId", "channelType", "stageNameId")


def stage_sum(inputs: Inputs, options: RowsOptions) -> Frame:
    stages = inputs.table("pccl_stages", READ)
    pool = inputs.strings
    channel_type = pool.canonical_coded(stages["channelType"])
    type_rank = pool.sort_rank(channel_type.values)  # distinct texts: one rank each, 0 to n - 1
    type_of_rank = np.empty_like(channel_type.values)
    type_of_rank[type_rank] = channel_type.values
    keys: list[Key] = [pool.canonical_coded(stages["stageNameId"]), stages["pid"], stages["deviceId"], stages["tid"],
            stages["channelId"], channel_type.mapped(type_rank)]  # ties: name, then the keys in column order
    groups, stats, order = summarize(pool, keys, stages["end"] - stages["start"], 0)
    frame = STATS.cells(stats, order)
    name, pid, device, tid, channel, rank = (k[order] for k in groups.keys)
    return {"PID": pid, "Device ID": device, "TID": tid, "Channel ID": channel,
            "Channel Type": type_of_rank[rank], "Name": name, **frame}


STAGE_SUM = Rule(
    name="pccl_stage_sum",
    title="PCCL Transfer Stage Summary",
    help="Duration of the PCCL proxy transfer stages per process, device, thread, channel, direction "
         "and stage name, in descending order of total stage time.",
    columns=KEY_COLUMNS + STATS.columns,
    compute=stage_sum,
    reads={"pccl_stages": READ},
    options=RowsOptions,
    share="Total Time",
)

RULES = [STAGE_SUM]
