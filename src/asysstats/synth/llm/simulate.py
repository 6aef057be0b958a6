"""Simulate a program for every device and variant at once: numpy over a (variants, devices)
grid, a Python loop over the program's ops only.

Each device's host thread runs the ops in order; an API call launches its device work,
which starts after the call starts (usually after it returns) and after the previous
work of its stream; a PCCL kernel ends on every rank shortly after the last rank joined.
Variants are independent draws of every duration, so that tiled steps differ. Times are
float ns relative to the step's start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.synth.llm.program import Call, Domain, Gap, Mark, OsCall, Pop, Program, Push, RangeEnd, RangeStart, Work
from asysstats.synth.writer import NULL

TX_STAGES = ("GPUWait", "Transmit", "SendWait")
RX_STAGES = ("RecvWait", "Transmit")


@dataclass
class Template:
    """One kind of step, simulated: per table, structure columns (R,) and times (V, D, R)."""

    kind: str
    tables: dict[str, dict[str, np.ndarray]]
    duration: np.ndarray  # (V,) ns
    calls: int
    op_ids: int
    seqs: int


class _Table:
    def __init__(self) -> None:
        self.fields: list[dict[str, object]] = []
        self.start: list[np.ndarray] = []
        self.end: list[np.ndarray] = []

    def add(self, start: np.ndarray, end: np.ndarray | None, **fields: object) -> int:
        self.fields.append(fields)
        self.start.append(start)
        self.end.append(np.full_like(start, np.nan) if end is None else end)
        return len(self.fields) - 1

    def columns(self) -> dict[str, np.ndarray]:
        """Integer fields as int64 (``None`` -> NULL), other fields as object arrays; times (V, D, R)."""
        out = {}
        for name in self.fields[0]:
            values = [f[name] for f in self.fields]
            if all(isinstance(v, int) or v is None for v in values):
                out[name] = np.array([NULL if v is None else v for v in values], dtype=np.int64)
            else:
                out[name] = np.array(values, dtype=object)
        out["start"] = np.stack(self.start, axis=-1)
        out["end"] = np.stack(self.end, axis=-1)
        return out


class Simulator:
    def __init__(self, rng: np.random.Generator, variants: int, devices: int) -> None:
        self.rng = rng
        self.shape = (variants, devices)
        self.host = rng.uniform(0.0, 25e3, self.shape)  # ranks receive the step's inputs at different times
        self.free: dict[int, np.ndarray] = {}
        self.tables: dict[str, _Table] = {}
        self.stack: list[int] = []
        self.open: dict[str, int] = {}
        self.calls = 0

    def draw(self, us: float, sigma: float = 0.08) -> np.ndarray:
        return us * 1e3 * self.rng.lognormal(0.0, sigma, self.shape)

    def table(self, name: str) -> _Table:
        return self.tables.setdefault(name, _Table())

    def advance(self, us: float) -> np.ndarray:
        start = self.host.copy()
        self.host = self.host + self.draw(us)
        return start

    def run(self, program: Program) -> Template:
        for op in program.ops:
            self.step(op)
        busy = np.max(list(self.free.values()), axis=0) if self.free else self.host
        duration = np.maximum(self.host, busy).max(axis=1) + self.draw(20.0)[:, 0]
        tables = {name: t.columns() for name, t in self.tables.items()}
        return Template(program.kind, tables, duration, self.calls, program.op_ids, program.seqs)

    def step(self, op) -> None:
        hgtx = self.table("hgtx")
        if isinstance(op, Push):
            self.stack.append(hgtx.add(self.advance(0.4), None, text=op.text, domain=op.domain, eventType=59,
                                       thread="main", endThread=None))
        elif isinstance(op, Pop):
            hgtx.end[self.stack.pop()] = self.advance(0.3)
        elif isinstance(op, Mark):
            hgtx.add(self.host + (0 if op.thread == "main" else self.draw(3.0)), None, text=op.text, domain=None,
                     eventType=34, thread=op.thread, endThread=None)
        elif isinstance(op, Domain):
            hgtx.add(self.advance(2.0), None, text=op.name, domain=op.name, eventType=75, thread="main", endThread=None)
        elif isinstance(op, RangeStart):
            self.open[op.key] = hgtx.add(self.advance(0.5), None, text=op.text, domain=None, eventType=60,
                                         thread=op.thread, endThread=None)
        elif isinstance(op, RangeEnd):
            row = self.open.pop(op.key)
            hgtx.end[row] = self.advance(0.5)
            hgtx.fields[row]["endThread"] = op.thread
        elif isinstance(op, Gap):
            self.host = self.host + self.draw(op.us, 0.25)
        elif isinstance(op, OsCall):
            self.os_call(op)
        elif isinstance(op, Call):
            self.call(op)
        else:
            raise TypeError(f"unknown op {op!r}")

    def os_call(self, op: OsCall) -> None:
        if op.thread == "main":
            start = self.host.copy()
            end = start + self.draw(op.us, 0.2)
            self.host = end + self.draw(0.5)
        else:
            start = self.host + self.draw(2.0)
            end = start + self.draw(op.us, 0.2)
        self.table("osrt").add(start, end, name=op.name, thread=op.thread, ret=op.ret)

    def call(self, op: Call) -> None:
        index, start = self.calls, self.host.copy()
        self.calls += 1
        end = start + self.draw(op.us, 0.15)
        launch = start + (end - start) * self.rng.lognormal(np.log(1.45), 0.3, self.shape)
        for work in op.work:
            self.device_work(work, index, launch)
        if op.sync:
            idle = np.max([f for f in self.free.values()], axis=0) if self.free else start
            end = np.maximum(end, idle + self.draw(2.0))
        if op.memory is not None:
            operation, address, nbytes = op.memory
            self.table("memory_usage").add(start + 0.6 * (end - start), None, call=index, operation=operation,
                                           address=address, bytes=nbytes)
        for i, (graph, node, original) in enumerate(op.nodes):
            at = start + (end - start) * (0.2 + 0.6 * i / len(op.nodes))
            self.table("graph_nodes").add(at, at + 0.1 * (end - start), call=index, graphId=graph, graphNodeId=node,
                                          originalGraphNodeId=original, api=op.api)
        if op.inner_os:
            self.table("osrt").add(start + 0.1 * (end - start), end - 0.1 * (end - start), name=op.inner_os,
                                   thread="main", ret=0)
        self.table("runtime").add(start, end, call=index, api=op.api, callchain=op.callchain, ret=op.ret)
        self.host = end + self.draw(0.8)

    def device_work(self, work: Work, call: int, launch: np.ndarray) -> None:
        free = self.free.get(work.stream, np.zeros(self.shape))
        start = np.maximum(launch, free)
        if work.collective:
            last = start.max(axis=1, keepdims=True)
            end = last + self.draw(work.us, 0.05) + self.rng.uniform(0.0, 1.5e3, self.shape)
            if work.chained:  # variant 0: each rank overlaps only its neighbours in start order
                step = work.us * 1e3
                start[0] = last[0] + step * np.argsort(np.argsort(start[0]))
                end[0] = start[0] + 1.5 * step
            if work.proxy:
                self.stages(start, end)
        else:
            end = start + self.draw(work.us, 0.06)
        self.free[work.stream] = end
        graph, node = work.graph or (None, None)
        self.table(work.table).add(start, end, call=call, key=work.key, bytes=work.bytes, copyKind=work.copy_kind,
                                   srcKind=work.src_kind, dstKind=work.dst_kind, graphId=graph, graphNodeId=node,
                                   streamId=work.stream)

    def stages(self, start: np.ndarray, end: np.ndarray) -> None:
        """PCCL proxy-thread stages of one collective on two channels."""
        span = end - start
        for channel in (0, 1):
            cut = np.sort(self.rng.uniform(0.05, 0.95, self.shape + (2,)), axis=-1)
            tx = [start, start + cut[..., 0] * span, end - (1 - cut[..., 1]) * span * 0.5, end]
            rx = [start + 0.03 * span, start + (0.03 + 0.9 * cut[..., 0]) * span, end - 0.02 * span]
            for stages, bounds, kind in ((TX_STAGES, tx, "TX"), (RX_STAGES, rx, "RX")):
                for name, lo, hi in zip(stages, bounds, bounds[1:]):
                    self.table("pccl_stages").add(lo, hi, channelId=channel, channelType=kind, stage=name)


def simulate(program: Program, rng: np.random.Generator, variants: int, devices: int) -> Template:
    return Simulator(rng, variants, devices).run(program)
