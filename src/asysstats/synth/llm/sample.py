"""Assemble the sample: simulate each kind of step, tile the steps, map rows onto report columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.synth.llm import static
from asysstats.synth.llm.catalog import BLOCK_STEPS, DEVICES, DOMAINS, KERNELS, PROMPT
from asysstats.synth.llm.simulate import Template, simulate
from asysstats.synth.llm.steps import DECODE, PREFILL, forward, shutdown, startup
from asysstats.synth.llm.tile import Schedule, TextFiller, registered, schedule, tile
from asysstats.synth.writer import NULL, ReportWriter

VARIANTS = 6
ANALYSIS_START = 1_000_000_000
SESSION_UTC_NS = 1_767_225_600_000_000_000
EVENT_TABLES = ("runtime", "kernels", "memcpy", "memset", "hgtx", "osrt", "graph_nodes", "memory_usage",
                "pccl_stages")
Columns = dict[str, np.ndarray]
EventColumns = dict[str, np.ndarray | int]  # a table's columns: per event, or one value for every event


def build(writer: ReportWriter, scale: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    programs = (startup(), forward(PREFILL), forward(DECODE), shutdown())
    templates = {p.kind: simulate(p, rng, VARIANTS, DEVICES) for p in programs}
    kinds = np.array(["startup"] + (["prefill"] + ["decode"] * (BLOCK_STEPS - 1)) * scale + ["shutdown"])
    kvlen = np.concatenate(([0], np.tile(PROMPT + np.arange(BLOCK_STEPS), scale), [0]))
    sched = schedule(templates, list(kinds), rng, ANALYSIS_START + 2_000_000, kvlen)
    events = Events(writer, sched, rng)
    busy = events.write(templates, batches=events.batches(np.flatnonzero(kinds == "prefill")))
    stop = int(sched.end[-1]) + 1_000_000
    static.write_static(writer, rng)
    static.write_metrics(writer, busy, ANALYSIS_START, stop, rng)
    writer.add("analysis", duration=stop - ANALYSIS_START, startTime=ANALYSIS_START, stopTime=stop)
    writer.add("session_start", utcEpochNs=SESSION_UTC_NS)


class Events:
    """Maps tiled template rows (``rows`` per template row, ``ev`` per event) onto table columns."""

    def __init__(self, writer: ReportWriter, sched: Schedule, rng: np.random.Generator) -> None:
        self.w, self.sched, self.rng = writer, sched, rng
        self.texts = TextFiller(sched, rng, experts=128, topk=8)

    def write(self, templates: dict[str, Template], batches: EventColumns) -> list[tuple[np.ndarray, np.ndarray]]:
        """Writes every event table sorted by start; returns each device's busy intervals."""
        busy = []
        for table in EVENT_TABLES:
            parts = [getattr(self, table)(t.tables[table], tile(t, table, self.sched))
                     for t in templates.values() if table in t.tables] + ([batches] if table == "hgtx" else [])
            columns = {name: np.concatenate([np.broadcast_to(p[name], len(p["start"])) for p in parts])
                       for name in parts[0]}
            order = np.argsort(columns["start"], kind="stable")
            columns = {name: values[order] for name, values in columns.items()}
            if table == "hgtx":
                columns["rangeId"] = range_ids(columns)
            if table in ("kernels", "memcpy", "memset"):
                busy.append((columns["deviceId"], columns["start"], columns["end"]))
            self.w.add(table, **columns)
        device, start, end = (np.concatenate(c) for c in zip(*busy))
        return [(start[device == d], end[device == d]) for d in range(DEVICES)]

    def correlation(self, rows: Columns, ev: Columns) -> np.ndarray:
        return self.sched.corr_base[ev["step"]] + rows["call"][ev["row"]]

    def device_work(self, rows: Columns, ev: Columns) -> EventColumns:
        return dict(start=ev["start"], end=ev["end"], deviceId=ev["device"], contextId=1,
                    streamId=rows["streamId"][ev["row"]], correlationId=self.correlation(rows, ev),
                    globalPid=static.GLOBAL_PID[ev["device"]], graphNodeId=rows["graphNodeId"][ev["row"]])

    def kernels(self, rows: Columns, ev: Columns) -> EventColumns:
        specs = [KERNELS[k] for k in rows["key"]]
        per_row = {
            "demangledName": [self.w.string(s.demangled) for s in specs],
            "shortName": [self.w.string(s.short) for s in specs],
            "mangledName": [self.w.string(s.name) for s in specs],
            **{f"grid{a}": [s.grid[i] for s in specs] for i, a in enumerate("XYZ")},
            **{f"block{a}": [s.block[i] for s in specs] for i, a in enumerate("XYZ")},
            "registersPerThread": [s.registers for s in specs],
            "staticSharedMemory": [s.static_smem for s in specs],
            "dynamicSharedMemory": [s.dynamic_smem for s in specs],
        }
        columns = {name: np.array(values, dtype=np.int64)[ev["row"]] for name, values in per_row.items()}
        return {**self.device_work(rows, ev), **columns, "graphId": rows["graphId"][ev["row"]]}

    def memcpy(self, rows: Columns, ev: Columns) -> EventColumns:
        return {**self.device_work(rows, ev), **{c: rows[c][ev["row"]] for c in ("bytes", "copyKind", "srcKind",
                                                                                 "dstKind")}}

    def memset(self, rows: Columns, ev: Columns) -> EventColumns:
        return {**self.device_work(rows, ev), "value": 0, "bytes": rows["bytes"][ev["row"]],
                "memKind": rows["dstKind"][ev["row"]]}

    def runtime(self, rows: Columns, ev: Columns) -> EventColumns:
        return dict(start=ev["start"], end=ev["end"], globalTid=static.GLOBAL_TID["main"][ev["device"]],
                    correlationId=self.correlation(rows, ev), nameId=self.w.strings(rows["api"])[ev["row"]],
                    returnValue=rows["ret"][ev["row"]],
                    callchainId=static.callchain_ids(rows["callchain"], ev["row"], ev["device"]))

    def osrt(self, rows: Columns, ev: Columns) -> EventColumns:
        return dict(start=ev["start"], end=ev["end"], nameId=self.w.strings(rows["name"])[ev["row"]],
                    globalTid=static.thread_ids(rows["thread"], ev["row"], ev["device"]),
                    returnValue=rows["ret"][ev["row"]], nestingLevel=0)

    def graph_nodes(self, rows: Columns, ev: Columns) -> EventColumns:
        return dict(start=ev["start"], end=ev["end"], globalTid=static.GLOBAL_TID["main"][ev["device"]],
                    correlationId=self.correlation(rows, ev), nameId=self.w.strings(rows["api"])[ev["row"]],
                    **{c: rows[c][ev["row"]] for c in ("graphId", "graphNodeId", "originalGraphNodeId")})

    def memory_usage(self, rows: Columns, ev: Columns) -> EventColumns:
        return dict(start=ev["start"], globalPid=static.GLOBAL_PID[ev["device"]],
                    globalTid=static.GLOBAL_TID["main"][ev["device"]], deviceId=ev["device"], contextId=1,
                    address=rows["address"][ev["row"]], bytes=rows["bytes"][ev["row"]], memKind=3, accessFlags=1,
                    memoryOperationType=rows["operation"][ev["row"]], correlationId=self.correlation(rows, ev))

    def pccl_stages(self, rows: Columns, ev: Columns) -> EventColumns:
        return dict(start=ev["start"], end=ev["end"], globalTid=static.GLOBAL_TID["proxy"][ev["device"]],
                    deviceId=ev["device"], channelId=rows["channelId"][ev["row"]],
                    channelType=rows["channelType"][ev["row"]], stageNameId=self.w.strings(rows["stage"])[ev["row"]])

    def hgtx(self, rows: Columns, ev: Columns) -> EventColumns:
        """Registered texts (``textId``) where only the rank varies, inline ``text`` otherwise."""
        n_rows = len(rows["text"])
        text = np.full(len(ev["row"]), None, dtype=object)
        text_ids = np.full((n_rows, DEVICES), NULL, dtype=np.int64)
        for r, (pattern, event_type) in enumerate(zip(rows["text"], rows["eventType"])):
            if event_type != 75 and registered(pattern):
                text_ids[r] = self.w.strings(pattern.format(rank=d) for d in range(DEVICES))
            else:  # the events of template row r: every n_rows-th from r
                at = slice(r, None, n_rows)
                text[at] = self.texts.fill(pattern, ev["step"][at], ev["device"][at]).to_numpy(zero_copy_only=False)
        domain = np.array([DOMAINS.index(d) + 1 if isinstance(d, str) else 0 for d in rows["domain"]])
        return dict(start=ev["start"], end=ev["end"], eventType=rows["eventType"][ev["row"]],
                    globalTid=static.thread_ids(rows["thread"], ev["row"], ev["device"]),
                    endGlobalTid=static.thread_ids(rows["endThread"], ev["row"], ev["device"]),
                    domainId=domain[ev["row"]], text=text, textId=text_ids[ev["row"], ev["device"]])

    def batches(self, prefill_steps: np.ndarray) -> EventColumns:
        """Per batch of requests and process: a start/end range from the scheduler thread to the main
        thread over the batch's steps, and a mark when the scheduler admits it."""
        n = len(prefill_steps) * DEVICES
        last_step = np.append(prefill_steps[1:], len(self.sched.start) - 1) - 1
        device = np.tile(np.arange(DEVICES), len(prefill_steps))
        start = np.repeat(self.sched.start[prefill_steps], DEVICES) + self.rng.integers(2_000, 9_000, n)
        end = np.repeat(self.sched.end[last_step], DEVICES) - self.rng.integers(1_000, 5_000, n)
        batch = pa.array(np.repeat(np.arange(len(prefill_steps)), DEVICES)).cast(pa.string())
        labels = [pc.binary_join_element_wise(prefix, batch, "").to_numpy(zero_copy_only=False)
                  for prefix in ("request batch ", "scheduler: admitted batch ")]
        sched = static.GLOBAL_TID["sched"][device]
        return dict(start=np.concatenate([start, start - 1_000]), end=np.concatenate([end, np.full(n, NULL)]),
                    eventType=np.repeat([60, 34], n), globalTid=np.tile(sched, 2),
                    endGlobalTid=np.concatenate([static.GLOBAL_TID["main"][device], np.full(n, NULL)]),
                    domainId=0, text=np.concatenate(labels), textId=NULL)


def range_ids(columns: Columns) -> np.ndarray:
    """Start/end ranges get ids counted per process in start order (rows are sorted by start)."""
    out = np.full(len(columns["start"]), NULL, dtype=np.int64)
    pid = columns["globalTid"] >> 24 & 0xFFFFFF
    for device in range(DEVICES):
        on = np.flatnonzero((columns["eventType"] == 60) & (pid == static.PIDS[device]))
        out[on] = np.arange(1, len(on) + 1)
    return out
