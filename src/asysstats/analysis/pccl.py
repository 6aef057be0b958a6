"""PCCL operator annotations: HGTX ranges of the ``NCCL`` domain whose text reads
``AllReduce, p:0, c:83886080, d:9, r:1, w:4, h:9da3d23b9ccef54c, t:1, b:0x.../0x...``.

Parsed once per distinct range name. The merge key drops the per-rank fields ``r`` and
``b``, so that the ranks of one communication share it. Bytes moved follow the bus
factors of nccl-tests (docs/decisions.md D22).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from asysstats.compute.distinct import distinct
from asysstats.core.strings import StringPool

DOMAIN = re.compile(r"(?:NCCL|PCCL):", re.IGNORECASE)
OPERATOR = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
PER_RANK_FIELDS = ("r", "b")
# ncclDataType_t numbering -> element size in bytes
ELEMENT_SIZE = {0: 1, 1: 1, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 1, 11: 1}
# Bytes one rank moves per element of the count `c:` (docs/decisions.md D22), by factor kind:
# 2 -> 2(n-1)/n (AllReduce: c is the whole buffer); 3 -> n-1 (AllGather, ReduceScatter: c is one rank's
# part, the whole buffer n x c, of which (n-1)/n moves); 1 -> (n-1)/n (AllToAll: c is one rank's whole send
# buffer); 0 -> 1 (Broadcast, Reduce, Send, Recv and any other operator).
FACTOR_KIND = {"allreduce": 2, "allgather": 3, "reducescatter": 3, "alltoall": 1}
POINT_TO_POINT = ("send", "recv")


@dataclass(frozen=True)
class Annotations:
    """The PCCL annotations among some names: per annotation ``text`` (id of the text without
    the domain), ``key`` (merge key id), ``count``, ``element`` size (NaN unknown), ``ranks`` (0
    when absent), ``factor_kind`` and ``p2p``; and per name, the row of its annotation here
    (``of``, -1 for a name that is not one)."""

    of: np.ndarray
    text: np.ndarray
    key: np.ndarray
    count: np.ndarray
    element: np.ndarray
    ranks: np.ndarray
    factor_kind: np.ndarray
    p2p: np.ndarray


def parse(text: str | None) -> tuple | None:
    """(text, key, count, element size, ranks, factor kind, p2p) of one range name, or None."""
    text = text or ""
    match = DOMAIN.match(text)
    if match is None:
        return None
    body = text[match.end():].strip()
    fields = [f.strip() for f in body.split(",")]
    if not OPERATOR.fullmatch(fields[0]):
        return None
    params = dict(f.split(":", 1) for f in fields[1:] if ":" in f)
    params = {k.strip(): v.strip() for k, v in params.items()}
    count, dtype, ranks = (_int(params.get(k)) for k in ("c", "d", "w"))
    if count is None:
        return None
    op = fields[0].lower().removeprefix("nccl").removeprefix("pccl")
    key = "|".join([fields[0]] + [f"{k}:{v}" for k, v in sorted(params.items()) if k not in PER_RANK_FIELDS])
    element = np.nan if dtype is None else ELEMENT_SIZE.get(dtype, np.nan)
    return (body, key, count, element, ranks or 0, FACTOR_KIND.get(op, 0), op in POINT_TO_POINT)


def without_rank_fields(text: str) -> str:
    """A PCCL annotation's text without its per-rank fields (``r``, ``b``), the same on every
    rank of one communication; any other text as it is."""
    if parse(text) is None:
        return text
    head, *fields = text.split(",")
    return ",".join([head] + [f for f in fields if f.split(":", 1)[0].strip() not in PER_RANK_FIELDS])


def _int(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def annotate(pool: StringPool, names: np.ndarray) -> Annotations:
    """Parse every distinct name id once. The fields are kept per distinct annotation, not per
    name: a report's ranges are mostly not PCCL's (5.7 M ranges: 290 MB of fields per name)."""
    names = np.asarray(names, dtype=np.int64)
    has = np.flatnonzero(names >= 0)
    uniq, slot = distinct(names[has]) if len(has) else (np.empty(0, np.int64), np.empty(0, np.int64))
    parsed = [parse(t) for t in pool.lookup(uniq)]
    valid = np.array([p is not None for p in parsed], dtype=bool)
    fields = list(zip(*[p for p in parsed if p is not None])) or [()] * 7
    row = np.full(len(uniq), -1, np.int64)
    row[valid] = np.arange(np.count_nonzero(valid))
    of = np.full(len(names), -1, np.int64)
    of[has] = row[slot]
    numbers = [np.asarray(f, dtype) for f, dtype in zip(fields[2:], (np.int64, np.float64, np.int64, np.int64, bool))]
    return Annotations(of, pool.intern(fields[0]), pool.intern(fields[1]), *numbers)


def rank_bytes(count: np.ndarray, element: np.ndarray, ranks: np.ndarray, factor_kind: np.ndarray) -> np.ndarray:
    """Bytes one rank moves: bus factor(n) x count x element size (docs/decisions.md D22)."""
    n = np.maximum(ranks, 1).astype(np.float64)
    factor = np.select([factor_kind == 2, factor_kind == 3, factor_kind == 1], [2.0 * (n - 1) / n, n - 1, (n - 1) / n],
                       1.0)
    return factor * count * element
