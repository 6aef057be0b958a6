"""A rule's result as a ``pyarrow.Table``: the columns the CLI prints, by the same names, typed.

* integer columns (``int``): int64, truncated toward zero as printed;
* percentages, ratios and measured values: float64, not rounded;
* text: strings (string ids resolved);
* comparison cells (``base / target``): a struct of ``base`` and ``target``;
* a cell the CLI prints as ``-``: null.

The schema's metadata holds the rule's name and title, each field's its kind and help.
Built from Arrow buffers: nothing here imports pandas (``Table.to_pandas`` does, when called).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from asysstats.compute.arrow import from_numpy, from_texts
from asysstats.core.result import INT, PAIR_INNER, TEXT, Result
from asysstats.core.strings import StringPool
from asysstats.writing.format import as_integers, is_missing, pair_sides

RULE_KEY, TITLE_KEY = b"asysstats.rule", b"asysstats.title"


def arrow_table(result: Result) -> pa.Table:
    """The result's columns as Arrow arrays (see the module doc), gathered whole."""
    arrays = [arrow_column(column.kind, result.frame[column.name][0:result.rows], result.strings)
              for column in result.columns]
    fields = [pa.field(column.name, array.type, metadata={"kind": column.kind, "help": column.help})
              for column, array in zip(result.columns, arrays)]
    schema = pa.schema(fields, metadata={RULE_KEY: result.name, TITLE_KEY: result.title})
    return pa.Table.from_arrays(arrays, schema=schema)


def arrow_column(kind: str, values: np.ndarray | pa.Array, strings: StringPool) -> pa.Array:
    """One column's cells of ``kind`` as an Arrow array (nulls where the CLI prints ``-``)."""
    if kind in PAIR_INNER:
        base, target = (arrow_column(PAIR_INNER[kind], side, strings) for side in pair_sides(values))
        return pa.StructArray.from_arrays([base, target], names=["base", "target"])
    if kind == TEXT:
        return text_array(values, strings)
    if kind == INT:
        return with_nulls(*as_integers(values))
    numbers = np.asarray(values, dtype=np.float64)
    return with_nulls(numbers, is_missing(numbers))


def text_array(values: np.ndarray | pa.Array, strings: StringPool) -> pa.Array:
    """Strings of string ids (negative: null), of Python strings (None: null) or of Arrow text."""
    if isinstance(values, pa.Array):
        return values
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        return strings.texts(values)
    return from_texts([None if v is None else str(v) for v in values.tolist()])


def with_nulls(values: np.ndarray, missing: np.ndarray) -> pa.Array:
    """A numeric column with nulls where ``missing``."""
    array = from_numpy(values)
    if not missing.any():
        return array
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(array.type, len(array), [valid, array.buffers()[1]])

