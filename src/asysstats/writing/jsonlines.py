"""The JSON of a piece of a result's rows, laid out as ``json.dumps(rows, indent=1,
ensure_ascii=False)`` lays out the items of the list, made with Arrow's string kernels.

Each distinct string is escaped once, by the ``json`` module's own encoder; a number is
printed as Python prints it (an int, or the ``repr`` of the rounded float: its decimals with
trailing zeros dropped); a missing cell is ``null``. No Python object is made per cell.
"""

from __future__ import annotations

from json.encoder import encode_basestring  # what json.dumps escapes strings with, ensure_ascii=False

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, text, text_bytes
from asysstats.compute.distinct import distinct
from asysstats.core.result import INT, PAIR_INNER, TEXT, Result, decimal_places
from asysstats.core.strings import StringPool
from asysstats.writing.format import as_integers, decimal_text, filled, integer_text, pair_sides, rounded, texts

NULL, NOTHING = text("null"), text("")
EXACT_UNITS = 10 ** 15  # a rounded value of fewer digits: its float's repr is its decimals (no exponent, none shorter)


def json_objects(result: Result, start: int, stop: int, decimals: int) -> memoryview:
    """The row objects of the rows ``[start, stop)``, separated by ``,`` and a newline."""
    members = []
    for col in result.columns:
        values = result.frame[col.name][start:stop]
        inner = PAIR_INNER.get(col.kind)
        if inner is None:
            value = literals(col.kind, values, result.strings, decimals)
        else:  # a two-item list, one level deeper
            base, target = (literals(inner, side, result.strings, decimals) for side in pair_sides(values))
            value = pc.binary_join_element_wise(text("[\n   "), base, text(",\n   "), target, text("\n  ]"), NOTHING)
        members.append(pc.binary_join_element_wise(text(f"  {encode_basestring(col.name)}: "), value, NOTHING))
    body = pc.binary_join_element_wise(*members, text(",\n"))
    objects = pc.binary_join_element_wise(text(" {\n"), body, text("\n },\n"), NOTHING)
    return text_bytes(objects)[:-len(",\n")]


def literals(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int) -> pa.Array:
    """The JSON value of each cell of a column: ``null`` where the printed cell is ``-``."""
    if kind == TEXT:
        return text_literals(values, strings)
    if kind == INT:
        ints, missing = as_integers(values)
        return filled(integer_text(ints), missing, NULL)
    places = decimal_places(kind, decimals)
    units, missing = rounded(values, places)
    return filled(float_text(units, places), missing, NULL)


def float_text(units: np.ndarray, places: int) -> pa.Array:
    """``repr(units / 10 ** places)``: the printed decimals with trailing zeros dropped, one
    kept; Python's own repr past 15 digits (and for values that overflowed when rounded)."""
    number = decimal_text(units, places)
    number = pc.replace_substring_regex(number, r"(\.\d+?)0+$", r"\1") if places else \
        pc.binary_join_element_wise(number, text(".0"), NOTHING)
    magnitude = np.abs(units)
    python = (magnitude >= EXACT_UNITS) | (magnitude < 0)  # the latter: the magnitude of int64's least value
    if python.any():
        printed = [repr(v) for v in (units[python] / 10 ** places).tolist()]
        number = pc.replace_with_mask(number, from_numpy(python), from_texts(printed))
    return number


def text_literals(values: np.ndarray | pa.Array, strings: StringPool) -> pa.Array:
    """JSON strings of string ids, Arrow strings or Python strings; ``null`` where missing."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        uniq, codes = distinct(np.where(values >= 0, values, -1) + 1)  # 0: missing
        dictionary, index = strings.texts(uniq - 1), from_numpy(codes)
    else:
        coded = pc.dictionary_encode(values if isinstance(values, pa.Array) else from_texts(texts(values, strings)))
        dictionary, index = coded.dictionary, coded.indices
    escaped = from_texts([None if t is None else encode_basestring(t) for t in dictionary.to_pylist()])
    return pc.fill_null(escaped.take(index), NULL)
