"""Grouping call stacks by ``--callstack-group-config`` rules.

A rule ``group=re1/re2/...`` lists frame regexes from parent to child. A call chain
matches it when distinct frames, in that caller-to-callee order (gaps allowed), each
partially match their regex on the frame's module or symbol (Python frames included).
Rules sharing a group name are OR-ed. Each regex is compiled once and run once per
distinct string; the ordered matching then works on frame arrays, one numpy pass per
regex of a rule, never per frame or per allocation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import regex

from asysstats.analysis.declarations import split_unescaped
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import group_by
from asysstats.core.errors import AsysError, quoted
from asysstats.core.regexes import compile_user_regex, search
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable

OPTION = "--callstack-group-config"
OTHERS = "others"
# Built-in groups, used when no --callstack-group-config is given (each a single frame regex).
DEFAULT_GROUPS = (
    ("pytorch", r"libtorch|torch/"),
    ("compute_lib", r"libacblas|libacdnn|libcublas|libcudnn"),
    ("collective", r"libpccl|libnccl"),
    ("hggc_runtime", r"libhggc|libcudart|libcuda"),
    ("python", r"\.py"),
)


@dataclass(frozen=True)
class GroupConfig:
    """Distinct group names in configuration order and the frame-regex rules of each."""

    names: tuple[str, ...]
    rules: tuple[tuple[int, tuple[regex.Pattern, ...]], ...]  # (group index, parent->child regexes)


def parse_groups(pairs: Iterable[tuple[str, str]]) -> GroupConfig:
    """Compile ``(group, "re1/re2/...")`` pairs; ``/`` escaped as ``\\/`` stays in a regex.
    No pairs means the built-in groups (each taken as one regex)."""
    pairs = tuple(pairs)
    names: list[str] = []
    rules = []
    for name, text in pairs or DEFAULT_GROUPS:
        if name not in names:
            names.append(name)
        where = f"{OPTION} {quoted(f'{name}={text}')}"
        parts = split_unescaped(text, "/") if pairs else [text]
        if any(not p for p in parts):
            raise AsysError(f"{where}: empty frame regex")
        rules.append((names.index(name), tuple(compile_user_regex(p, where) for p in parts)))
    return GroupConfig(tuple(names), tuple(rules))


def _hits(strings: StringPool, ids: np.ndarray, patterns: list[regex.Pattern]) -> np.ndarray:
    """``[pattern, row]`` booleans: does the pattern partially match the row's string."""
    out = np.zeros((len(patterns), len(ids)), dtype=bool)
    if len(ids) == 0:
        return out
    valid = ids >= 0
    uniq, slot = distinct(ids[valid])
    texts = strings.lookup(uniq)
    for k, pattern in enumerate(patterns):
        where = f"{OPTION} regex {quoted(pattern.pattern)}"
        found = np.array([t is not None and search(pattern, t, where) for t in texts], dtype=bool)
        out[k, valid] = found[slot]
    return out


def chain_membership(config: GroupConfig, frames: EventTable, strings: StringPool) -> tuple[np.ndarray, np.ndarray]:
    """Distinct chain ids (sorted) and their ``[chain, group]`` membership matrix.

    ``frames`` holds ``id``, ``stackDepth`` (0 innermost), ``symbol``, ``module``."""
    chains = group_by([frames["id"]], -frames["stackDepth"])  # outermost frame first
    member = np.zeros((chains.count, len(config.names)), dtype=bool)
    if chains.count == 0:
        return chains.keys[0], member
    order = chains.order
    chain_of = np.repeat(np.arange(chains.count), chains.size)
    patterns = list({p.pattern: p for _, rule in config.rules for p in rule}.values())
    index = {p.pattern: k for k, p in enumerate(patterns)}
    hit = _hits(strings, frames["symbol"][order], patterns) | _hits(strings, frames["module"][order], patterns)
    position = np.arange(len(order))
    never = len(order)
    for group, rule in config.rules:
        reached = np.full(chains.count, -1, dtype=np.int64)  # position of the last matched frame
        for pattern in rule:
            ok = hit[index[pattern.pattern]] & (position > reached[chain_of])
            nxt = np.full(chains.count, never, dtype=np.int64)
            np.minimum.at(nxt, chain_of[ok], position[ok])
            reached = nxt
        member[:, group] |= reached < never
    return chains.keys[0], member


def group_labels(strings: StringPool, names: tuple[str, ...], member: np.ndarray, first_only: bool) -> np.ndarray:
    """String id per row of ``member``: matching groups joined by ``/`` in configuration
    order (only the first with ``first_only``), or ``others``."""
    if first_only:
        matched = np.flatnonzero(member.any(axis=1))
        first = np.argmax(member, axis=1)[matched]
        member = np.zeros_like(member)
        member[matched, first] = True
    if len(member) == 0:
        return np.empty(0, dtype=np.int64)
    combos, inverse = np.unique(member, axis=0, return_inverse=True)
    texts = ["/".join(n for n, on in zip(names, row) if on) or OTHERS for row in combos]
    return strings.intern(texts)[inverse.reshape(-1)]
