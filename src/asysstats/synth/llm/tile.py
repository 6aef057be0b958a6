"""Place simulated steps on one clock and repeat their events with numpy (no loop over events).

A schedule gives every step its kind, variant, start time, stretch factor and id bases
(correlation ids, autograd ``seq``/``op_id``). ``tile`` repeats one kind's template over
its steps and devices: rows are ordered (step, device, template row).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.synth.llm.simulate import Template
from asysstats.synth.writer import NULL

FIELD = re.compile(r"([a-z]+)(\d*)$")
TOPK_POOL = 64  # distinct top-k id lists drawn once


@dataclass
class Schedule:
    kinds: np.ndarray  # index into ``names`` per step
    names: tuple[str, ...]
    variant: np.ndarray
    stretch: np.ndarray
    start: np.ndarray  # ns
    end: np.ndarray
    corr_base: np.ndarray
    op_base: np.ndarray
    seq_base: np.ndarray
    number: np.ndarray  # "[prof_range]: step N"
    kvlen: np.ndarray  # keys per sequence in a decode step's attention


def schedule(templates: dict[str, Template], kinds: list[str], rng: np.random.Generator, t0: int,
             kvlen: np.ndarray) -> Schedule:
    names = tuple(templates)
    kind = np.array([names.index(k) for k in kinds], dtype=np.int64)
    variants = len(next(iter(templates.values())).duration)
    variant = rng.integers(0, variants, len(kind))
    stretch = np.clip(rng.normal(1.0, 0.012, len(kind)), 0.96, 1.04)
    durations = np.array([templates[n].duration for n in names])[kind, variant] * stretch
    pause = rng.uniform(30e3, 90e3, len(kind))  # the scheduler between steps
    start = t0 + np.concatenate(([0.0], np.cumsum(durations + pause)[:-1])).round().astype(np.int64)

    def bases(per_kind: list[int], first: int) -> np.ndarray:
        counts = np.array(per_kind, dtype=np.int64)[kind]
        return first + np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)

    forward = np.isin(kind, [names.index(n) for n in names if n in ("prefill", "decode")])
    return Schedule(kind, names, variant, stretch, start, start + durations.round().astype(np.int64),
                    bases([templates[n].calls for n in names], 1), bases([templates[n].op_ids for n in names], 100),
                    bases([templates[n].seqs for n in names], 0), np.where(forward, np.cumsum(forward) - 1, -1), kvlen)


def tile(template: Template, table: str, sched: Schedule) -> dict[str, np.ndarray]:
    """``step``, ``device``, ``row`` and absolute ``start``/``end`` (NULL where open) per event."""
    steps = np.flatnonzero(sched.kinds == sched.names.index(template.kind))
    rel_start, rel_end = template.tables[table]["start"], template.tables[table]["end"]
    devices, rows = rel_start.shape[1:]
    scale = sched.stretch[steps, None, None]
    origin = sched.start[steps, None, None]
    start = origin + np.rint(rel_start[sched.variant[steps]] * scale).astype(np.int64)
    end_f = rel_end[sched.variant[steps]] * scale
    end = np.where(np.isnan(end_f), NULL, origin + np.rint(np.nan_to_num(end_f)).astype(np.int64))
    shape = start.shape
    return dict(
        step=np.broadcast_to(steps[:, None, None], shape).ravel(),
        device=np.broadcast_to(np.arange(devices)[None, :, None], shape).ravel(),
        row=np.broadcast_to(np.arange(rows)[None, None, :], shape).ravel(),
        start=start.ravel(), end=end.ravel())


def text_fields(pattern: str) -> tuple[str, ...]:
    return tuple(f for _, f, _, _ in string.Formatter().parse(pattern) if f)


def registered(pattern: str) -> bool:
    """Texts that change only with the rank are registered strings (``textId``)."""
    return set(text_fields(pattern)) <= {"rank"}


class TextFiller:
    """Fills the fields of inline range texts for tiled events, vectorised per template row."""

    def __init__(self, sched: Schedule, rng: np.random.Generator, experts: int, topk: int) -> None:
        self.sched, self.rng, self.experts, self.topk = sched, rng, experts, topk
        ids = rng.integers(0, experts, (TOPK_POOL, topk))
        self.pool = pa.array([",".join(map(str, r)) + ",..." for r in ids.tolist()])

    def fill(self, pattern: str, step: np.ndarray, device: np.ndarray) -> pa.Array:
        parts: list[str | pa.Array] = []
        for literal, name, _, _ in string.Formatter().parse(pattern):
            if literal:
                parts.append(literal)
            if name:
                parts.append(self.value(name, step, device))
        if all(isinstance(p, str) for p in parts):
            return pa.array(np.full(len(step), "".join(parts), dtype=object), pa.string())
        return pc.binary_join_element_wise(*parts, "")

    def value(self, name: str, step: np.ndarray, device: np.ndarray) -> pa.Array:
        match = FIELD.match(name)
        assert match is not None  # the templates' fields are a word and digits
        key, digits = match.groups()
        arg = int(digits or 0)
        s = self.sched
        if key == "topkids":
            return self.pool.take(pa.array(self.rng.integers(0, TOPK_POOL, len(step))))
        if key == "unique":  # experts hit by ``arg`` tokens choosing top-k of all experts
            p_hit = 1.0 - (1.0 - self.topk / self.experts) ** arg
            numbers = np.maximum(self.rng.binomial(self.experts, p_hit, len(step)), self.topk)
        else:
            numbers = {"step": lambda: s.number[step], "kvlen": lambda: s.kvlen[step], "rank": lambda: device,
                       "seq": lambda: s.seq_base[step] + arg, "op": lambda: s.op_base[step] + arg}[key]()
        return pa.array(numbers).cast(pa.string())
