"""``asys compare BASE TARGET``: the default comparison set, a summary a person reads in ten
seconds, one CSV file per comparison, and an exit status a CI job can use.

Every comparison of the default set that is registered runs with its default options; one
whose data is absent from a report is skipped with a note. The output folder, and files that
would be overwritten without ``force``, are errors before any comparison runs; all results are
computed before any file is written. ``fail_if_slower`` makes the run fail (status 1) when a
total (``fail_on``: a rule of :data:`TOTALS`) grows by more than that many percent from base
to target. Rows present in one report only (operators or kernels added or removed, work
launched before one profiling window) are listed apart from the changes of matched rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from asysstats.analysis.comparison import as_float
from asysstats.analysis.declarations import Options, Rule
from asysstats.api.comparing import DEFAULT_COMPARE, Comparison, compare_reports, default_rules
from asysstats.api.reports import open
from asysstats.core.errors import AsysError, quoted
from asysstats.core.files import write_output
from asysstats.core.result import Result
from asysstats.writing.outputs import check_files, destination, report_labels
from asysstats.writing.writers import csv_parts

# Rule -> (column whose rows add up to its total, what the total is). The operator type
# summary's total is its Summary row.
TOTALS = {
    "ppu_kernel_summary_compare": ("Total (ns)", "total PPU kernel time"),
    "ppu_time_util_compare": ("PPU Active Time (ns)", "total PPU active time"),
    "ppu_operator_type_summary_compare": ("Total (ns)", "total PPU operator time"),
    "ppu_operator_summary_compare": ("Total (ns)", "total PPU operator time"),
    "pccl_desync_summary_compare": ("Total Duration (ns)", "total PCCL communication time"),
}
SUMMARY_ROW = "Summary"
TOP_ITEMS = 3
NAME_WIDTH = 70


def output_files(output: str | None, base: str, target: str, rules: list[str], force: bool) -> dict[str, Path]:
    """``<dir>/<prefix>_<rule>.csv``; without ``output``, ``<base>_vs_<target>_<rule>.csv`` here
    (reports of one stem named by their folders: ``rank0_report_vs_rank1_report``). Checked:
    none is a report compared, none is there without ``force``."""
    prefix = output if output else "_vs_".join(report_labels([Path(base), Path(target)]))
    files = {rule: Path(destination(prefix, Path(base), rule, "csv").target) for rule in rules}
    check_files([(path, rule) for rule, path in files.items()], [Path(base), Path(target)], force)
    return files


def run_compare(base: str, target: str, output: str | None, force: bool, settings: dict[str, Any],
                fail_if_slower: float | None = None, fail_on: str = "ppu_kernel_summary_compare",
                cache: bool = True, pair_devices: str = "") -> tuple[str, int]:
    """Compare, write the CSV files; return the console text and the exit status.
    ``pair_devices``: ``B=T,...``, the ``pair-devices`` option of the rules that take it."""
    if fail_on not in TOTALS:
        raise AsysError(f"--fail-on: expected one of {', '.join(TOTALS)}, got {quoted(fail_on)}")
    rules = default_rules()
    files = output_files(output, base, target, list(DEFAULT_COMPARE), force)  # before minutes of comparing
    pairs = {"pair-devices": pair_devices.replace(",", "/")} if pair_devices else {}

    def options_of(rule: Rule[Any]) -> Options:
        return rule.parse_options({k: v for k, v in pairs.items() if k in {o.name for o in rule.all_options}})

    with open(base, cache=cache, **settings) as base_report, open(target, cache=cache, **settings) as target_report:
        comparison = compare_reports(base_report, target_report, rules, options_of)
        verdict = regression_verdict(comparison, fail_on, fail_if_slower) if fail_if_slower is not None else None
        for rule, result in comparison.results.items():
            write_output(files[rule], csv_parts(result), force)
        lines = summary_lines(base, target, comparison)
    lines += ["", "Files:"] + [f"  {files[rule]}" for rule in comparison.results]
    lines += [f"Skipped {note}" for note in comparison.skipped]
    notes = dict.fromkeys(note for result in comparison.results.values() for note in result.notes)
    lines += [f"note: {note}" for note in notes]
    if verdict is None:
        return "\n".join(lines) + "\n", 0
    slower, message = verdict
    return "\n".join(lines + ["", message]) + "\n", 1 if slower else 0


def pair_column(result: Result, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Base and target values of a comparison column as floats (NaN where missing)."""
    pairs = np.asarray(result.frame[column]).reshape(-1, 2)
    return as_float(pairs[:, 0]), as_float(pairs[:, 1])


def total(comparison: Comparison, rule: str) -> tuple[float, float]:
    result = comparison.results.get(rule)
    if result is None:
        raise AsysError(f"--fail-if-slower: {rule} was not computed (see the skipped comparisons)")
    base, target = pair_column(result, TOTALS[rule][0])
    if rule == "ppu_operator_type_summary_compare":
        summary = np.asarray(result.frame["OP Type"]) == SUMMARY_ROW
        base, target = base[summary], target[summary]
    return float(np.nansum(base)), float(np.nansum(target))


def regression_verdict(comparison: Comparison, rule: str, threshold: float) -> tuple[bool, str]:
    """Whether the total of ``rule`` grew by more than ``threshold`` percent, and why."""
    base, target = total(comparison, rule)
    change = (target - base) * 100.0 / base if base > 0 else (np.inf if target > 0 else 0.0)
    slower = change > threshold
    what = f"{TOTALS[rule][1]} ({rule}) {ms(base)} -> {ms(target)} ({change:+.1f}%)"
    if slower:
        return True, f"FAIL: {what} regressed beyond --fail-if-slower {threshold:g}%"
    return False, f"OK: {what} within --fail-if-slower {threshold:g}%"


def ms(ns: float) -> str:
    return "-" if np.isnan(ns) else f"{ns / 1e6:.2f} ms"


def pct(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:.1f}%"


def times(base: float, target: float) -> str:
    return f"{target / base:.2f}x" if base > 0 and not np.isnan(target) else "-"


def short(name: object) -> str:
    text = "-" if name is None else str(name)
    return text if len(text) <= NAME_WIDTH else text[:NAME_WIDTH - 3] + "..."


def summary_lines(base: str, target: str, comparison: Comparison) -> list[str]:
    results = comparison.results
    lines = [f"Base:   {base}", f"Target: {target}", "(ratios are target / base)"]
    if "ppu_time_util_compare" in results:
        lines += ["", "PPU time utilisation per device:"] + utilisation_lines(results["ppu_time_util_compare"])
    if "ppu_operator_type_summary_compare" in results:
        lines += ["", "Operator types:"] + type_lines(results["ppu_operator_type_summary_compare"])
    rows = next((r for r in ("ppu_operator_summary_compare", "ppu_kernel_summary_compare") if r in results), None)
    if rows is not None:
        lines += [""] + change_lines(results[rows], rows)
    return lines


def utilisation_lines(result: Result) -> list[str]:
    in_use, active = pair_column(result, "In-Use (%)"), pair_column(result, "PPU Active Time (ns)")
    base_ids, target_ids = (np.asarray(result.frame[f"{side} Device ID"]) for side in ("Base", "Target"))
    order = np.lexsort((target_ids, np.where(base_ids >= 0, base_ids, np.iinfo(np.int64).max)))
    return [f"  device {device_pair(base_ids[i], target_ids[i])}: in-use {pct(in_use[0][i])} -> {pct(in_use[1][i])}, "
            f"active {ms(active[0][i])} -> {ms(active[1][i])} ({times(active[0][i], active[1][i])})"
            for i in order]


def device_pair(base: int, target: int) -> str:
    """``0`` for a device of one id in both reports, else ``0 / 2`` (``-`` for a missing side)."""
    if base == target:
        return str(base)
    return " / ".join(str(d) if d >= 0 else "-" for d in (base, target))


def type_lines(result: Result) -> list[str]:
    share, spent = pair_column(result, "Percent (%)"), pair_column(result, "Total (ns)")
    names = result.frame["OP Type"]
    return [f"  {short(names[i])}: {pct(share[0][i])} -> {pct(share[1][i])} of the time, "
            f"{ms(spent[0][i])} -> {ms(spent[1][i])} ({times(spent[0][i], spent[1][i])})"
            for i in range(min(len(names), TOP_ITEMS + 3))]


def change_lines(result: Result, rule: str) -> list[str]:
    """The largest growths and shrinks of total time of the rows in both reports; then the rows
    of one report only, apart: added (target only) and removed (base only), largest first."""
    base, target = pair_column(result, "Total (ns)")
    only_target, only_base = np.isnan(base) & ~np.isnan(target), np.isnan(target) & ~np.isnan(base)
    base, target = np.nan_to_num(base), np.nan_to_num(target)
    label = "operators" if rule == "ppu_operator_summary_compare" else "kernels"
    base_names, target_names = (result.frame[f"{side} OP Name" if label == "operators" else f"{side} Kernel"]
                                for side in ("Base", "Target"))
    names = [t if t is not None else b for b, t in zip(base_names, target_names)]
    if label == "operators":
        names = [f"[{kind}] {name}" for kind, name in zip(result.frame["OP Type"], names)]
    lines = [f"Total time of all {label}: {ms(base.sum())} -> {ms(target.sum())} "
             f"({times(base.sum(), target.sum())})"]
    delta = np.where(only_target | only_base, 0.0, target - base)
    for title, picks in (("Top regressions (slower in target)", np.argsort(-delta, kind="stable")),
                         ("Top improvements (faster in target)", np.argsort(delta, kind="stable"))):
        chosen = [i for i in picks[:TOP_ITEMS] if (delta[i] > 0) == title.startswith("Top regressions")
                  and delta[i] != 0]
        lines.append(f"{title}:" if chosen else f"{title}: none")
        lines += [f"  {delta[i] / 1e6:+.2f} ms  {ms(base[i])} -> {ms(target[i])} ({times(base[i], target[i])})  "
                  f"{short(names[i])}" for i in chosen]
    for title, alone, spent in ((f"Added {label} (in the target only)", only_target, target),
                                (f"Removed {label} (in the base only)", only_base, base)):
        rows = np.flatnonzero(alone)
        rows = rows[np.argsort(-spent[rows], kind="stable")]
        lines.append(f"{title}: {len(rows)}, {ms(spent[rows].sum())} in all" if len(rows) else f"{title}: none")
        lines += [f"  {ms(spent[i])}  {short(names[i])}" for i in rows[:TOP_ITEMS]]
    return lines
