"""Recognition of operators: HGTX ranges and kernel names -> operator types.

``--ppu-op-config Type=kernel:<re>`` / ``Type=hgtx:<re>`` rules come first, in the order
given (a regex *search*: "contains"); a range or kernel one of them matches is that type
and nothing else. Then the built-in recognition: range texts by :mod:`parsers`, kernel
names by :data:`catalog.KERNEL_TYPES`. The ``op=`` option keeps only the listed types
(``others`` adds the kernels no operator claims). Every function works once per distinct
string, never per event.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa
import regex

from asysstats.analysis.operators.catalog import BUILTIN_TYPES, FRAMEWORK, KERNEL_TYPES, OTHERS, PYTORCH
from asysstats.analysis.operators.parsers import CUSTOM, FRAMEWORK_CLAIM, Parsed, parse_builtin, parse_pytorch
from asysstats.analysis.operators.torch_texts import torch_mask, without_run_ids
from asysstats.compute.arrow import from_numpy
from asysstats.compute.distinct import distinct
from asysstats.core.errors import AsysError, quoted
from asysstats.core.regexes import compile_user_regex, search
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable

SOURCES = ("kernel", "hgtx")


@dataclass(frozen=True)
class CustomRule:
    """One ``--ppu-op-config`` item."""

    type: str
    source: str
    pattern: regex.Pattern


def custom_rules(config: tuple[tuple[str, str], ...]) -> tuple[CustomRule, ...]:
    """Validated ``--ppu-op-config`` pairs (``Type``, ``kernel:<re>`` or ``hgtx:<re>``). Type
    names are case-insensitive: a built-in type keeps its spelling (``Pytorch`` is ``PyTorch``),
    a custom one the spelling of its first rule."""
    rules = []
    spelling = {t.lower(): t for t in BUILTIN_TYPES}
    for name, value in config:
        where = f"--ppu-op-config {quoted(f'{name}={value}')}"
        source, colon, pattern = value.partition(":")
        if not colon or source.strip().lower() not in SOURCES:
            raise AsysError(f"{where}: expected <Type>=kernel:<regex> or <Type>=hgtx:<regex>")
        if not pattern:
            raise AsysError(f"{where}: the regular expression is empty")
        type_name = spelling.setdefault(name.strip().lower(), name.strip())
        rules.append(CustomRule(type_name, source.strip().lower(), compile_user_regex(pattern, where)))
    return tuple(rules)


@dataclass(frozen=True)
class TypeFilter:
    """The operator types to recognise (``op=``) and whether unclaimed kernels count (``others``)."""

    allowed: frozenset[str]
    others: bool

    def __contains__(self, name: object) -> bool:
        return name in self.allowed


def type_filter(op: tuple[str, ...] | None, rules: tuple[CustomRule, ...]) -> TypeFilter:
    known = list(dict.fromkeys(BUILTIN_TYPES + tuple(r.type for r in rules)))
    if not op:
        return TypeFilter(frozenset(known), False)
    by_key = {t.lower(): t for t in known + [OTHERS]}
    chosen = []
    for item in op:
        name = by_key.get(item.strip().lower())
        if name is None:
            raise AsysError(f"option 'op': unknown operator type {quoted(item)} (types: {', '.join(known + [OTHERS])})")
        chosen.append(name)
    return TypeFilter(frozenset(chosen) - {OTHERS}, OTHERS in chosen)


def recognise_text(canonical: str, bare: str, domain: str | None, rules: tuple[CustomRule, ...],
                   types: TypeFilter) -> Parsed | None:
    """The operator of one range name (``canonical`` = ``domain:text``, ``bare`` = text). A
    ``T=hgtx:`` range is a framework operator that claims before the library ranges, except
    when T is the built-in framework type PyTorch: it then claims as the built-in PyTorch
    ranges do (after library and kernel-name operators), so that the reference's own example
    ``Pytorch=hgtx:aten`` leaves the GEMM and attention operators in place."""
    builtin = parse_builtin(canonical, bare, domain)
    for rule in rules:
        if rule.source == "hgtx" and search(rule.pattern, canonical, "--ppu-op-config"):
            if rule.type not in types:
                return None
            claim = FRAMEWORK_CLAIM if rule.type == PYTORCH else CUSTOM
            if builtin is None:
                return Parsed(rule.type, FRAMEWORK, claim, rule.type, canonical, (("name", canonical),))
            return replace(builtin, type=rule.type, layer=FRAMEWORK, claim=claim, library=rule.type)
    return builtin if builtin is not None and builtin.type in types else None


class Recognised(Sequence[Parsed]):
    """The recognised operator texts by index: ``eager`` (parsed one by one), then ``torch``,
    PyTorch texts recognised in bulk (:mod:`torch_texts`), parsed only when one is read;
    ``torch_ids`` are their string ids."""

    def __init__(self, eager: list[Parsed], torch: pa.Array, torch_ids: np.ndarray) -> None:
        self.eager, self.torch, self.torch_ids = eager, torch, torch_ids

    def __len__(self) -> int:
        return len(self.eager) + len(self.torch)

    @functools.cached_property
    def torch_shapes(self) -> tuple[pa.Array, np.ndarray]:
        """The bulk PyTorch texts without their per-run ids (:func:`without_run_ids`): the distinct
        texts, and the index of each bulk text among them."""
        return without_run_ids(self.torch)

    def __getitem__(self, index: int) -> Parsed:  # type: ignore[override]
        if index < len(self.eager):
            return self.eager[index]
        parsed = parse_pytorch(self.torch[index - len(self.eager)].as_py())
        assert parsed is not None  # torch_mask takes only texts parse_pytorch parses
        return parsed

    def column(self, fn: Callable[[Parsed], Any], torch: Any, dtype: Any = None) -> np.ndarray:
        """``fn`` of each text's :class:`Parsed`; for the bulk PyTorch texts ``torch`` (what
        ``fn`` gives them: one value, or one per text)."""
        eager = np.array([fn(p) for p in self.eager], dtype=dtype)
        return np.concatenate([eager, np.broadcast_to(np.asarray(torch, dtype=eager.dtype), len(self.torch))])

    def ids(self, pool: StringPool, fn: Callable[[Parsed], str], torch: Any) -> np.ndarray:
        """String ids of ``fn`` of each eager text (interned together), then ``torch`` (as in :meth:`column`)."""
        return np.concatenate([pool.intern(fn(p) for p in self.eager),
                               np.broadcast_to(np.asarray(torch, dtype=np.int64), len(self.torch))])


def recognise_ranges(pool: StringPool, ranges: EventTable, rules: tuple[CustomRule, ...],
                     types: TypeFilter) -> tuple[np.ndarray, Recognised]:
    """Per range row, the index of its :class:`Parsed` (-1: no operator). PyTorch texts
    (no domain, no custom rule matching) are recognised in bulk, the others one by one. In 32
    bits: one per range, kept by the analysis, and fewer texts than a string column holds."""
    out = np.full(ranges.rows, -1, dtype=np.int32)
    names = ranges.peek("name")  # read once, here: not kept
    valid = names >= 0
    uniq, slot = distinct(names[valid])
    rows = np.flatnonzero(valid)
    first = np.full(len(uniq), ranges.rows, dtype=np.int64)
    np.minimum.at(first, slot, rows)  # the first row of each distinct name
    domain_ids = ranges.peek("domain")[first]
    bulk = np.zeros(len(uniq), dtype=bool)
    plain = np.flatnonzero(domain_ids < 0)
    candidates = pool.texts(uniq[plain])
    bulk[plain] = torch_mask(candidates)
    hgtx = [r for r in rules if r.source == "hgtx"]
    checked = np.flatnonzero(bulk) if hgtx else plain[:0]
    for i, text in zip(checked.tolist(), pool.lookup(uniq[checked])):
        bulk[i] = not any(search(r.pattern, text, "--ppu-op-config") for r in hgtx)
    eager: list[Parsed] = []
    index = np.full(len(uniq), -1, dtype=np.int64)
    one_by_one = np.flatnonzero(~bulk)
    for i, text, domain in zip(one_by_one.tolist(), pool.lookup(uniq[one_by_one]), pool.lookup(domain_ids[one_by_one])):
        bare = text[len(domain) + 1:] if domain is not None and text.startswith(domain + ":") else text
        found = recognise_text(text, bare, domain, rules, types)
        if found is not None:
            index[i] = len(eager)
            eager.append(found)
    torch = bulk & (PYTORCH in types)
    index[torch] = len(eager) + np.arange(int(torch.sum()))
    out[rows] = index[slot]
    return out, Recognised(eager, candidates.filter(from_numpy(torch[plain])), uniq[torch])


def classify_kernels(pool: StringPool, names: np.ndarray, rules: tuple[CustomRule, ...],
                     types: TypeFilter) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel (demangled name ids): the type string id (-1: none) and whether a custom
    rule decided it."""
    names = np.asarray(names, dtype=np.int64)
    kind = np.full(len(names), -1, dtype=np.int64)
    custom = np.zeros(len(names), dtype=bool)
    valid = names >= 0
    if not valid.any():
        return kind, custom
    uniq, slot = distinct(names[valid])
    found, by_rule = [], []
    for text in pool.lookup(uniq):
        text = text or ""
        rule = next((r for r in rules if r.source == "kernel" and search(r.pattern, text, "--ppu-op-config")), None)
        name = rule.type if rule else next((t for t, pattern in KERNEL_TYPES if pattern.search(text)), None)
        found.append(name if name in types else None)
        by_rule.append(rule is not None)
    named = [i for i, n in enumerate(found) if n]
    ids = np.full(len(found), -1, dtype=np.int64)
    ids[named] = pool.intern(n for n in found if n)
    kind[valid] = ids[slot]
    custom[valid] = np.asarray(by_rule, dtype=bool)[slot]
    return kind, custom
