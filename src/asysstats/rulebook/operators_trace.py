"""PPU operator trace (``ppu_op_trace``): one row per PPU activity of each operator instance.

Rows are sorted by the operator's start, then its OP ID, then the activity's start and
Activity ID. ``OP ID`` is the HGTX range id of an annotated operator (a graph-mapped range
gives one instance per graph launch, all with its id) and the Activity ID of the kernel of
an operator recognised from a kernel name. ``Activity ID`` numbers kernels, then memcpy,
then memset rows of the report (see :mod:`asysstats.analysis.operators.activities`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.analysis import READS, analyse
from asysstats.analysis.operators.common import OP, PREFILL_DECODE, REQUIRES, AnalysisOptions
from asysstats.analysis.operators.instances import flat_instances
from asysstats.core.result import INT, TEXT, Column, Frame

if TYPE_CHECKING:
    import regex


@dataclass(frozen=True)
class TraceOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()


def op_trace(inputs: Inputs, options: TraceOptions) -> Frame:
    an = analyse(inputs, options.like(AnalysisOptions))
    inst = flat_instances(an)
    ops, act, own, acts = inst.table, inst.act, inst.label, an.acts
    order = np.lexsort((acts["aid"][act], acts["start"][act], ops["opid"][own], ops["start"][own]))
    own, act = own[order], act[order]  # the printed columns only are gathered
    start = acts["start"][act]
    return {
        "OP Type": ops["type"][own], "OP Name": ops["display"][own], "OP Start (ns)": ops["start"][own],
        "OP Duration (ns)": (ops["end"] - ops["start"])[own], "OP ID": ops["opid"][own],
        "Activity ID": acts["aid"][act], "PID": acts["pid"][act], "Device ID": acts["deviceId"][act],
        "Context ID": acts["contextId"][act], "Stream ID": acts["streamId"][act], "Activity Start (ns)": start,
        "Activity Duration (ns)": acts["end"][act] - start, "Activity Name": acts["name"][act],
    }


COLUMNS = (
    Column("OP Type", TEXT, "PPU operator type"),
    Column("OP Name", TEXT, "Name of the PPU operator"),
    Column("OP Start (ns)", INT, "Start timestamp of the PPU operator (its first activity)"),
    Column("OP Duration (ns)", INT, "Duration of the PPU operator, first activity start to last activity end"),
    Column("OP ID", INT, "HGTX range id of the operator (a kernel-name operator: its Activity ID)"),
    Column("Activity ID", INT, "Identifier of the PPU activity"),
    Column("PID", INT, "Process identifier"),
    Column("Device ID", INT, "PPU device identifier"),
    Column("Context ID", INT, "Context identifier"),
    Column("Stream ID", INT, "Stream identifier"),
    Column("Activity Start (ns)", INT, "Start timestamp of the PPU activity"),
    Column("Activity Duration (ns)", INT, "Duration of the PPU activity"),
    Column("Activity Name", TEXT, "Kernel name, or memcpy / memset description"),
)

OP_TRACE = Rule(
    name="ppu_op_trace",
    title="PPU Operator Trace",
    help="The PPU activities (kernels, memcpy, memset) of every PPU operator instance, in order of operator "
         "start, then activity start.",
    columns=COLUMNS,
    compute=op_trace,
    reads=READS,
    requires=REQUIRES,
    options=TraceOptions,
)

RULES = [OP_TRACE]
