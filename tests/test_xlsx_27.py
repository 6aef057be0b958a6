"""Issue 27 §5, spreadsheets people look at: no total in a chart, short legend labels, charts on
their own sheet, number formats, numeric comparison columns with a chart of the largest
changes, several results in one workbook. Checked in the workbook's XML and openpyxl's reading
of it (no spreadsheet program renders here)."""

from __future__ import annotations

import io
import zipfile

import openpyxl
import pytest

from asysstats.api.comparing import run_comparison
from asysstats.api.reports import open as open_report
from asysstats.rulebook import REGISTRY
from asysstats.synth.writer import ReportWriter
from asysstats.writing.spreadsheets import short_label, workbook

from conftest import CORPUS, run_cli
from test_compare_operators import op_paths  # noqa: F401
from test_compare_rules import kernels, pair_paths  # noqa: F401

LONG = ("void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)")


def xlsx(tmp_path, rule: str, *reports) -> openpyxl.Workbook:
    run = run_cli("stats", "-r", rule, "--format", "xlsx", "-o", tmp_path / "o", *reports)
    assert run.code == 0, run.err
    return openpyxl.load_workbook(tmp_path / f"o_{rule.split(':')[0]}.xlsx")


def chart_data(book) -> list[list[object]]:
    return [[cell.value for cell in row] for row in book["chart data"].iter_rows()]


def test_the_summary_row_never_enters_the_pie(op_paths, tmp_path):
    # ppu_op_type_sum of the base: Summary 290 ns, GEMM 240, PyTorch 50
    book = xlsx(tmp_path, "ppu_op_type_sum", op_paths[0])
    assert book.sheetnames == ["ppu_op_type_sum", "ppu_op_type_sum chart", "chart data"]
    assert book["ppu_op_type_sum"]["B2"].value == "Summary"  # the table keeps it
    assert chart_data(book) == [["Label", "PPU Operator Type Summary: Total Time (ns)"], ["GEMM", 240], ["PyTorch", 50]]
    assert book["chart data"].sheet_state == "hidden"


def test_the_chart_is_on_its_own_sheet_with_its_series_in_the_chart_data(op_paths, tmp_path):
    xlsx(tmp_path, "ppu_op_type_sum", op_paths[0])
    with zipfile.ZipFile(tmp_path / "o_ppu_op_type_sum.xlsx") as book:
        names = book.namelist()
        chart = book.read("xl/charts/chart1.xml").decode()
    assert "xl/chartsheets/sheet1.xml" in names  # the chart's own sheet: nothing of the table under it
    assert "xl/worksheets/_rels/sheet1.xml.rels" not in names  # the table's sheet draws nothing
    with zipfile.ZipFile(tmp_path / "o_ppu_op_type_sum.xlsx") as book:
        drawing = book.read("xl/drawings/drawing1.xml").decode()
    assert '<absoluteAnchor><pos x="0" y="0" /><ext cx="9144000" cy="6096000" />' in drawing
    assert "<pieChart>" in chart
    assert "'chart data'!B1" in chart and "'chart data'!$B$2:$B$3" in chart and "'chart data'!$A$2:$A$3" in chart


@pytest.fixture
def long_names(tmp_path):
    """One device, three kernels: LONG 300 ns, LONG's float->half twin 200 ns, volta_sgemm 100 ns."""
    writer = ReportWriter(tmp_path / "k.asysrep")
    writer.add("devices", id=[0], name=["PPU"])
    kernels(writer, 0, [(0, 300), (300, 500), (500, 600)],
            [LONG, LONG.replace("float", "half"), "volta_sgemm_128x64_nn"])
    writer.close()
    return writer.path


def test_legend_labels_are_short_and_the_table_keeps_the_full_names(long_names, tmp_path):
    book = xlsx(tmp_path, "hggc_ppu_kern_sum", long_names)
    sheet = book["hggc_ppu_kern_sum"]
    names = [row[0].value for row in sheet.iter_rows(min_row=2, min_col=10, max_col=10)]
    assert names == [LONG, LONG.replace("float", "half"), "volta_sgemm_128x64_nn"]
    assert chart_data(book)[1:] == [["vectorized_elementwise_kernel<4, at::...", 50],
                                    ["vectorized_elementwise_kernel<4, at::... #2", 33.3],
                                    ["volta_sgemm_128x64_nn", 16.7]]


@pytest.mark.parametrize("name, label", [
    (LONG, "vectorized_elementwise_kernel<4, at::..."),
    ("aten::linear, sizes = [[1, 141, 512], [512, 512], [512]]", "linear, sizes = [[1, 141, 512], [512,..."),
    ("GEMM", "GEMM"), (None, "-"),
])
def test_short_labels(name, label):
    assert short_label(name) == label and len(label) <= 40


def test_number_formats_thousands_and_one_decimal(long_names, tmp_path):
    sheet = xlsx(tmp_path, "hggc_ppu_kern_sum", long_names)["hggc_ppu_kern_sum"]
    header = [cell.value for cell in sheet[1]]
    row = {name: cell for name, cell in zip(header, sheet[2])}
    assert (row["Row#"].number_format, row["Total Time (ns)"].number_format, row["Instances"].number_format) == \
        ("#,##0", "#,##0", "#,##0")
    assert row["Time (%)"].number_format == "0.0" and row["Time (%)"].value == 50
    assert row["Name"].number_format == "General"


def test_a_comparison_has_numeric_columns_and_a_bar_chart_of_the_largest_changes(pair_paths, tmp_path):
    # kernel totals (base / target): add 160/180, mul 50/100, only_target -/30, only_base 20/-, zero 0/10
    book = xlsx(tmp_path, "ppu_kernel_summary_compare", *pair_paths)
    sheet = book["ppu_kernel_summary_compare"]
    header = [cell.value for cell in sheet[1]]
    assert header[:6] == ["Row#", "Device Name", "Base Instances", "Target Instances", "Base Percent (%)",
                          "Target Percent (%)"]
    total = [[row[header.index(name)].value for name in ("Base Total (ns)", "Target Total (ns)", "Total Ratio")]
             for row in sheet.iter_rows(min_row=2)]
    assert total == [[160, 180, 1.1], [50, 100, 2.0], ["-", 30, "-"], [20, "-", "-"], [0, 10, "-"]]
    assert sheet.cell(2, header.index("Target Total (ns)") + 1).number_format == "#,##0"
    title = "PPU Kernel Summary Comparison: largest changes of Total (ns) (target - base)"
    assert chart_data(book) == [["Label", title], ["mul", 50], ["add", 20], ["zero", 10]]  # rows of both reports only
    with zipfile.ZipFile(tmp_path / "o_ppu_kernel_summary_compare.xlsx") as archive:
        chart = archive.read("xl/charts/chart1.xml").decode()
    assert 'barDir val="bar"' in chart and "'chart data'!$B$2:$B$4" in chart


def test_the_type_comparison_charts_no_summary(op_paths, tmp_path):
    book = xlsx(tmp_path, "ppu_operator_type_summary_compare", *op_paths)
    assert [row[0] for row in chart_data(book)[1:]] == ["GEMM", "PyTorch"]  # -90 and +60 ns; Summary -30 left out


def test_several_results_make_one_workbook_a_sheet_each(pair_paths, op_paths):
    with open_report(pair_paths[0]) as base, open_report(pair_paths[1]) as target:
        results = [run_comparison(REGISTRY.get(name), REGISTRY.get(name).parse_options({}), base, target)
                   for name in ("ppu_kernel_summary_compare", "ppu_time_util_compare")]
    with open_report(op_paths[0]) as report:
        kern_sum = REGISTRY.get("hggc_ppu_kern_sum")
        results.append(report.run(kern_sum, kern_sum.parse_options({})))
    book = openpyxl.load_workbook(io.BytesIO(workbook(results + results[2:])))
    assert book.sheetnames == ["ppu_kernel_summary_compare", "ppu_kernel_summary_compa chart", "ppu_time_util_compare",
                               "ppu_time_util_compare chart", "hggc_ppu_kern_sum", "hggc_ppu_kern_sum chart",
                               "hggc_ppu_kern_sum (2)", "hggc_ppu_kern_sum (2) chart", "chart data"]
    assert [len(chart._charts) for chart in book.chartsheets] == [1, 1, 1, 1]


def sheet_rows(book, title: str) -> list[list[object]]:
    return [[cell.value for cell in row] for row in book[title].iter_rows()]


def test_an_output_naming_an_xlsx_file_is_one_workbook_of_the_run(op_paths, tmp_path):
    (tmp_path / "out").mkdir()
    book_path = tmp_path / "out" / "book.xlsx"
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum,ppu_op_type_sum", "--format", "xlsx", "-o", book_path, op_paths[0])
    assert run.code == 0, run.err
    assert [path.name for path in book_path.parent.iterdir()] == ["book.xlsx"]  # one file, no temporary left
    book = openpyxl.load_workbook(book_path)
    assert book.sheetnames == ["hggc_ppu_kern_sum", "hggc_ppu_kern_sum chart", "ppu_op_type_sum",
                               "ppu_op_type_sum chart", "chart data"]
    for rule in ("hggc_ppu_kern_sum", "ppu_op_type_sum"):  # each sheet as the rule's own workbook has it
        assert sheet_rows(book, rule) == sheet_rows(xlsx(tmp_path, rule, op_paths[0]), rule)
    header, summary = sheet_rows(book, "ppu_op_type_sum")[:2]
    assert (summary[1], summary[header.index("Total Time (ns)")]) == ("Summary", 290)
    again = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "xlsx", "-o", book_path, op_paths[0])
    assert again.code == 2 and again.err == f"error: {book_path} exists; use -f true to overwrite it\n"


def test_a_workbook_of_several_reports_names_each_sheet_by_its_report(op_paths, tmp_path):
    odd = tmp_path / "run[1].asysrep"  # a character no sheet title may hold
    odd.write_bytes(op_paths[1].read_bytes())
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "xlsx", "-o", tmp_path / "b.xlsx", op_paths[0], odd)
    assert run.code == 0, run.err
    names = openpyxl.load_workbook(tmp_path / "b.xlsx").sheetnames
    label = op_paths[0].stem
    assert names == [f"{label}_hggc_ppu_kern_sum"[:31], f"{label}_hggc_ppu_kern_sum"[:24] + " chart",
                     "run_1__hggc_ppu_kern_sum", "run_1__hggc_ppu_kern_sum chart", "chart data"]


BERT = (CORPUS / "kineto" / "tracelens_h100_bert.json.gz", CORPUS / "kineto" / "tracelens_mi300_bert.json.gz")


@pytest.mark.skipif(not all(path.exists() for path in BERT), reason="Kineto corpus absent")
def test_a_real_comparison_workbook(tmp_path):
    book = xlsx(tmp_path, "ppu_operator_summary_compare", *BERT)
    data = chart_data(book)
    # the attention of an MI300 takes 76 us more than of an H100: the largest change
    assert len(data) == 11 and data[1][0].startswith("scaled_dot_product_att") and data[1][1] == 76248
    sheet = book["ppu_operator_summary_compare"]
    header = [cell.value for cell in sheet[1]]
    totals = [row[header.index("Target Total (ns)")].value for row in sheet.iter_rows(min_row=2)]
    assert all(isinstance(value, int) for value in totals) and sum(totals) > 300_000
