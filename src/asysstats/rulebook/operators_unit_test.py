"""PPU operator unit tests (``ppu_op_unit_test``): a runnable PyTorch script.

The result is one TEXT column, ``Script``, one row per line of the script (so every writer
and ``--output`` work). ``--format py`` prints the lines alone, so that
``asys stats -r ppu_op_unit_test --format py -o . report.asysrep`` writes
``report_ppu_op_unit_test.py``. The tests follow the merged operators of ``ppu_op_sum``
in descending total time; see :mod:`asysstats.analysis.operators.unittest_gen`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.analysis import READS, analyse
from asysstats.analysis.operators.common import (
    FLASH_MERGE,
    GEMM_MERGE,
    MOE_MERGE,
    OP,
    PCCL_MERGE,
    PREFILL_DECODE,
    PYTORCH_MERGE,
    REQUIRES,
    AnalysisOptions,
    sorted_order,
)
from asysstats.analysis.operators.instances import flat_instances, group_instances
from asysstats.analysis.operators.unittest_gen import Entry
from asysstats.analysis.operators.unittest_script import script_lines
from asysstats.core.result import TEXT, Column, Frame

if TYPE_CHECKING:
    import regex


@dataclass(frozen=True)
class UnitTestOptions(Options):
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()


def operator_entries(inputs: Inputs, options: UnitTestOptions) -> list[Entry]:
    """The merged operators in descending total time, with the parameters of their first instance."""
    an = analyse(inputs, options.like(AnalysisOptions))
    inst = flat_instances(an)
    t = inst.table
    groups = group_instances(an, inst, [t["type"], t["key"]])
    first = groups.first
    order = sorted_order(inputs.strings, groups.stats["sum"], True, t["display"][first], groups.keys[1])
    source = t["source"][first][order]
    parsed_index = np.where(source >= 0, an.op("parsed", np.maximum(source, 0)) if an.texts.rows else -1, -1)
    types = inputs.strings.lookup(groups.keys[0][order])
    names = inputs.strings.lookup(t["display"][first][order])
    totals, counts = groups.stats["sum"][order].tolist(), groups.stats["count"][order].tolist()
    return [Entry(rank, kind or "-", name or "-", int(total), int(count), an.parsed[p] if p >= 0 else None)
            for rank, (kind, name, total, count, p) in
            enumerate(zip(types, names, totals, counts, parsed_index.tolist()), start=1)]


def unit_test(inputs: Inputs, options: UnitTestOptions) -> Frame:
    entries = operator_entries(inputs, options)
    lines = script_lines(inputs.path.stem, entries) if entries else []
    return {"Script": np.array(lines, dtype=object)}


UNIT_TEST = Rule(
    name="ppu_op_unit_test",
    title="PPU Operator Unit Tests (experimental)",
    help="A Python script with one PyTorch unit test per merged PPU operator, in descending total time; it "
         "lists the operators it could not generate at its end. Write it with --format py (one line per row "
         "in the other formats). Run it as: python <report>_ppu_op_unit_test.py [--top N] [--warm-up N] "
         "[--repeat N] [--test name,name] [--device DEV]; without PyTorch it skips cleanly.",
    columns=(Column("Script", TEXT, "One line of the unit-test script"),),
    compute=unit_test,
    reads=READS,
    requires=REQUIRES,
    options=UnitTestOptions,
)

RULES = [UNIT_TEST]
