"""NCCL/RCCL collective metadata of Kineto kernels as NCCL-domain HGTX ranges.

Kineto writes a collective's parameters into its kernel's args (``Collective name``,
``In msg nelems``, ``dtype``, ``Process Group Ranks``, ...). They become one push/pop range
per launch in the ``NCCL`` domain, in the text form of an asysrep PCCL range::

    AllReduce, p:0, c:2049000, d:7, r:0, w:2, h:6f1c0e2ab0e04b1b, t:0, b:-

placed exactly over the launching API call on its CPU thread ``[call start, call end)``,
so that the usual range-to-kernel correlation (launch call inside the range) finds it.

* ``c``: NCCL's count argument (``Out msg nelems`` for ReduceScatter, else ``In msg nelems``);
* ``d``: NCCL data type code; ``p``: reduction op read from the kernel name (``_Sum_`` 0,
  ``_Prod_`` 1, ``_Max_`` 2, ``_Min_`` 3, ``_Avg_`` 4; 0 when absent, as for RCCL's
  generic kernel);
* ``r``: the rank inside the process group (position of the trace's ``distributedInfo``
  rank in ``Process Group Ranks``), ``w``: ``Group size``;
* ``h``: 16 hex digits of a BLAKE2 hash of (process group name, ranks), equal on every rank
  of a communicator; ``t:0``, ``b:-`` (not recorded by Kineto).

A collective whose launch call is not in the trace gets no range.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import numpy as np

from asysstats.core.strings import StringPool

NCCL_DOMAIN = 1
DOMAIN_NAME = "NCCL"
COLLECTIVES = {
    "allreduce": "AllReduce", "all_reduce": "AllReduce", "broadcast": "Broadcast", "reduce": "Reduce",
    "allgather": "AllGather", "all_gather": "AllGather", "_allgather_base": "AllGather",
    "all_gather_into_tensor": "AllGather", "allgather_into_tensor_coalesced": "AllGather",
    "reduce_scatter": "ReduceScatter", "_reduce_scatter_base": "ReduceScatter",
    "reduce_scatter_tensor": "ReduceScatter", "reduce_scatter_tensor_coalesced": "ReduceScatter",
    "send": "Send", "recv": "Recv", "all_to_all": "AllToAll", "all_to_allv": "AllToAll",
    "alltoall": "AllToAll", "alltoall_base": "AllToAll", "gather": "Gather", "scatter": "Scatter",
}
DTYPES = {  # c10 scalar type name -> NCCL data type code
    "Char": 0, "Byte": 1, "Bool": 1, "UInt8": 1, "Int": 2, "UInt32": 3, "Long": 4, "UInt64": 5,
    "Half": 6, "Float": 7, "Double": 8, "BFloat16": 9, "Float8_e4m3fn": 10, "Float8_e5m2": 11,
}
REDUCTION = re.compile(r"_(Sum|Prod|Max|Min|Avg|PreMulSum|SumPostDiv)_")
REDUCTION_CODES = {"Sum": 0, "Prod": 1, "Max": 2, "Min": 3, "Avg": 4, "PreMulSum": 0, "SumPostDiv": 4}


def as_count(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, ArithmeticError):
        return -1


def group_ranks(value: Any) -> list[int]:
    """``Process Group Ranks`` (a list, or its text ``"[0, 1]"``) as integers."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [int(v) for v in value] if isinstance(value, list) and all(isinstance(v, int) for v in value) else []


def collective_text(kernel_name: str, args: dict[str, Any], rank: int) -> str:
    """The PCCL range text of one collective (see the module docstring)."""
    raw = str(args.get("Collective name") or "")
    name = COLLECTIVES.get(raw.lower()) or "".join(w[:1].upper() + w[1:] for w in raw.split("_") if w)
    count = as_count(args.get("Out msg nelems" if name == "ReduceScatter" else "In msg nelems"))
    ranks = group_ranks(args.get("Process Group Ranks"))
    size = as_count(args.get("Group size"))
    op = REDUCTION.search(kernel_name)
    digest = hashlib.blake2b(f"{args.get('Process Group Name')}|{ranks}".encode(), digest_size=8).hexdigest()
    return (f"{name}, p:{REDUCTION_CODES[op.group(1)] if op else 0}, c:{count}, "
            f"d:{DTYPES.get(str(args.get('dtype')), -1)}, r:{ranks.index(rank) if rank in ranks else rank}, "
            f"w:{size if size >= 0 else len(ranks)}, h:{digest}, t:0, b:-")


def collective_ranges(kernels: dict[str, np.ndarray], runtime: dict[str, np.ndarray],
                      texts: list[str], pool: StringPool) -> dict[str, np.ndarray]:
    """NCCL-domain ranges (``start``, ``end``, ``pid``, ``tid``, ``text``, ``eventType``) over
    the launch calls of the kernels with a collective (``kernels["collective"]`` indexes
    ``texts``), one per distinct (call, text), plus one domain-creation row per process."""
    rows = np.flatnonzero((kernels["collective"] >= 0) & (kernels["launch"] >= 0))
    text_ids = pool.intern(texts) if texts else np.empty(0, np.int64)
    pairs = np.unique(np.stack([kernels["launch"][rows], text_ids[kernels["collective"][rows]]], axis=1), axis=0)
    call, text = pairs[:, 0], pairs[:, 1]
    start = runtime["start"][call]
    ranges = {"start": start, "end": np.maximum(runtime["end"][call], start + 1), "pid": runtime["pid"][call],
              "tid": runtime["tid"][call], "text": text, "eventType": np.full(len(call), 59, np.int64)}
    by_pid = np.argsort(ranges["pid"], kind="stable")
    pids, first = np.unique(ranges["pid"][by_pid], return_index=True)
    creation = {"start": np.minimum.reduceat(start[by_pid], first) if len(pids) else start[:0],
                "end": np.full(len(pids), -1, np.int64), "pid": pids, "tid": ranges["tid"][by_pid][first],
                "text": np.repeat(pool.intern([DOMAIN_NAME]), len(pids)),
                "eventType": np.full(len(pids), 75, np.int64)}
    return {k: np.concatenate([ranges[k], creation[k]]) for k in ranges}
