"""One pass over Kineto trace events into compact typed columns (8 bytes a value).

Only the fields the logical tables need are kept, in ``array('q')`` columns per event
kind; names are numbered in a dict (one entry per distinct name) and interned into the
string pool later. Times stay in integer nanoseconds (:func:`to_ns`).

Event kinds (``ph: "X"`` by ``cat``; 2021 traces use the capitalised names):

* device work: ``kernel``/``Kernel`` (and MTIA's ``mtia_ccp_events``), ``gpu_memcpy``/
  ``Memcpy``, ``gpu_memset``/``Memset``;
* API calls: ``cuda_runtime``, ``cuda_driver`` (HIP calls use the same categories),
  ``Runtime`` and any other ``*_runtime``/``*_driver`` category;
* CPU ranges: ``cpu_op``/``Operator`` and ``user_annotation``;
* ``ph: "M"`` ``process_name``/``thread_name`` metadata.

Everything else (flows, instants, ``python_function``, ``gpu_user_annotation``, counters,
the ``Trace`` span) is skipped.
"""

from __future__ import annotations

import json
from array import array
from typing import Any

import numpy as np

from asysstats.reading.kineto.parse import to_ns

KERNEL_CATS = frozenset({"kernel", "Kernel", "mtia_ccp_events"})
MEMCPY_CATS = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATS = frozenset({"gpu_memset", "Memset"})
SHAPED_CATS = frozenset({"cpu_op", "Operator"})
# The fields of a CPU op's text (docs/operators.md) and the ``args`` they come from.
SHAPE_ARGS = (("sizes", "Input Dims"), ("types", "Input type"), ("strides", "Input Strides"),
              ("concrete", "Concrete Inputs"), ("flops", "flops"))
COLLECTIVE_ARGS = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
                   "Process Group Name", "Process Group Ranks")

DEVICE_FIELDS = ("start", "dur", "name", "pid", "deviceId", "contextId", "streamId", "correlationId", "bytes")
KERNEL_FIELDS = DEVICE_FIELDS[:-1] + (
    "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
    "graphNodeId", "graphId", "collective")
RUNTIME_FIELDS = ("start", "dur", "name", "pid", "tid", "correlationId", "bytes")
RANGE_FIELDS = ("start", "dur", "name", "pid", "tid")


def is_runtime(cat: str) -> bool:
    return cat == "Runtime" or cat.endswith("_runtime") or cat.endswith("_driver")


def as_int(value: Any, default: int = -1) -> int:
    """An integer field that may be written as int, decimal or numeric text."""
    if type(value) is int:
        return value
    try:
        return int(value)
    except (TypeError, ValueError, ArithmeticError):
        return default


def triple(value: Any) -> list[Any]:
    """``grid``/``block`` as three values (missing trailing dimensions are 1, absence 0)."""
    if not isinstance(value, list) or not value:
        return [0, 0, 0]
    return (value + [1, 1])[:3]


class Columns:
    """Append-only int64 rows of one event kind, stored flat (one C call per row)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.flat = array("q")
        self.add = self.flat.extend  # takes one row: a tuple of len(names) ints

    def numpy(self) -> dict[str, np.ndarray]:
        """The columns, once: the row buffer is released."""
        rows = np.frombuffer(self.flat, dtype=np.int64).reshape(-1, len(self.names)) if self.flat else \
            np.empty((0, len(self.names)), np.int64)
        columns = {n: rows[:, i].copy() for i, n in enumerate(self.names)}
        del rows
        self.flat = array("q")
        self.add = self.flat.extend
        return columns


class Collector:
    """Feed every event to :meth:`add`; then read the columns and metadata dicts."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.kernels = Columns(KERNEL_FIELDS)
        self.memcpy = Columns(DEVICE_FIELDS)
        self.memset = Columns(DEVICE_FIELDS)
        self.runtime = Columns(RUNTIME_FIELDS)
        self.ranges = Columns(RANGE_FIELDS)
        self.collectives: dict[str, int] = {}  # distinct (kernel name, collective args) as JSON
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self._text_ids: dict[str, int] = {}
        self._handlers: dict[str, Any] = {
            **dict.fromkeys(SHAPED_CATS, self._shaped_range), "user_annotation": self._range,
            **dict.fromkeys(KERNEL_CATS, self._kernel),
            **dict.fromkeys(MEMCPY_CATS, lambda e: self._device(self.memcpy, e)),
            **dict.fromkeys(MEMSET_CATS, lambda e: self._device(self.memset, e))}

    def name_index(self, name: Any) -> int:
        name = name if isinstance(name, str) else str(name)
        index = self.names.get(name)
        if index is None:
            index = self.names[name] = len(self.names)
        return index

    def thread_id(self, value: Any) -> int:
        """A pid/tid: integers as they are; ``"25738"`` as 25738; other text (``"stream 7"``,
        ``"Spans"``) numbered downwards from 2**24 - 1."""
        if type(value) is int:
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        key = str(value)
        if key not in self._text_ids:
            self._text_ids[key] = 0xFFFFFF - len(self._text_ids)
        return self._text_ids[key]

    def add(self, event: dict[str, Any]) -> None:
        ph = event.get("ph")
        if ph == "X":
            cat = event.get("cat")
            if isinstance(cat, str):
                handler = self._handlers.get(cat, False)
                if handler is False:
                    handler = self._handlers[cat] = self._runtime if is_runtime(cat) else None
                if handler is not None:
                    handler(event)
        elif ph == "M":
            self._metadata(event)

    def _range(self, event: dict[str, Any], name: Any = None) -> None:
        self.ranges.add((to_ns(event.get("ts", 0)), to_ns(event.get("dur", 0)),
                         self.name_index(event.get("name", "") if name is None else name),
                         self.thread_id(event.get("pid")), self.thread_id(event.get("tid"))))

    def _shaped_range(self, event: dict[str, Any]) -> None:
        """A CPU op; with ``record_shapes`` its name becomes the autograd form with the
        recorded shapes, data types, strides, scalar values and Kineto's FLOP count, as far as
        the event holds them: ``aten::mm, sizes = [[8, 4], [4, 2]], types = ['float', 'float'],
        strides = [[4, 1], [2, 1]], concrete = ['', '']`` (the operator models read them)."""
        args = event.get("args")
        if isinstance(args, dict) and "Input Dims" in args:
            fields = "".join(f", {field} = {args[arg]}" for field, arg in SHAPE_ARGS if arg in args)
            self._range(event, f"{event.get('name', '')}{fields}")
        else:
            self._range(event)

    def _runtime(self, event: dict[str, Any]) -> None:
        args = event.get("args") or {}
        size = args.get("bytes", args.get("size"))
        self.runtime.add((to_ns(event.get("ts", 0)), to_ns(event.get("dur", 0)), self.name_index(event.get("name", "")),
                          self.thread_id(event.get("pid")), self.thread_id(event.get("tid")),
                          as_int(args.get("correlation")), as_int(size)))

    def _device_values(self, event: dict[str, Any], args: dict[str, Any]) -> tuple[int, ...]:
        pid = self.thread_id(event.get("pid"))
        stream = as_int(args.get("stream"), as_int(event.get("tid")))
        return (to_ns(event.get("ts", 0)), to_ns(event.get("dur", 0)), self.name_index(event.get("name", "")), pid, as_int(args.get("device"), pid),
                as_int(args.get("context"), 0), stream, as_int(args.get("correlation")))

    def _device(self, columns: Columns, event: dict[str, Any]) -> None:
        args = event.get("args") or {}
        columns.add(self._device_values(event, args) + (as_int(args.get("bytes")),))

    def _kernel(self, event: dict[str, Any]) -> None:
        args = event.get("args") or {}
        dims = [as_int(v, 0) for v in triple(args.get("grid")) + triple(args.get("block"))]
        collective = -1
        if "Collective name" in args:
            key = json.dumps([event.get("name", "")] + [args.get(k) for k in COLLECTIVE_ARGS], default=str)
            collective = self.collectives.setdefault(key, len(self.collectives))
        self.kernels.add((*self._device_values(event, args), *dims, as_int(args.get("registers per thread"), 0),
                          as_int(args.get("shared memory"), 0), as_int(args.get("graph node id")),
                          as_int(args.get("graph id")), collective))

    def _metadata(self, event: dict[str, Any]) -> None:
        kind = event.get("name")
        if kind != "process_name" and kind != "thread_name":
            return
        args = event.get("args")
        if not isinstance(args, dict) or "name" not in args:
            return
        pid = self.thread_id(event.get("pid"))
        if kind == "process_name":
            self.process_names.setdefault(pid, str(args["name"]))
        else:
            self.thread_names.setdefault((pid, self.thread_id(event.get("tid"))), str(args["name"]))
