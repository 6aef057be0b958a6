"""Writers of rule results: CSV (docs/decisions.md D6), aligned console columns, JSON, XLSX, and
``py``: the bare lines of a one-text-column result (the ``ppu_op_unit_test`` script).

Every writer formats cells from the column kinds; rules never format.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import lines_bytes, text
from asysstats.core.errors import AsysError
from asysstats.core.memory import release_memory
from asysstats.core.result import NSYS_STATS, PAIR_TEXT, TEXT, Result
from asysstats.writing.csvcodes import segments
from asysstats.writing.csvlines import csv_lines, row_numbers
from asysstats.writing.format import cells, rows_as_records, texts  # noqa: F401  (rows_as_records: a public name)

FORMATS = ("column", "csv", "json", "xlsx", "py", "tsv")  # tsv: of the rules that mirror nsys stats only


CHUNK_ROWS = 1 << 15  # the smallest piece of CSV formatted and written at a time (bounded memory)
PIECES = 32  # a piece is a 32nd of the rows, from CHUNK_ROWS to 8 x CHUNK_ROWS: memory in proportion to the result
FORMATTERS = min(os.cpu_count() or 1, 2)  # pieces of CSV formatted at once (Arrow's kernels release the GIL)
Piece = TypeVar("Piece")


def piece_rows(rows: int, formatters: int = 1) -> int:
    """Rows of a piece of CSV: fewer, less memory; more, less work per row (per-piece steps).
    Pieces formatted at once are each as much smaller, so that the rows in memory stay the same."""
    return max(min(max(CHUNK_ROWS, rows // PIECES), 8 * CHUNK_ROWS) // formatters, 1)


def in_pieces(rows: int, make: Callable[[int, int], Piece], formatters: int = 1) -> Iterator[Piece]:
    """``make(start, stop)`` for consecutive pieces of ``rows`` rows (:func:`piece_rows`), given
    in order; ``formatters`` pieces are made side by side, on threads."""
    step = piece_rows(rows, formatters)
    with ThreadPoolExecutor(formatters) as pool:
        pending: deque[Future[Piece]] = deque()
        for start in range(0, rows, step):
            pending.append(pool.submit(make, start, min(start + step, rows)))
            if len(pending) == formatters:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def csv_parts(result: Result, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """Header ``Row#,<columns>,`` (no ``Row#`` for a result not ``numbered``); text always quoted, numbers
    never; each line ends with ','."""
    yield (",".join(["Row#"] * result.numbered + [c.name for c in result.columns]) + ",\n").encode("utf-8")
    parts = segments(result, decimals)
    release_memory()  # what the rule freed: Arrow's allocator would keep it (the pieces reuse what they free)
    yield from in_pieces(result.rows, lambda start, stop: csv_lines(result, parts, start, stop, decimals), FORMATTERS)


def to_csv(result: Result, decimals: int = 1) -> str:
    return b"".join(csv_parts(result, decimals)).decode("utf-8")


def to_column(result: Result, decimals: int = 1) -> str:
    return b"".join(column_parts(result, decimals)).decode("utf-8")


def column_parts(result: Result, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """An aligned, human-readable table: numbers right-aligned, text left-aligned. A result of
    more than one piece of rows is formatted twice, a piece at a time: once for the widths of
    the columns, once for the lines (bounded memory, and no text array past Arrow's 2 GB)."""
    names = ["Row#"] * result.numbered + [c.name for c in result.columns]
    left = [False] * result.numbered + [c.kind in (TEXT, PAIR_TEXT) for c in result.columns]

    def piece_cells(start: int, stop: int) -> list[pa.Array]:
        numbers = [row_numbers(start, stop)] * result.numbered
        return numbers + [cells(c.kind, result.frame[c.name][start:stop], result.strings, decimals, console=True)
                          for c in result.columns]

    def widths_of(arrays: list[pa.Array]) -> list[int]:
        return [pc.max(pc.utf8_length(array)).as_py() or 0 for array in arrays]

    def lines(arrays: list[pa.Array]) -> memoryview:
        padded = [(pc.utf8_rpad if on_left else pc.utf8_lpad)(array, width)
                  for array, width, on_left in zip(arrays, widths, left)]
        return lines_bytes(pc.utf8_rtrim_whitespace(pc.binary_join_element_wise(*padded, text("  "))))

    if result.rows <= piece_rows(result.rows, FORMATTERS):  # one piece (or none): formatted once
        made = [piece_cells(0, result.rows)] if result.rows else []
        measured: Iterable[list[int]] = map(widths_of, made)
    else:
        made = None
        measured = in_pieces(result.rows, lambda start, stop: widths_of(piece_cells(start, stop)), FORMATTERS)
    widths = [len(name) for name in names]
    for piece in measured:
        widths = list(map(max, widths, piece))
    header = "  ".join(n.ljust(w) if on_left else n.rjust(w) for n, w, on_left in zip(names, widths, left))
    yield f"{header.rstrip()}\n{'  '.join('-' * w for w in widths)}\n".encode("utf-8")
    if made is None:
        yield from in_pieces(result.rows, lambda start, stop: lines(piece_cells(start, stop)), FORMATTERS)
    else:
        yield from map(lines, made)


def to_json(result: Result, decimals: int = 1) -> str:
    return b"".join(json_parts(result, decimals)).decode("utf-8")


def json_parts(result: Result, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """A list of row objects with typed values, exactly as ``json.dumps(rows, indent=1,
    ensure_ascii=False)`` prints it (:mod:`~asysstats.writing.jsonlines`), in pieces of rows made
    side by side, as CSV's are."""
    if result.rows == 0 or not result.columns:
        yield b"[]\n"
        return
    from asysstats.writing.jsonlines import json_objects  # the runs that print JSON only: start-up time

    yield b"[\n"
    pieces = in_pieces(result.rows, lambda start, stop: json_objects(result, start, stop, decimals), FORMATTERS)
    for number, piece in enumerate(pieces):
        if number:
            yield b",\n"
        yield piece
    yield b"\n]\n"


def to_xlsx(result: Result, decimals: int = 1) -> bytes:
    """A workbook of one result (:func:`asysstats.writing.spreadsheets.workbook`)."""
    from asysstats.writing.spreadsheets import workbook  # the runs that write XLSX only: start-up time

    return workbook([result], decimals)


def to_lines(result: Result) -> str:
    """``py``: the lines of a one-TEXT-column result alone (the script of ``ppu_op_unit_test``)."""
    if len(result.columns) != 1 or result.columns[0].kind != TEXT:
        raise AsysError(f"--format py: rule '{result.name}' does not write a script (use csv, column, json, xlsx)")
    values = texts(result.frame[result.columns[0].name], result.strings)
    return "".join(f"{'' if v is None else v}\n" for v in values)


def render_parts(result: Result, fmt: str, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """The output of a result in a format, as consecutive pieces of bytes (CSV, columns and JSON stream);
    a result of a rule that mirrors ``nsys stats`` in NVIDIA's CSV, TSV and columns (:mod:`~asysstats.writing.nsys`)."""
    if result.mirrors == NSYS_STATS and fmt in ("csv", "tsv", "column"):
        from asysstats.writing import nsys  # the runs of NVIDIA's report names only

        yield from nsys.column_parts(result, decimals) if fmt == "column" else nsys.delimited_parts(result, fmt, decimals)
        return
    if fmt == "tsv":
        raise AsysError(f"--format tsv: rule '{result.name}' does not mirror an nsys stats report "
                        "(use csv, column, json, xlsx)")
    streamed = {"csv": csv_parts, "column": column_parts, "json": json_parts}.get(fmt)
    if streamed is not None:
        yield from streamed(result, decimals)
        return
    content = to_xlsx(result, decimals) if fmt == "xlsx" else to_lines(result)
    yield content.encode("utf-8") if isinstance(content, str) else content


def render(result: Result, fmt: str, decimals: int = 1) -> str | bytes:
    data = b"".join(render_parts(result, fmt, decimals))
    return data if fmt == "xlsx" else data.decode("utf-8")
