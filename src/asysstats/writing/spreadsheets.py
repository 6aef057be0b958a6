"""XLSX workbooks of rule results: a sheet per result, and a chart sheet beside it.

A sheet holds typed cells under a bold, frozen, filtered header; integers show thousands
separators and percentages and ratios one decimal (docs/decisions.md D18). A comparison's
``base / target`` numbers are two numeric columns, ``Base <column>`` and ``Target <column>``,
so that they sort and sum; its pairs of names stay one text cell. Charts go on a sheet of
their own, clear of the data, and never hold a total (a ``Summary`` row): a result with a
share column gets a pie of its first rows; a comparison whose share column is a pair gets a
bar chart of the largest changes (target - base) of the rows in both reports. Their labels
are short forms of the names (:func:`short_label`), kept with their values in a hidden
``chart data`` sheet; the full names stay in the table.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from asysstats.core.errors import AsysError
from asysstats.core.files import stop_signals_held
from asysstats.core.result import DECIMAL, INT, PAIR_INNER, PAIR_TEXT, PERCENT, PLACES, RATIO, TEXT, Column, Result
from asysstats.writing.format import DASH, pair_sides, rows_as_records, typed_column

XLSX_ROWS = 1 << 20  # the rows of a spreadsheet's sheet (Excel, LibreOffice), the header one of them
XLSX_TEXT_CHARS = 32_767  # the characters of a spreadsheet's cell (Excel, LibreOffice)
# what an OOXML string escapes: the characters XML 1.0 cannot hold, CR (XML reads it back as LF),
# lone surrogates, and the '_' that starts a literal _xHHHH_
NOT_IN_XML = re.compile(r"[\x00-\x08\x0b-\x1f\ud800-\udfff\ufffe\uffff]|_(?=x[0-9A-Fa-f]{4}_)")
SHEET_PIECE_ROWS = 1 << 15  # rows of a sheet formatted at a time (openpyxl's write-only sheet keeps none)

TOTAL_LABELS = frozenset({"Summary"})  # the rows of totals (ppu_op_type_sum's): never in a chart
PIE_ROWS = 20  # slices of a pie
CHANGE_ROWS = 10  # bars of the largest changes
LABEL_CHARS = 40  # of a chart label
SHEET_CHARS = 31  # of a sheet's title (Excel)
NOT_IN_TITLES = re.compile(r"[\[\]:*?/\\]")  # characters Excel refuses in a sheet title
WIDTH_SAMPLE = 200  # rows whose cells give the columns' widths
CHART_DATA = "chart data"
CHART_SIZE = (9_144_000, 6_096_000)  # EMU of a chart sheet's chart: 24 x 16 cm, as a spreadsheet draws one
LABEL_NOISE = re.compile(r"^void\s+|\(anonymous namespace\)::")  # of a demangled kernel name


@dataclass(frozen=True)
class SheetColumn:
    """A column of a sheet: its header, the kind of its cells, the result column it shows and
    the side of a pair it takes (0 base, 1 target; None: the whole value)."""

    header: str
    kind: str
    source: Column
    part: int | None = None


@dataclass
class Chart:
    """A chart to draw: its kind (``pie`` or ``bar``), title, labels and values."""

    kind: str
    title: str
    labels: list[str]
    values: list[float]


def sheet_columns(result: Result) -> list[SheetColumn]:
    """A numeric pair column is two columns, ``Base <name>`` and ``Target <name>``."""
    out = []
    for column in result.columns:
        inner = PAIR_INNER.get(column.kind)
        if inner is None or column.kind == PAIR_TEXT:
            out.append(SheetColumn(column.name, TEXT if column.kind == PAIR_TEXT else column.kind, column))
        else:
            out += [SheetColumn(f"{side} {column.name}", inner, column, part) for part, side in enumerate(("Base",
                                                                                                           "Target"))]
    return out


def number_formats(decimals: int) -> dict[str, str]:
    """The number format of each numeric kind: thousands separators, one decimal (``decimals``
    for percentages, as ``csv:ratio=.N%`` asks)."""
    places = "0." + "0" * decimals if decimals > 0 else "0"
    return {INT: "#,##0", PERCENT: places, RATIO: "0.0", DECIMAL: "#,##0.0"} | {
        kind: "#,##0." + "0" * count for kind, count in PLACES.items()}


def row_values(result: Result, columns: list[SheetColumn], rows: slice, decimals: int) -> list[list[object]]:
    """The cells of ``rows``, column by column of the sheet, as typed Python values."""
    records = rows_as_records(result, decimals, rows=rows)
    out = []
    for record in records:
        row = []
        for column in columns:
            value = record[column.source.name]
            if column.source.kind == PAIR_TEXT:
                value = " / ".join(DASH if side is None else str(side) for side in value)  # type: ignore[attr-defined]
            elif column.part is not None:
                value = value[column.part]  # type: ignore[index]
            row.append(value)
        out.append(row)
    return out


def short_label(name: object) -> str:
    """A legend's form of a name: without ``void``, anonymous namespaces and the namespaces
    before the function's own name (``void at::native::(anonymous namespace)::add<float>(...)``
    -> ``add<float>(...)``; an operator's fields after its name: ``aten::mm, sizes = ...`` ->
    ``mm, sizes = ...``), then at most :data:`LABEL_CHARS` characters (``...`` ending)."""
    text = LABEL_NOISE.sub("", DASH if name is None else str(name))
    cut = min([at for at in (text.find("<"), text.find("("), text.find(", ")) if at >= 0] + [len(text)])
    text = text[:cut].rsplit("::", 1)[-1] + text[cut:]
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 3] + "..."


def distinct_labels(names: list[object]) -> list[str]:
    """Short labels, told apart by `` #2``, `` #3`` where two names shorten alike, as cells
    hold them (:func:`ooxml_text`)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        label = short_label(name)
        seen[label] = seen.get(label, 0) + 1
        out.append(ooxml_text(label if seen[label] == 1 else f"{label} #{seen[label]}"))
    return out


def label_column(result: Result) -> Column | None:
    """The column naming a chart's rows: the rule's ``label``, else its first text column."""
    found = next((c for c in result.columns if c.name == result.label), None)
    return found or next((c for c in result.columns if c.kind == TEXT), None)


def chart_of(result: Result, decimals: int) -> Chart | None:
    """The result's chart: a pie of its share column, or the largest changes of a pair share column."""
    share = next((c for c in result.columns if c.name == result.share), None)
    label = label_column(result)
    if share is None or label is None or not result.rows:
        return None
    inner = PAIR_INNER.get(share.kind)
    shown = slice(None) if inner is not None else slice(0, WIDTH_SAMPLE)  # a pie's rows are its first ones
    names = typed_column(label.kind, result.frame[label.name][shown], result.strings, decimals)
    if inner is None:
        values = typed_column(share.kind, result.frame[share.name][:WIDTH_SAMPLE], result.strings, decimals)
        rows = [row for row, value in enumerate(values) if value is not None and names[row] not in TOTAL_LABELS]
        rows = rows[:PIE_ROWS]
        return Chart("pie", f"{result.title}: {share.name}", distinct_labels([names[r] for r in rows]),
                     [float(values[r]) for r in rows])  # type: ignore[arg-type]
    base, target = (np.array([np.nan if v is None else v for v in typed_column(inner, side, result.strings, decimals)],
                             dtype=np.float64) for side in pair_sides(result.frame[share.name]))
    totals = np.array([name in TOTAL_LABELS for name in names], dtype=bool)
    change = np.where(np.isfinite(base) & np.isfinite(target) & ~totals, target - base, np.nan)
    rows = [row for row in np.argsort(-np.abs(np.nan_to_num(change)), kind="stable")[:CHANGE_ROWS].tolist()
            if np.isfinite(change[row]) and change[row] != 0]
    if not rows:
        return None
    return Chart("bar", f"{result.title}: largest changes of {share.name} (target - base)",
                 distinct_labels([names[r] for r in rows]), [float(change[r]) for r in rows])


def unique_title(wanted: str, taken: set[str]) -> str:
    """A sheet title of at most 31 characters that no other sheet of the workbook has, without
    the characters a title cannot hold (``[]:*?/\\``, from a report's file name)."""
    wanted = NOT_IN_TITLES.sub("_", wanted)
    title, number = wanted[:SHEET_CHARS], 1
    while title.lower() in taken:
        number += 1
        suffix = f" ({number})"
        title = wanted[:SHEET_CHARS - len(suffix)] + suffix
    taken.add(title.lower())
    return title


def write_sheet(book: Any, title: str, result: Result, decimals: int) -> None:
    """One result's sheet, a piece of rows at a time (openpyxl's write-only sheet)."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    sheet = book.create_sheet(title)
    columns = sheet_columns(result)
    headers = ["Row#"] + [c.header for c in columns]
    sample = row_values(result, columns, slice(0, WIDTH_SAMPLE), decimals)
    for index, header in enumerate(headers):  # a write-only sheet takes its widths before its rows
        cells = [len(header)] + [len(f"{row[index - 1]:,}" if isinstance(row[index - 1], int) else str(row[index - 1]))
                                 for row in sample] if index else [len(header), len(str(result.rows))]
        sheet.column_dimensions[get_column_letter(index + 1)].width = min(max(8, max(cells) + 2), 60)
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{get_column_letter(len(headers))}{max(result.rows, 1) + 1}"
    header_cells = [WriteOnlyCell(sheet, header) for header in headers]
    for cell in header_cells:
        cell.font = Font(bold=True)
    with stop_signals_held():  # the first row makes the sheet's temporary file, then records it for removal
        sheet.append(header_cells)
    formats = number_formats(decimals)
    styled = [WriteOnlyCell(sheet) for _ in columns]  # one cell a column, written as each row is appended
    for cell, column in zip(styled, columns):
        cell.number_format = formats.get(column.kind, "General")
    number = WriteOnlyCell(sheet)
    number.number_format = formats[INT]
    for start in range(0, result.rows, SHEET_PIECE_ROWS):
        rows = row_values(result, columns, slice(start, start + SHEET_PIECE_ROWS), decimals)
        for offset, values in enumerate(rows):
            number.value = start + offset + 1
            sheet.append([number] + [cell_of(cell, value, result.name, column.header)
                                     for cell, value, column in zip(styled, values, columns)])


def cell_of(styled: Any, value: object, rule: str, header: str) -> object:
    """A number in its column's formatted cell; a text or a missing value as :func:`xlsx_cell` writes it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        styled.value = value
        return styled
    return xlsx_cell(styled.parent, value, rule, header)


def draw_charts(book: Any, charts: list[tuple[Any, Chart]]) -> None:
    """Each chart on its chart sheet, its labels and values in the hidden ``chart data`` sheet
    (two columns a chart, side by side)."""
    from openpyxl.chart import BarChart, PieChart, Reference
    from openpyxl.drawing.spreadsheet_drawing import AbsoluteAnchor
    from openpyxl.drawing.xdr import XDRPoint2D, XDRPositiveSize2D

    if not charts:
        return
    data = book.create_sheet(CHART_DATA)
    data.sheet_state = "hidden"
    longest = max(len(chart.labels) for _, chart in charts)
    with stop_signals_held():  # the first row makes the sheet's temporary file
        data.append([part for _, chart in charts for part in ("Label", chart.title[:255])])
    for row in range(longest):
        data.append([part for _, chart in charts
                     for part in ((chart.labels[row], chart.values[row]) if row < len(chart.labels) else (None, None))])
    for index, (sheet, chart) in enumerate(charts):
        drawn = PieChart() if chart.kind == "pie" else BarChart()
        if chart.kind == "bar":
            drawn.type, drawn.legend = "bar", None
            drawn.y_axis.title = "target - base"
        drawn.title = chart.title
        values = Reference(data, min_col=2 * index + 2, min_row=1, max_row=len(chart.labels) + 1)
        labels = Reference(data, min_col=2 * index + 1, min_row=2, max_row=len(chart.labels) + 1)
        drawn.add_data(values, titles_from_data=True)
        drawn.set_categories(labels)
        sheet.add_chart(drawn)
        drawn.anchor = AbsoluteAnchor(pos=XDRPoint2D(0, 0), ext=XDRPositiveSize2D(*CHART_SIZE))  # not 0 x 0


def workbook(results: Sequence[Result], decimals: int = 1, titles: Sequence[str] | None = None) -> bytes:
    """One workbook: a sheet per result (titled by its rule, or its ``titles``, told apart when
    two share a title), each followed by its chart sheet when it has a chart."""
    from openpyxl import Workbook

    for result in results:
        if result.rows >= XLSX_ROWS:
            raise AsysError(f"--format xlsx: rule '{result.name}' has {result.rows:,} rows, more than a sheet holds "
                            f"({XLSX_ROWS - 1:,} under its header); use csv, or rows=N")
    book = Workbook(write_only=True)
    taken: set[str] = {CHART_DATA}
    charts = []
    try:
        for result, wanted in zip(results, titles or [result.name for result in results]):
            title = unique_title(wanted, taken)
            write_sheet(book, title, result, decimals)
            chart = chart_of(result, decimals)
            if chart is not None:
                charts.append((book.create_chartsheet(unique_title(f"{title[:24]} chart", taken)), chart))
        draw_charts(book, charts)
    except AsysError:  # a text no cell holds: saved nowhere, which removes the sheets' temporary files
        book.save(io.BytesIO())
        raise
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
