"""The CSV lines of a slice of a result's rows (conventions 6-8), as one piece of bytes.

A column of few distinct values (string ids, small integers) is formatted once per distinct
value, and a run of such columns once per distinct combination of their values; the other
columns are formatted per row. Each run of columns is joined into one piece per line (its
cells each followed by ','; the last piece of a line by the newline), and one ``take`` lays
out the pieces of every line.
"""

from __future__ import annotations

from itertools import groupby
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.engine import Result
from asysstats.io.arrow import from_numpy, text, text_bytes
from asysstats.io.format import as_integers, cells, few_values
from asysstats.io.strings import StringPool, distinct
from asysstats.registry import INT, TEXT


class Piece(NamedTuple):
    """Cells of consecutive columns, per row (``codes`` None) or per distinct combination
    of values that ``codes`` index (one per row)."""

    cells: list[pa.Array]
    codes: np.ndarray | None = None


def csv_lines(result: Result, start: int, stop: int, decimals: int) -> memoryview:
    """``Row#,<cells>,`` and a newline for each row in ``[start, stop)``."""
    rows = stop - start
    columns = [Piece([row_numbers(start, stop)])] + \
        [column_cells(c.kind, result.frame[c.name][start:stop], result.strings, decimals) for c in result.columns]
    pieces = []
    for is_coded, run in groupby(columns, key=lambda c: c.codes is not None):
        same = list(run)
        pieces += combined(same) if is_coded else [Piece([cell for c in same for cell in c.cells])]
    ends = [text("")] * (len(pieces) - 1) + [text("\n")]
    lines = [pc.binary_join_element_wise(*p.cells, end, text(",")) for p, end in zip(pieces, ends)]
    codes = [p.codes for p in pieces]
    del pieces, columns  # their cells are no longer needed while the lines are laid out
    if len(lines) == 1 and codes[0] is None:
        return text_bytes(lines[0])
    index = np.empty((rows, len(lines)), dtype=np.int64)
    first = 0
    for column, (line, code) in enumerate(zip(lines, codes)):
        index[:, column] = first + (np.arange(rows) if code is None else code)
        first += len(line)
    vocabulary = pa.concat_arrays(lines)
    del lines
    return text_bytes(vocabulary.take(from_numpy(index.reshape(-1))))


def row_numbers(start: int, stop: int) -> pa.Array:
    return pc.cast(from_numpy(np.arange(start + 1, stop + 1)), pa.string())


def column_cells(kind: str, values: np.ndarray, strings: StringPool, decimals: int) -> Piece:
    """The CSV cells of a column, coded when it has few distinct values (string ids, integers)."""
    values = np.asarray(values)
    if kind == TEXT and values.dtype.kind in "iu":
        uniq, codes = distinct(np.where(values >= 0, values, -1) + 1)  # 0: missing
        return Piece([cells(TEXT, uniq - 1, strings, decimals, csv=True)], codes)
    if kind == INT and values.dtype.kind in "iu":
        few = few_values(as_integers(values)[0])
        if few is not None:
            return Piece([cells(INT, few[0], strings, decimals, csv=True)], few[1])
    return Piece([cells(kind, values, strings, decimals, csv=True)])


def combined(columns: list[Piece]) -> list[Piece]:
    """Consecutive coded columns as few pieces, each of the cells of the distinct
    combinations of its columns' values that occur; a column joins the piece before it
    while the combinations stay few. Combined a column at a time, so that keys stay dense."""
    pieces = []
    while columns:
        key, steps, taken = columns[0].codes, [], 1
        for column in columns[1:]:
            uniq, joint = distinct(key * len(column.cells[0]) + column.codes)
            if len(uniq) * 8 > len(key):
                break
            key = joint
            steps.append((uniq, len(column.cells[0])))
            taken += 1
        parts = []
        index = np.arange(int(key.max(initial=-1)) + 1)
        for (uniq, count), column in zip(reversed(steps), reversed(columns[:taken])):
            index, digit = np.divmod(uniq[index], count)
            parts.append(column.cells[0].take(from_numpy(digit)))
        parts.append(columns[0].cells[0].take(from_numpy(index)))
        pieces.append(Piece(parts[::-1], key))
        columns = columns[taken:]
    return pieces
