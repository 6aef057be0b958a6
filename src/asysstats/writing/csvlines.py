"""The CSV lines of a slice of a result's rows (docs/decisions.md D6), as one piece of bytes.

Columns coded once per result (:mod:`asysstats.writing.csvcodes`) take their cells by code; the
others are coded per piece where it has few values of them. Consecutive
columns whose values repeat from row to row (a trace of pairs, where a kernel's columns
repeat for each range it is in) are formatted once per run of equal rows. Of the others,
a run of coded columns is formatted once per distinct combination of their values, the
rest per row. The cells of a combination (or run) are joined once and taken for each
of its rows; one ``binary_join_element_wise`` of the per-row cell arrays writes the lines
(each cell followed by ',', the line by a newline) into a buffer sized in advance.
"""

from __future__ import annotations

from itertools import groupby
from typing import NamedTuple, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, text, text_bytes
from asysstats.compute.distinct import distinct
from asysstats.core.result import INT, Result, TextColumn
from asysstats.core.strings import StringPool
from asysstats.writing.csvcodes import COMMA, FEW_SHARE, Segment, coding
from asysstats.writing.format import as_integers, cells, integer_cells

NEWLINE = text("\n")
RUN_SHARE = 2  # columns are formatted per run of equal rows while the runs are at most 1 / RUN_SHARE of the rows


class Piece(NamedTuple):
    """Cells of consecutive columns, per row (``codes`` None) or per distinct combination
    of values (or run of rows) that ``codes`` index (one per row)."""

    cells: list[pa.Array]
    codes: np.ndarray | None = None
    runs: bool = False


def csv_lines(result: Result, parts: list[Segment], start: int, stop: int, decimals: int) -> memoryview:
    """``Row#,<cells>,`` (no ``Row#`` for a result not ``numbered``) and a newline for each row
    in ``[start, stop)`` (``parts``:
    :func:`~asysstats.writing.csvcodes.segments`)."""
    coded: list[Piece | None] = []
    values = []  # per row, or a coded segment's codes
    for segment in parts:
        if segment.coding is not None:
            cells_used, codes = segment.coding.at(start, stop)
            coded.append(Piece([cells_used], codes))
            values.append(codes)
            continue
        column = result.frame[segment.columns[0].name]
        if isinstance(column, TextColumn):  # quoted as it is made
            values.append(column.csv_cells(slice(start, stop)))
            coded.append(Piece([values[-1]]))
            continue
        values.append(column[start:stop])
        coded.append(piece_coding(segment.columns[0].kind, values[-1], result.strings, decimals))
        if coded[-1] is not None:
            values[-1] = cast(np.ndarray, coded[-1].codes)  # piece_coding codes every row
    kinds = [segment.columns[0].kind for segment in parts]
    columns = [Piece([row_numbers(start, stop)])] * result.numbered
    for (first, last), changed in run_groups(values, [p is None for p in coded]):
        if changed is not None:
            columns.append(run_cells(kinds[first:last], values[first:last], coded[first:last], changed,
                                     result.strings, decimals))
        else:
            piece = coded[first]
            columns.append(row_cells(kinds[first], values[first], result.strings, decimals) if piece is None else piece)
    del values, coded
    line = []  # the cells of the lines in order, each array one cell per row
    for kind, run in groupby(columns, key=lambda c: "runs" if c.runs else c.codes is not None):
        same = list(run)
        for piece in same if kind == "runs" else combined(same) if kind else same:
            if piece.codes is None:
                line += piece.cells
            else:  # joined once per distinct combination (or run), then laid out per row
                joined = pc.binary_join_element_wise(*piece.cells, COMMA) if len(piece.cells) > 1 else piece.cells[0]
                line.append(joined.take(from_numpy(piece.codes)))
    del columns
    return text_bytes(pc.binary_join_element_wise(*line, NEWLINE, COMMA))


def row_numbers(start: int, stop: int) -> pa.Array:
    return pc.cast(from_numpy(np.arange(start + 1, stop + 1)), pa.string())


def changes(values: np.ndarray | pa.Array) -> np.ndarray | None:
    """True where a row's value differs from the row before (and on the first row); None
    for a column that is not numeric numpy (text kept as Arrow strings)."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iufb" or len(values) == 0:
        return None
    changed = np.empty(len(values), dtype=bool)
    changed[0] = True
    changed[1:] = (values[1:] != values[:-1]).any(axis=tuple(range(1, values.ndim)))  # a pair: either side
    return changed


Groups = list[tuple[tuple[int, int], np.ndarray | None]]  # columns [first, last), the first row of each run


def run_groups(values: list[np.ndarray | pa.Array], per_row: list[bool]) -> Groups:
    """Consecutive columns ``[first, last)`` with the first row of each run of equal rows
    over them (``changes``), while the runs are few and some column would otherwise be
    formatted per row (``per_row``); a column alone with None otherwise."""
    changed = [changes(v) for v in values]
    groups: Groups = []
    first = 0
    while first < len(values):
        runs, last = changed[first], first + 1
        while runs is not None and last < len(values) and changed[last] is not None:
            more = runs | changed[last]
            if few_runs(more):
                runs, last = more, last + 1
            else:
                break
        if runs is not None and few_runs(runs) and any(per_row[first:last]):
            groups.append(((first, last), runs))
            first = last
        else:
            groups.append(((first, first + 1), None))
            first += 1
    return groups


def few_runs(changed: np.ndarray) -> bool:
    return np.count_nonzero(changed) * RUN_SHARE <= len(changed)


def run_cells(kinds: list[str], values: list[np.ndarray], coded: list[Piece | None], changed: np.ndarray,
              strings: StringPool, decimals: int) -> Piece:
    """The cells of consecutive columns (or coded segments) once per run of equal rows
    (``changed`` marks each run's first row); the codes number the runs. A coded column's
    ``values`` are its codes."""
    heads = np.flatnonzero(changed)
    parts = []
    for kind, column_values, column_coded in zip(kinds, values, coded):
        at_heads = column_values[heads]
        if column_coded is not None:
            parts.append(column_coded.cells[0].take(from_numpy(at_heads)))
            continue
        piece = column_cells(kind, at_heads, strings, decimals)
        parts += piece.cells if piece.codes is None else [c.take(from_numpy(piece.codes)) for c in piece.cells]
    return Piece(parts, np.cumsum(changed) - 1, runs=True)


def piece_coding(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int) -> Piece | None:
    """A column of a piece coded where it has few distinct values (:func:`coding`), else None."""
    coded = coding(kind, values)
    return None if coded is None else Piece([cells(kind, coded[0], strings, decimals, csv=True)], coded[1])


def column_cells(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int) -> Piece:
    """The CSV cells of a column of a piece (:func:`piece_coding` where it has few values)."""
    coded = piece_coding(kind, values, strings, decimals)
    return row_cells(kind, values, strings, decimals) if coded is None else coded


def row_cells(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int) -> Piece:
    """The CSV cells of a column of a piece formatted per row (it has many distinct values)."""
    if kind == INT and isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return Piece([integer_cells(*as_integers(values), csv=True, few=False)])
    return Piece([cells(kind, values, strings, decimals, csv=True)])


def combined(columns: list[Piece]) -> list[Piece]:
    """Consecutive coded columns as few pieces, each of the cells of the distinct
    combinations of its columns' values that occur; a column joins the piece before it
    while the combinations stay few. Combined a column at a time, so that keys stay dense."""
    pieces = []
    while columns:
        assert columns[0].codes is not None  # csv_lines combines coded columns only
        used, key = distinct(columns[0].codes)  # the first column's values that occur, dense
        steps, taken = [], 1
        for column in columns[1:] if len(used) * FEW_SHARE <= len(key) else []:  # else no combination is few
            uniq, joint = distinct(key * len(column.cells[0]) + column.codes)
            if len(uniq) * FEW_SHARE > len(key):
                break
            key = joint
            steps.append((uniq, len(column.cells[0])))
            taken += 1
        if taken == 1:
            pieces.append(columns[0])
        else:
            parts = []
            index = np.arange(int(key.max(initial=-1)) + 1)
            for (uniq, count), column in zip(reversed(steps), reversed(columns[:taken])):
                index, digit = np.divmod(uniq[index], count)
                parts.append(column.cells[0].take(from_numpy(digit)))
            parts.append(columns[0].cells[0].take(from_numpy(used[index])))
            pieces.append(Piece(parts[::-1], key))
        columns = columns[taken:]
    return pieces
