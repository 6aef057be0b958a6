"""The sample's processes, threads, devices, call stacks and PPU metric samples."""

from __future__ import annotations

import numpy as np

from asysstats.compute.intervals import busy_per_window
from asysstats.synth.llm.catalog import CALLCHAINS, DEVICE_INFO, DEVICES, FIRST_PID, HOSTNAME, METRICS
from asysstats.synth.writer import NULL, ReportWriter

VM = 1 << 48  # the high bits of a real export's globalTid
THREADS = {"main": (0, "pt_main_thread"), "sched": (12, "scheduler"), "proxy": (37, "pccl-proxy")}
PIDS = FIRST_PID + np.arange(DEVICES, dtype=np.int64)
GLOBAL_PID = VM | (PIDS << 24)
GLOBAL_TID = {name: GLOBAL_PID | (PIDS + offset) for name, (offset, _) in THREADS.items()}
CALLCHAIN_KEYS = tuple(CALLCHAINS)
SAMPLE_NS = 1_000_000


def thread_ids(threads: np.ndarray, row: np.ndarray, device: np.ndarray) -> np.ndarray:
    """globalTid of each event from its template row's thread name (NULL where None)."""
    names = list(THREADS)
    index = np.array([names.index(t) if isinstance(t, str) else -1 for t in threads], dtype=np.int64)[row]
    table = np.stack([GLOBAL_TID[n] for n in names] + [np.full(DEVICES, NULL)])
    return table[index, device]


def callchain_ids(keys: np.ndarray, row: np.ndarray, device: np.ndarray) -> np.ndarray:
    """Per-process call-stack ids of the template rows' named stacks (NULL where there is none)."""
    index = np.array([CALLCHAIN_KEYS.index(k) if isinstance(k, str) else -1 for k in keys], dtype=np.int64)[row]
    return np.where(index >= 0, 1 + device * len(CALLCHAIN_KEYS) + index, NULL)


def write_static(writer: ReportWriter, rng: np.random.Generator) -> None:
    writer.add("processes", globalPid=GLOBAL_PID, pid=PIDS, name=np.array(["python3"] * DEVICES, dtype=object))
    for name, (_, label) in THREADS.items():
        writer.add("threads", nameId=writer.string(label), priority=20, globalTid=GLOBAL_TID[name])
    uuids = [f"PPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}" for u in
             (bytes(rng.integers(0, 256, 16, dtype=np.uint8)).hex() for _ in range(DEVICES))]
    writer.add("devices", id=np.arange(DEVICES), uuid=np.array(uuids, dtype=object), hostname=HOSTNAME,
               busLocation=np.array([f"0000:{0x3b + 0x20 * d:02x}:00.0" for d in range(DEVICES)], dtype=object),
               **DEVICE_INFO)
    depth: list[int]
    ids, depth, symbol, module = [], [], [], []
    for device in range(DEVICES):
        for k, frames in enumerate(CALLCHAINS.values()):
            ids += [1 + device * len(CALLCHAINS) + k] * len(frames)
            depth += range(len(frames))
            symbol += [writer.string(s) for s, _ in frames]
            module += [writer.string(m) for _, m in frames]
    writer.add("callchains", id=np.array(ids), stackDepth=np.array(depth), symbol=np.array(symbol),
               module=np.array(module))


def write_metrics(writer: ReportWriter, busy: list[tuple[np.ndarray, np.ndarray]], begin: int, stop: int,
                  rng: np.random.Generator) -> None:
    """Samples every ~1 ms per device; utilisation is the device's real busy time per window."""
    writer.add("metric_info", metricId=np.arange(len(METRICS)),
               metricName=np.array([n for n, _ in METRICS], dtype=object),
               unit=np.array([u for _, u in METRICS], dtype=object))
    for device, (starts, ends) in enumerate(busy):
        edges = np.arange(begin + rng.integers(0, SAMPLE_NS), stop, SAMPLE_NS, dtype=np.int64)
        if len(edges) < 2:
            continue
        util = 100.0 * busy_per_window(starts, ends, edges) / SAMPLE_NS
        n = len(util)
        values = np.stack([
            util.round(1),
            (util / 100 * DEVICE_INFO["memoryBandwidth"] / 1e9 * rng.uniform(0.3, 0.6, n)).round(1),
            (92.0 + 3.1 * util + rng.normal(0.0, 3.0, n)).round(1),
            np.where(util > 80, 1500 - rng.integers(0, 60, n), 1500).astype(np.float64),
        ])
        writer.add("metrics", deviceId=device, start=np.tile(edges[:-1], len(METRICS)),
                   end=np.tile(edges[1:], len(METRICS)), metricId=np.repeat(np.arange(len(METRICS)), n),
                   value=values.ravel())
