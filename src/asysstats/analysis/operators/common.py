"""Declarations shared by the PPU operator rules: options, the options the analysis reads, sorting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import numpy as np

from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, Option, Options
from asysstats.core.strings import StringPool

if TYPE_CHECKING:
    import regex

REQUIRES = ("kernels", "memcpy", "memset")

OP = Option("op", "str_list",
            "PPU operator types to analyse, separated by '/': GEMM, FlashAttention, MoE, PCCL, PyTorch and the "
            "--ppu-op-config types; 'others' adds the kernels that no operator claims (default: all types).", None)
ALL_COLUMNS = Option("all-columns", "flag",
                     "Print every column of the reference's column list, also the framework (and library) averages "
                     "and instances its example leaves out.", False)
PREFILL_DECODE = Option("no-merge-flash-attention-prefill-decode-operator", "flag",
                        "Do not match and merge prefill and decode FlashAttention operators.", False)
FLASH_MERGE = Option("no-merge-flash-attention-parameter", "flag",
                     "Keep FlashAttention operators apart by seqlen_k of decode steps.", False)
PCCL_MERGE = Option("no-merge-communication-parameter", "flag",
                    "Keep PCCL operators apart by rank (r), communicator hash (h) and buffers (b).", False)
MOE_MERGE = Option("no-merge-moe-parameter", "flag", "Keep MoE operators apart by topkids and unique.", False)
PYTORCH_MERGE = Option("no-merge-pytorch-parameter", "flag",
                       "Keep PyTorch operators apart by seq, op_id and input_op_ids.", False)
GEMM_MERGE = Option("no-merge-gemm-parameter", "flag",
                    "Keep GEMM operators apart by leading dimensions, alpha and beta.", False)


@dataclass(frozen=True)
class AnalysisOptions(Options):
    """The options the operator analysis reads (:func:`asysstats.analysis.operators.analysis.analyse`):
    a rule's options narrowed to these (:meth:`Options.like`); rules that agree on them share
    one analysis of a report. A rule without one of them analyses with its default."""

    op: tuple[str, ...] | None = OP.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()

    def keeps_parameters(self, family: str) -> bool:
        """Whether the ``no-merge-*`` option of an operator family keeps its minor parameters apart."""
        return {"pytorch": self.no_merge_pytorch_parameter, "gemm": self.no_merge_gemm_parameter,
                "flash": self.no_merge_flash_attention_parameter, "moe": self.no_merge_moe_parameter,
                "pccl": self.no_merge_communication_parameter}.get(family, False)


def order_by(choices: Iterable[str], default: str, what: str) -> Option:
    return Option("order-by", "choice", f"Sort order: {what}.", default, choices=tuple(choices))


def sorted_order(strings: StringPool, primary: np.ndarray, descending: bool, names: np.ndarray,
                 *ties: np.ndarray) -> np.ndarray:
    """Rows by ``primary`` (NaN last), then by name text, then the other keys ascending."""
    primary = np.asarray(primary, dtype=np.float64)
    key = np.where(np.isnan(primary), np.inf, -primary if descending else primary)
    rank = strings.sort_rank(names)
    return np.lexsort(tuple(reversed(ties)) + (rank, key))
