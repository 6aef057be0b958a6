"""Kernel name modes (docs/decisions.md D9): demangled (default), ``base`` and ``mangled``.

Each function works once per distinct string id and returns per-row ids into the pool.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow.compute as pc

from asysstats.compute.arrow import text
from asysstats.compute.distinct import Coded, distinct
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable

NAME_MODES = ("demangled", "base", "mangled")


@functools.lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name; other names unchanged."""
    if not name.startswith("_Z"):
        return name
    import cxxfilt  # only mangled names need it: most reports store demangled ones

    try:
        return cxxfilt.demangle(name, external_only=False)
    except cxxfilt.InvalidName:
        return name


def _matching_open(text: str, close_at: int, opening: str, closing: str) -> int:
    depth = 0
    for i in range(close_at, -1, -1):
        if text[i] == closing:
            depth += 1
        elif text[i] == opening:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, last, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[last:i])
            last = i + len(sep)
            i = last
            continue
        i += 1
    parts.append(text[last:])
    return parts


@functools.lru_cache(maxsize=65536)
def base_name(name: str) -> str:
    """Unqualified function name without return type, template arguments or parameters:
    ``void at::native::foo<float>(int)`` -> ``foo``."""
    text = demangle(name).strip()
    for suffix in (" const", " volatile", " &", " &&"):
        if text.endswith(suffix):
            text = text[: -len(suffix)].rstrip()
    if text.endswith(")"):
        opening = _matching_open(text, len(text) - 1, "(", ")")
        if opening > 0:
            text = text[:opening].rstrip()
    if text.endswith(">") and not text.endswith("operator>"):
        opening = _matching_open(text, len(text) - 1, "<", ">")
        if opening > 0:
            text = text[:opening].rstrip()
    words = _split_top(text, " ")
    text = words[-1] if words else text
    scopes = _split_top(text, "::")
    return scopes[-1] or text


def kernel_name_codes(pool: StringPool, kernels: EventTable, mode: str = "demangled") -> Coded:
    """Per-kernel name ids in the chosen mode (falling back where a form is absent), coded."""
    demangled = kernels["demangledName"]
    if mode == "mangled":
        mangled = kernels["mangledName"] if "mangledName" in kernels else np.full(len(demangled), -1)
        return pool.map_coded(np.where(mangled >= 0, mangled, demangled), str)
    return pool.map_coded(demangled, base_name if mode == "base" else demangle)


def kernel_name_ids(pool: StringPool, kernels: EventTable, mode: str = "demangled") -> np.ndarray:
    """Per-kernel name ids in the chosen mode (:func:`kernel_name_codes`)."""
    return kernel_name_codes(pool, kernels, mode).rows()


def prefixed_ids(pool: StringPool, prefix: np.ndarray, names: np.ndarray, sep: str = "/") -> np.ndarray:
    """Ids of ``prefix + sep + name`` per row; rows without a prefix keep their name."""
    prefix = np.asarray(prefix, dtype=np.int64)
    names = np.asarray(names, dtype=np.int64)
    out = names.copy()
    has = prefix >= 0
    if not has.any():
        return out
    prefixes, prefix_index = distinct(prefix[has])
    bases, base_index = distinct(names[has])
    pairs, inverse = distinct(prefix_index * len(bases) + base_index)
    sides = (prefixes[pairs // len(bases)], bases[pairs % len(bases)])
    texts = (pool.texts(ids, missing="None") for ids in sides)  # "None": as f"{None}" spells a missing name
    out[has] = pool.intern(pc.binary_join_element_wise(*texts, text(sep)))[inverse]  # distinct pairs
    return out
