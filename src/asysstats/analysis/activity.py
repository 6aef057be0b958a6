"""Helpers shared by the HGGC activity rules: key joins, dimension texts, device and
memory-kind labels. Each works per distinct value, never per event."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from asysstats.analysis.inputs import Inputs
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import dense_group_ids
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA
from asysstats.reading.schema import MEM_KIND_LABELS, MEMCPY_KIND_LABELS, NSYS, NSYS_MEM_KIND_LABELS


def row_index(table_keys: Sequence[np.ndarray], query_keys: Sequence[np.ndarray]) -> np.ndarray:
    """Row of the table whose keys equal each query's keys (its first such row), -1 when none."""
    n = len(table_keys[0])
    if n == 0:
        return np.full(len(query_keys[0]), -1, dtype=np.int64)
    code, _ = dense_group_ids([np.concatenate([t, q]).astype(np.int64) for t, q in zip(table_keys, query_keys)])
    first = np.full(int(code.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, code[:n], np.arange(n))
    found = first[code[n:]]
    return np.where(found < n, found, -1)


def take_or_na(values: np.ndarray, rows: np.ndarray, missing: int = NA) -> np.ndarray:
    """``values[rows]``, with ``missing`` (``NA``; -1 for string ids) where ``rows`` is -1."""
    if len(values) == 0:
        return np.full(len(rows), missing, dtype=np.int64)
    return np.where(rows >= 0, np.asarray(values)[np.maximum(rows, 0)], missing)


def triple_ids(pool: StringPool, x: np.ndarray, y: np.ndarray, z: np.ndarray, template: str = "{} {} {}") -> np.ndarray:
    """String ids of ``template`` filled with x, y, z per row (grid and block dimensions: ``"x y z"``)."""
    if len(x) == 0:
        return np.empty(0, np.int64)
    index, (xs, ys, zs) = dense_group_ids([np.asarray(v, dtype=np.int64) for v in (x, y, z)])
    return pool.intern(template.format(a, b, c) for a, b, c in zip(xs.tolist(), ys.tolist(), zs.tolist()))[index]


def device_names(inputs: Inputs) -> dict[int, str]:
    """Device name by device id (``TARGET_INFO_PPU`` / ``TARGET_INFO_GPU``)."""
    devices = inputs.table("devices", ("id", "name"))
    names = inputs.strings.lookup(devices["name"])
    return {int(d): n for d, n in zip(devices["id"].tolist(), names) if n is not None}


def device_label_ids(inputs: Inputs, device_ids: np.ndarray) -> np.ndarray:
    """String ids of ``"<device name> (<id>)"`` per row; ``"(<id>)"`` for an unlisted device."""
    names = device_names(inputs)
    uniq, inverse = distinct(device_ids)
    ids = inputs.strings.intern(f"{names.get(d, '')} ({d})".lstrip() for d in uniq.tolist())
    return ids[inverse] if len(ids) else np.empty(0, np.int64)


def kind_labels(inputs: Inputs, enum: str) -> dict[int, str]:
    """Labels of the ``memcpy_kinds`` or ``mem_kinds`` enumeration: the report's table, else
    the built-in numbering of the report's dialect."""
    if inputs.has(enum):
        table = inputs.table(enum, ("id", "label"))
        labels = inputs.strings.lookup(table["label"])
        return {int(i): s for i, s in zip(table["id"].tolist(), labels) if s is not None}
    if enum == "memcpy_kinds":
        return dict(MEMCPY_KIND_LABELS)
    return dict(NSYS_MEM_KIND_LABELS if inputs.dialect == NSYS else MEM_KIND_LABELS)


def kind_label_ids(inputs: Inputs, enum: str, kinds: np.ndarray, template: str = "{}") -> np.ndarray:
    """String ids of ``template.format(label)`` per row; -1 (printed ``-``) where the kind is NULL."""
    labels = kind_labels(inputs, enum)
    kinds = np.asarray(kinds, dtype=np.int64)
    out = np.full(len(kinds), -1, dtype=np.int64)
    known = kinds >= 0
    uniq, inverse = distinct(kinds[known])
    ids = inputs.strings.intern(template.format(labels.get(k, "Unknown")) for k in uniq.tolist())
    if len(ids):
        out[known] = ids[inverse]
    return out


def short_copy_kind(label: str) -> str:
    """``Host-to-Device`` -> ``HtoD``; ``Unified Device-to-Host`` -> ``Unified DtoH``."""
    head, sep, tail = label.rpartition("-to-")
    if not sep or not head or not tail:
        return label
    prefix, _, source = head.rpartition(" ")
    return f"{prefix} {source[0]}to{tail[0]}".lstrip()


def memcpy_name_ids(inputs: Inputs, copy_kinds: np.ndarray, dst_kinds: np.ndarray) -> np.ndarray:
    """String ids of ``Memcpy <kind> (<destination kind>)`` per memcpy."""
    copy_labels, mem_labels = kind_labels(inputs, "memcpy_kinds"), kind_labels(inputs, "mem_kinds")
    inverse, (copies, dsts) = dense_group_ids([copy_kinds, dst_kinds])
    texts = []
    for copy_kind, dst_kind in zip(copies.tolist(), dsts.tolist()):
        dst = f" ({mem_labels.get(dst_kind, 'Unknown').lower()})" if dst_kind >= 0 else ""
        texts.append(f"Memcpy {short_copy_kind(copy_labels.get(copy_kind, 'Unknown'))}{dst}")
    ids = inputs.strings.intern(texts)
    return ids[inverse] if len(ids) else np.empty(0, np.int64)
