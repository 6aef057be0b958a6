"""Writers of rule results: CSV (docs/decisions.md D6), aligned console columns, JSON, XLSX, and
``py``: the bare lines of a one-text-column result (the ``ppu_op_unit_test`` script).

Every writer formats cells from the column kinds; rules never format.
"""

from __future__ import annotations

import io
import os
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import lines_bytes, text
from asysstats.core.errors import AsysError
from asysstats.core.memory import release_memory
from asysstats.core.result import PAIR_INNER, PAIR_TEXT, TEXT, Result
from asysstats.writing.csvcodes import segments
from asysstats.writing.csvlines import csv_lines, row_numbers
from asysstats.writing.format import DASH, cells, pair_sides, texts, typed_column

FORMATS = ("column", "csv", "json", "xlsx", "py")


CHUNK_ROWS = 1 << 15  # the smallest piece of CSV formatted and written at a time (bounded memory)
PIECES = 32  # a piece is a 32nd of the rows, from CHUNK_ROWS to 8 x CHUNK_ROWS: memory in proportion to the result
XLSX_ROWS = 1 << 20  # the rows of a spreadsheet's sheet (Excel, LibreOffice), the header one of them
XLSX_TEXT_CHARS = 32_767  # the characters of a spreadsheet's cell (Excel, LibreOffice)
# what an OOXML string escapes: the characters XML 1.0 cannot hold, CR (XML reads it back as LF),
# lone surrogates, and the '_' that starts a literal _xHHHH_
NOT_IN_XML = re.compile(r"[\x00-\x08\x0b-\x1f\ud800-\udfff\ufffe\uffff]|_(?=x[0-9A-Fa-f]{4}_)")
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
    """Header ``Row#,<columns>,``; text always quoted, numbers never; each line ends with ','."""
    yield (",".join(["Row#"] + [c.name for c in result.columns]) + ",\n").encode("utf-8")
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
    names = ["Row#"] + [c.name for c in result.columns]
    left = [False] + [c.kind in (TEXT, PAIR_TEXT) for c in result.columns]

    def piece_cells(start: int, stop: int) -> list[pa.Array]:
        return [row_numbers(start, stop)] + [cells(c.kind, result.frame[c.name][start:stop], result.strings, decimals,
                                                   console=True) for c in result.columns]

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
    """One sheet: typed cells, bold frozen header, autofilter, widths, a pie chart of the share
    column. Written a piece of rows at a time (openpyxl's write-only sheet: no cell objects kept)."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.chart import PieChart, Reference
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    if result.rows >= XLSX_ROWS:
        raise AsysError(f"--format xlsx: rule '{result.name}' has {result.rows:,} rows, more than a sheet holds "
                        f"({XLSX_ROWS - 1:,} under its header); use csv, or rows=N")
    book = Workbook(write_only=True)
    sheet = book.create_sheet(result.name[:31])
    names = ["Row#"] + [c.name for c in result.columns]
    last = get_column_letter(len(names))
    first = rows_as_records(result, decimals, pair_text=True, rows=slice(0, 200))
    for index, name in enumerate(names, start=1):  # a write-only sheet takes its widths before its rows
        longest = max([len(name)] + [len(str(r.get(name, ""))) for r in first])
        sheet.column_dimensions[get_column_letter(index)].width = min(max(8, longest + 2), 60)
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{last}{max(result.rows, 1) + 1}"
    header = [WriteOnlyCell(sheet, name) for name in names]
    for cell in header:
        cell.font = Font(bold=True)
    sheet.append(header)
    try:
        for start in range(0, result.rows, CHUNK_ROWS):
            records = rows_as_records(result, decimals, pair_text=True, rows=slice(start, start + CHUNK_ROWS))
            for number, record in enumerate(records, start=start + 1):
                sheet.append([number] + [xlsx_cell(sheet, value, result.name, column)
                                         for column, value in record.items()])
    except AsysError:  # a text no cell holds: saved nowhere, which removes the sheet's temporary file
        book.save(io.BytesIO())
        raise
    share = result.share
    label = next((c.name for c in result.columns if c.kind == TEXT), None)
    if share and label and result.rows and share in names:
        chart = PieChart()
        chart.title = f"{result.title}: {share}"
        top = min(result.rows, 20) + 1
        data = Reference(sheet, min_col=names.index(share) + 1, min_row=1, max_row=top)
        labels = Reference(sheet, min_col=names.index(label) + 1, min_row=2, max_row=top)
        chart.add_data(data, titles_from_data=True)
        chart.set_categories(labels)
        sheet.add_chart(chart, f"{get_column_letter(len(names) + 2)}2")
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def xlsx_cell(sheet: Any, value: object, rule: str, column: str) -> object:
    """A cell of an XLSX row: a number as it is; a missing cell ``-``; every text a text cell,
    never a formula or an error value (``=1+2``, ``#N/A``), its characters unaltered where XML
    holds them and escaped where it does not (:func:`ooxml_text`, docs/decisions.md D18)."""
    if value is None:
        return DASH
    if not isinstance(value, str):
        return value
    text = ooxml_text(value)
    if len(text) > XLSX_TEXT_CHARS:  # openpyxl would cut it silently
        raise AsysError(f"--format xlsx: rule '{rule}': column '{column}' holds a text of {len(text):,} characters, "
                        f"more than a spreadsheet cell holds ({XLSX_TEXT_CHARS:,}); use csv or json")
    if not text.startswith(("=", "#")):  # openpyxl stores it as text
        return text
    from openpyxl.cell import WriteOnlyCell

    cell = WriteOnlyCell(sheet, text)
    cell.data_type = "s"  # not the formula or error value openpyxl infers from the first character
    return cell


def ooxml_text(text: str) -> str:
    """``text`` as an OOXML string (ECMA-376 ST_Xstring) holds it: a character XML 1.0 cannot
    hold (most C0 controls; CR, which XML reads back as LF) as ``_xHHHH_``, the escape Excel and
    LibreOffice decode; a literal ``_xHHHH_`` has its ``_`` escaped (``_x005F_xHHHH_``), so
    that it reads back as itself."""
    return NOT_IN_XML.sub(lambda found: f"_x{ord(found[0]):04X}_", text)


def to_lines(result: Result) -> str:
    """``py``: the lines of a one-TEXT-column result alone (the script of ``ppu_op_unit_test``)."""
    if len(result.columns) != 1 or result.columns[0].kind != TEXT:
        raise AsysError(f"--format py: rule '{result.name}' does not write a script (use csv, column, json, xlsx)")
    values = texts(result.frame[result.columns[0].name], result.strings)
    return "".join(f"{'' if v is None else v}\n" for v in values)


def render_parts(result: Result, fmt: str, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """The output of a result in a format, as consecutive pieces of bytes (CSV, columns and JSON stream)."""
    streamed = {"csv": csv_parts, "column": column_parts, "json": json_parts}.get(fmt)
    if streamed is not None:
        yield from streamed(result, decimals)
        return
    content = to_xlsx(result, decimals) if fmt == "xlsx" else to_lines(result)
    yield content.encode("utf-8") if isinstance(content, str) else content


def render(result: Result, fmt: str, decimals: int = 1) -> str | bytes:
    data = b"".join(render_parts(result, fmt, decimals))
    return data if fmt == "xlsx" else data.decode("utf-8")
