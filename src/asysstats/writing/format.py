"""Cell formatting by column kind, vectorised with pyarrow compute (no Python row loops).

Integers print as integers (floats truncated toward zero, docs/decisions.md D1); percentages,
ratios and decimals with one decimal rounded half away from zero (docs/decisions.md D2); a
missing cell (NaN, ``NA``, a missing string id) prints ``-``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, quoted, text
from asysstats.compute.distinct import distinct, sampled_values
from asysstats.core.errors import escaped_control
from asysstats.core.result import INT, PAIR_INNER, TEXT, Result, decimal_places
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA

DASH = "-"
PAIR_SEPARATOR = " / "
MISSING_CELL = {False: text(DASH), True: text(f'"{DASH}"')}  # by csv
CONTROL_PATTERN = r"[\x{00}-\x{1f}\x{7f}-\x{9f}\x{2028}\x{2029}]"  # RE2: what escaped_control escapes


def is_missing(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f":
        return np.isnan(values) | (values == float(NA))
    if values.dtype.kind in "iu":
        return values == NA
    return np.array([v is None for v in values], dtype=bool)


def as_integers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, missing mask) with floats truncated toward zero."""
    values = np.asarray(values)
    if values.dtype == object:
        missing = np.array([v is None for v in values], dtype=bool)
        values = np.array([0 if v is None else v for v in values], dtype=np.float64)
    else:
        missing = is_missing(values)
    if values.dtype.kind == "f":
        values = np.trunc(np.where(missing, 0.0, values)).astype(np.int64)
    return values.astype(np.int64, copy=False), missing


def rounded(values: np.ndarray, decimals: int) -> tuple[np.ndarray, np.ndarray]:
    """(integer count of 10^-decimals units rounded half away from zero, missing mask)."""
    values = np.asarray(values, dtype=np.float64)
    missing = np.isnan(values)
    scaled = np.where(missing, 0.0, values) * (10 ** decimals)
    # the tiny epsilon keeps values like 2.45 (stored as 2.4499999...) rounding up
    units = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5 + 1e-9)
    return units.astype(np.int64), missing


def texts(values: np.ndarray | pa.Array, strings: StringPool) -> np.ndarray:
    """Object array of strings (``None`` when missing) from ids or strings."""
    if isinstance(values, pa.Array):
        return np.array(values.to_pylist(), dtype=object)
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        return strings.lookup(values)
    if set(map(type, values.tolist())) <= {str, type(None)}:  # already text: no loop in Python
        return values.astype(object, copy=False)
    return np.array([None if v is None else str(v) for v in values], dtype=object)


def cells(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int = 1,
          csv: bool = False, console: bool = False) -> pa.Array:
    """The printed text of every cell; missing cells ``-``. With ``csv``, the CSV cell:
    text double-quoted with quotes doubled, numbers bare, a missing cell ``"-"`` (docs/decisions.md D6).
    With ``console``, the aligned table's: control characters in text escaped (:func:`printable`)."""
    if kind in PAIR_INNER:
        base, target = (cells(PAIR_INNER[kind], side, strings, decimals, console=console)
                        for side in pair_sides(values))
        joined = pc.binary_join_element_wise(base, target, text(PAIR_SEPARATOR))
        return quoted(joined) if csv else joined
    if kind == TEXT:
        return text_cells(values, strings, csv, console)
    if kind == INT:
        return integer_cells(*as_integers(values), csv)
    places = decimal_places(kind, decimals)
    units, missing = rounded(values, places)
    return filled(decimal_text(units, places), missing, MISSING_CELL[csv])


def decimal_text(units: np.ndarray, places: int) -> pa.Array:
    """The decimal text of counts of ``10^-places`` units: ``places`` digits after the point."""
    number = integer_text(np.abs(units) // 10 ** places)
    if places:
        frac = pc.utf8_lpad(integer_text(np.abs(units) % 10 ** places), places, "0")
        number = pc.binary_join_element_wise(number, frac, text("."))
    negative = units < 0
    if negative.any():
        number = pc.if_else(from_numpy(negative), pc.binary_join_element_wise(text("-"), number, text("")), number)
    return number


def integer_cells(ints: np.ndarray, missing: np.ndarray, csv: bool = False, few: bool = True) -> pa.Array:
    """Cells of int64 values (missing ``-``); ``few=False``: the values are known not to be
    few (:func:`few_values` already said so)."""
    return filled(integer_text(ints) if few else pc.cast(from_numpy(ints), pa.string()), missing, MISSING_CELL[csv])


def filled(cells: pa.Array, missing: np.ndarray, filler: pa.Scalar) -> pa.Array:
    """``cells`` with ``filler`` where ``missing`` (``-``, ``"-"`` in CSV, ``null`` in JSON)."""
    return pc.if_else(from_numpy(missing), filler, cells) if missing.any() else cells


def integer_text(values: np.ndarray) -> pa.Array:
    """Decimal text of int64 values; a column of few distinct values (ids, sizes) is
    converted once per distinct value."""
    coded = few_values(values)
    if coded is not None:
        return pc.cast(from_numpy(coded[0]), pa.string()).take(from_numpy(coded[1]))
    return pc.cast(from_numpy(values), pa.string())


def few_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct values, each row's index) of an integer column of few distinct values in a
    narrow range (``NA`` included), else None; counted, not sorted."""
    if values.dtype != np.int64 or len(values) <= 1024:
        return None
    low, high = int(values.min()), int(values.max())
    missing = low == NA
    if missing:
        present = values != NA
        if not present.any():
            return None
        low = int(values.min(where=present, initial=high))
        values = np.where(present, values, low - 1)
    sampled, sample_rows = sampled_values(values)
    if high - low >= len(values) or len(sampled) * 2 > sample_rows:  # most rows differ (correlation ids)
        return None
    uniq, index = distinct(values, narrow=True)
    if len(uniq) * 8 >= len(values):
        return None
    if missing:
        uniq[0] = NA
    return uniq, index


def text_cells(values: np.ndarray | pa.Array, strings: StringPool, csv: bool = False,
               console: bool = False) -> pa.Array:
    """Text of string ids (each distinct id looked up, and for CSV quoted or the console
    escaped, once), of Arrow strings (without nulls) or of strings; a missing cell is ``-``
    (``"-"`` in CSV)."""
    if isinstance(values, pa.Array):
        return quoted(values) if csv else printable(values) if console else values
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        uniq, index = distinct(np.where(values >= 0, values, -1) + 1)  # 0: missing
        dictionary = strings.texts(uniq - 1, DASH)
    else:
        dictionary, index = from_texts([DASH if t is None else t for t in texts(values, strings)]), None
    if csv:
        dictionary = quoted(dictionary)
    if console:
        dictionary = printable(dictionary)
    return dictionary if index is None else dictionary.take(from_numpy(index))


def printable(cells: pa.Array) -> pa.Array:
    """Text cells as the aligned console table shows them: a control character (C0, DEL, C1,
    a Unicode line separator) escaped as in error messages (``\\x1b``, ``\\n``), so that a name
    can neither drive the terminal nor break the table's lines (docs/decisions.md D18). The few
    cells holding one are escaped once per distinct text."""
    flagged = pc.match_substring_regex(cells, CONTROL_PATTERN)
    if not pc.any(flagged).as_py():
        return cells
    odd = pc.unique(cells.filter(flagged))
    shown = pc.cast(from_texts([escaped_control(t) for t in odd.to_pylist()]), cells.type)
    return pc.if_else(flagged, shown.take(pc.index_in(cells, value_set=odd)), cells)


def pair_sides(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The base and target columns of an (n, 2) comparison column."""
    pairs = np.asarray(values).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def typed_column(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int = 1) -> list[object]:
    """Python values of a column for JSON/XLSX cells: int (truncated), float (rounded as
    printed), str; None where the printed cell is ``-``."""
    if kind == TEXT:
        return texts(values, strings).tolist()
    if kind == INT:
        numbers, missing = as_integers(values)
    else:
        places = decimal_places(kind, decimals)
        units, missing = rounded(values, places)
        numbers = units / 10 ** places
    typed = numbers.astype(object)
    typed[missing] = None
    return typed.tolist()


def rows_as_records(result: Result, decimals: int = 1, pair_text: bool = False,
                    rows: slice = slice(None)) -> list[dict[str, object]]:
    """The ``rows`` as dicts of typed values (int, float, str, None for missing); a comparison
    cell is a ``[base, target]`` list, or its ``base / target`` text with ``pair_text``."""
    columns = []
    for col in result.columns:
        values = result.frame[col.name][rows]
        inner = PAIR_INNER.get(col.kind)
        if inner is None:
            columns.append(typed_column(col.kind, values, result.strings, decimals))
        elif pair_text:
            columns.append(cells(col.kind, values, result.strings, decimals).to_pylist())
        else:
            sides = [typed_column(inner, side, result.strings, decimals) for side in pair_sides(values)]
            columns.append([list(pair) for pair in zip(*sides)])
    names = [c.name for c in result.columns]
    return [dict(zip(names, row)) for row in zip(*columns)] if columns else []
