"""Merge keys: operators whose keys are equal form one row; a group shows its first instance's name.

A key is the type, the library and the parameter fields of the operator, without its minor
fields (asysrep-schema.md) unless the ``no-merge-*`` option of its family is given:

* PyTorch ``seq``, ``op_id``, ``input_op_ids`` (``no-merge-pytorch-parameter``);
* GEMM leading dimensions, ``alpha``, ``beta`` (``no-merge-gemm-parameter``);
* MoE ``topkids``, ``unique`` (``no-merge-moe-parameter``);
* FlashAttention ``seqlen_k`` of decode steps (``no-merge-flash-attention-parameter``);
* PCCL ``r``, ``h``, ``b`` (``no-merge-communication-parameter``).

Operators recognised from kernel names are keyed by the kernel name.
"""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from asysstats.analysis.operators.catalog import PYTORCH
from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.analysis.operators.parsers import Parsed
from asysstats.analysis.operators.recognise import Recognised
from asysstats.analysis.operators.torch_texts import torch_keys
from asysstats.compute.arrow import text
from asysstats.core.strings import StringPool


def merge_key(parsed: Parsed, options: AnalysisOptions) -> str:
    keep_all = options.keeps_parameters(parsed.family)
    dropped = frozenset() if keep_all else parsed.minor
    body = ",".join(f"{k}={v}" for k, v in parsed.fields if k not in dropped)
    return f"{parsed.type}|{parsed.library}|{body}"


def parsed_ids(pool: StringPool, parsed: Recognised, options: AnalysisOptions) -> dict[str, np.ndarray]:
    """Per parsed text: ``type``, ``key`` and ``display`` string ids."""
    keep_all = options.keeps_parameters("pytorch")
    kinds = parsed.ids(pool, lambda p: p.type, pool.intern([PYTORCH])[0])  # this order numbers the new ids
    if keep_all:
        torch_keyed = pool.intern_texts(torch_keys(parsed.torch, keep_all))
    else:  # the run ids are minor fields: texts without them have the same keys
        distinct_texts, slots = parsed.torch_shapes
        torch_keyed = pool.intern_texts(torch_keys(distinct_texts, keep_all))[slots]
    return {"type": kinds, "key": parsed.ids(pool, lambda p: merge_key(p, options), torch_keyed),
            "display": parsed.ids(pool, lambda p: p.display, parsed.torch_ids)}


def joined_ids(pool: StringPool, first: np.ndarray, second: np.ndarray, sep: str = " + ") -> np.ndarray:
    """Ids of ``text(first) + sep + text(second)`` per row (once per distinct pair)."""
    if len(first) == 0:
        return np.empty(0, np.int64)
    pairs, inverse = np.unique(np.stack([first, second], axis=1), axis=0, return_inverse=True)
    texts = (pool.texts(pairs[:, side], missing="None") for side in (0, 1))  # as f"{None}" spells it
    return pool.intern_texts(pc.binary_join_element_wise(*texts, text(sep)))[inverse.reshape(-1)]
