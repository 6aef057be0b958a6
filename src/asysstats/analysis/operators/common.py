"""Declarations shared by the PPU operator rules: options, the tables they read, sorting."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from asysstats.analysis.declarations import DEVICE, RANGE_EXCLUDE, RANGE_INCLUDE, Option
from asysstats.core.strings import StringPool

READS = ("hgtx", "kernels", "memcpy", "memset", "runtime", "graph_nodes", "devices")
REQUIRES = ("kernels", "memcpy", "memset")

OP = Option("op", "str_list",
            "PPU operator types to analyse, separated by '/': GEMM, FlashAttention, MoE, PCCL, PyTorch and the "
            "--ppu-op-config types; 'others' adds the kernels that no operator claims (default: all types).", None)
PREFILL_DECODE = Option("no-merge-flash-attention-prefill-decode-operator", "flag",
                        "Do not match and merge prefill and decode FlashAttention operators.", False)
MERGE_FLAGS = (
    Option("no-merge-flash-attention-parameter", "flag",
           "Keep FlashAttention operators apart by seqlen_k of decode steps.", False),
    Option("no-merge-communication-parameter", "flag",
           "Keep PCCL operators apart by rank (r), communicator hash (h) and buffers (b).", False),
    Option("no-merge-moe-parameter", "flag", "Keep MoE operators apart by topkids and unique.", False),
    Option("no-merge-pytorch-parameter", "flag", "Keep PyTorch operators apart by seq, op_id and input_op_ids.", False),
    Option("no-merge-gemm-parameter", "flag", "Keep GEMM operators apart by leading dimensions, alpha and beta.", False),
)
MOE_MERGE = MERGE_FLAGS[2]
SCOPE = (DEVICE, RANGE_INCLUDE, RANGE_EXCLUDE)  # device and HGTX range selection
ALL_MERGES = (PREFILL_DECODE,) + MERGE_FLAGS


def order_by(choices: Sequence[str], default: str, what: str) -> Option:
    return Option("order-by", "choice", f"Sort order: {what}.", default, choices=tuple(choices))


def sorted_order(strings: StringPool, primary: np.ndarray, descending: bool, names: np.ndarray,
                 *ties: np.ndarray) -> np.ndarray:
    """Rows by ``primary`` (NaN last), then by name text, then the other keys ascending."""
    primary = np.asarray(primary, dtype=np.float64)
    key = np.where(np.isnan(primary), np.inf, -primary if descending else primary)
    rank = strings.sort_rank(names)
    return np.lexsort(tuple(reversed(ties)) + (rank, key))
