"""Writers of rule results: CSV (conventions 6-8), aligned console columns, JSON, XLSX, and
``py``: the bare lines of a one-text-column result (the ``ppu_op_unit_test`` script).

Every writer formats cells from the column kinds; rules never format.
"""

from __future__ import annotations

import io
import json
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.engine import Result
from asysstats.errors import AsysError
from asysstats.io.arrow import lines_bytes, text
from asysstats.io.csvcodes import segments
from asysstats.io.csvlines import csv_lines, row_numbers
from asysstats.io.format import DASH, cells, pair_sides, texts, typed_value
from asysstats.io.memory import release_memory
from asysstats.registry import INT, PAIR_INNER, PAIR_TEXT, TEXT

FORMATS = ("column", "csv", "json", "xlsx", "py")


CHUNK_ROWS = 1 << 15  # the smallest piece of CSV formatted and written at a time (bounded memory)
PIECES = 32  # a piece is a 32nd of the rows, from CHUNK_ROWS to 8 x CHUNK_ROWS: memory in proportion to the result
FORMATTERS = min(os.cpu_count() or 1, 2)  # pieces of CSV formatted at once (Arrow's kernels release the GIL)


def piece_rows(rows: int, formatters: int = 1) -> int:
    """Rows of a piece of CSV: fewer, less memory; more, less work per row (per-piece steps).
    Pieces formatted at once are each as much smaller, so that the rows in memory stay the same."""
    return max(min(max(CHUNK_ROWS, rows // PIECES), 8 * CHUNK_ROWS) // formatters, 1)


def _cell_columns(result: Result, decimals: int) -> list[pa.Array]:
    return [cells(c.kind, result.frame[c.name], result.strings, decimals) for c in result.columns]


def csv_parts(result: Result, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """Header ``Row#,<columns>,``; text always quoted, numbers never; each line ends with ','."""
    yield (",".join(["Row#"] + [c.name for c in result.columns]) + ",\n").encode("utf-8")
    step = piece_rows(result.rows, FORMATTERS)
    parts = segments(result, decimals)
    release_memory()  # what the rule freed: Arrow's allocator would keep it (the pieces reuse what they free)
    with ThreadPoolExecutor(FORMATTERS) as formatters:  # the pieces made side by side, given in order
        pending: deque[Future[memoryview]] = deque()
        for start in range(0, result.rows, step):
            pending.append(formatters.submit(csv_lines, result, parts, start, min(start + step, result.rows), decimals))
            if len(pending) == FORMATTERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def to_csv(result: Result, decimals: int = 1) -> str:
    return b"".join(csv_parts(result, decimals)).decode("utf-8")


def to_column(result: Result, decimals: int = 1) -> str:
    """An aligned, human-readable table: numbers right-aligned, text left-aligned."""
    names = ["Row#"] + [c.name for c in result.columns]
    arrays = [row_numbers(0, result.rows)] + _cell_columns(result, decimals)
    kinds = [INT] + [c.kind for c in result.columns]
    padded = []
    for name, array, kind in zip(names, arrays, kinds):
        width = max(len(name), pc.max(pc.utf8_length(array)).as_py() or 0) if len(array) else len(name)
        left = kind in (TEXT, PAIR_TEXT)
        pad = pc.utf8_rpad if left else pc.utf8_lpad
        padded.append((name.ljust(width) if left else name.rjust(width), "-" * width, pad(array, width)))
    header = "  ".join(p[0] for p in padded).rstrip()
    rule = "  ".join(p[1] for p in padded)
    if result.rows == 0:
        return f"{header}\n{rule}\n"
    body = pc.utf8_rtrim_whitespace(pc.binary_join_element_wise(*[p[2] for p in padded], text("  ")))
    return f"{header}\n{rule}\n" + bytes(lines_bytes(body)).decode("utf-8")


def typed_values(kind: str, values: np.ndarray, result: Result, decimals: int) -> list[object]:
    if kind == TEXT:
        return list(texts(values, result.strings))
    return [typed_value(kind, v, decimals) for v in np.asarray(values).tolist()]


def rows_as_records(result: Result, decimals: int = 1, pair_text: bool = False) -> list[dict[str, object]]:
    """Rows as dicts of typed values (int, float, str, None for missing); a comparison cell is
    a ``[base, target]`` list, or its ``base / target`` text with ``pair_text``."""
    columns = []
    for col in result.columns:
        values = result.frame[col.name]
        inner = PAIR_INNER.get(col.kind)
        if inner is None:
            columns.append(typed_values(col.kind, values, result, decimals))
        elif pair_text:
            columns.append(cells(col.kind, values, result.strings, decimals).to_pylist())
        else:
            sides = [typed_values(inner, side, result, decimals) for side in pair_sides(values)]
            columns.append([list(pair) for pair in zip(*sides)])
    names = [c.name for c in result.columns]
    return [dict(zip(names, row)) for row in zip(*columns)] if columns else []


def to_json(result: Result, decimals: int = 1) -> str:
    return json.dumps(rows_as_records(result, decimals), indent=1, ensure_ascii=False) + "\n"


def to_xlsx(result: Result, decimals: int = 1) -> bytes:
    """One sheet: typed cells, bold frozen header, autofilter, widths, a pie chart of the share column."""
    from openpyxl import Workbook
    from openpyxl.chart import PieChart, Reference
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    book = Workbook(write_only=False)
    sheet = book.active
    sheet.title = result.rule.name[:31]
    names = ["Row#"] + [c.name for c in result.columns]
    sheet.append(names)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    records = rows_as_records(result, decimals, pair_text=True)
    for number, record in enumerate(records, start=1):
        sheet.append([number] + [excel_safe(v) for v in record.values()])
    sheet.freeze_panes = "A2"
    last = get_column_letter(len(names))
    sheet.auto_filter.ref = f"A1:{last}{max(len(records), 1) + 1}"
    for index, name in enumerate(names, start=1):
        longest = max([len(name)] + [len(str(r.get(name, ""))) for r in records[:200]])
        sheet.column_dimensions[get_column_letter(index)].width = min(max(8, longest + 2), 60)
    share = result.rule.share
    label = next((c.name for c in result.columns if c.kind == TEXT), None)
    if share and label and records and share in names:
        chart = PieChart()
        chart.title = f"{result.rule.title}: {share}"
        top = min(len(records), 20) + 1
        data = Reference(sheet, min_col=names.index(share) + 1, min_row=1, max_row=top)
        labels = Reference(sheet, min_col=names.index(label) + 1, min_row=2, max_row=top)
        chart.add_data(data, titles_from_data=True)
        chart.set_categories(labels)
        sheet.add_chart(chart, f"{get_column_letter(len(names) + 2)}2")
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def excel_safe(value: object) -> object:
    """Missing cells print ``-``; strings that would be read as formulas stay text."""
    if value is None:
        return DASH
    if isinstance(value, str) and value.startswith("="):
        return "'" + value
    return value


def to_lines(result: Result) -> str:
    """``py``: the lines of a one-TEXT-column result alone (the script of ``ppu_op_unit_test``)."""
    if len(result.columns) != 1 or result.columns[0].kind != TEXT:
        raise AsysError(f"--format py: rule '{result.rule.name}' does not write a script (use csv, column, json, xlsx)")
    values = texts(result.frame[result.columns[0].name], result.strings)
    return "".join(f"{'' if v is None else v}\n" for v in values)


def render_parts(result: Result, fmt: str, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """The output of a result in a format, as consecutive pieces of bytes (CSV streams)."""
    if fmt == "csv":
        yield from csv_parts(result, decimals)
        return
    writer = {"py": lambda r, d: to_lines(r), "json": to_json, "xlsx": to_xlsx}.get(fmt, to_column)
    content = writer(result, decimals)
    yield content.encode("utf-8") if isinstance(content, str) else content


def render(result: Result, fmt: str, decimals: int = 1) -> str | bytes:
    data = b"".join(render_parts(result, fmt, decimals))
    return data if fmt == "xlsx" else data.decode("utf-8")
