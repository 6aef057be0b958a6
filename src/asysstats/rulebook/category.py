"""Kernel time per user-defined category (``hggc_ppu_kern_category_sum``).

Categories come from ``--kernel-group-config name=regex`` items, in order: a kernel
belongs to the first group whose regex matches (``search``) its name, else to ``other``.
A name repeated in the configuration adds alternatives to the same category.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import regex

from asysstats.analysis.declarations import BASE, DEVICE, MANGLED, ROWS, Options, Rows, Rule, Stats, Summary, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import kernel_name_ids
from asysstats.analysis.reads import KERNEL_COLUMNS
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import share_percent
from asysstats.core.errors import quoted
from asysstats.core.regexes import compile_user_regex, search
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.strings import StringPool
from asysstats.rulebook.kernels import on_devices

RULE_NAME = "hggc_ppu_kern_category_sum"
OTHER = "other"
Group = tuple[int, regex.Pattern]  # (category index, compiled regex)


@dataclass(frozen=True)
class CategoryOptions(Options):
    rows: int | None = ROWS.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()
    device: tuple[int, ...] | None = DEVICE.field()


def compile_groups(pairs: tuple[tuple[str, str], ...]) -> tuple[list[str], list[Group]]:
    """Category labels (configuration order, ``other`` last unless configured) and the
    compiled regexes, each tagged with its category index; compiled once per run."""
    labels: list[str] = []
    groups: list[Group] = []
    for label, pattern in pairs:
        if label not in labels:
            labels.append(label)
        where = f"rule '{RULE_NAME}': option '--kernel-group-config' (group {quoted(label)})"
        groups.append((labels.index(label), compile_user_regex(pattern, where)))
    if OTHER not in labels:
        labels.append(OTHER)
    return labels, groups


def categorize(strings: StringPool, names: np.ndarray, labels: list[str], groups: list[Group]) -> np.ndarray:
    """Category index per row: each DISTINCT name is matched once, first group wins."""
    uniq, inverse = distinct(names)
    other = labels.index(OTHER)
    where = f"rule '{RULE_NAME}': option '--kernel-group-config'"

    def first_match(text: str | None) -> int:
        if text is None:
            return other
        return next((index for index, pattern in groups if search(pattern, text, where)), other)

    return np.array([first_match(text) for text in strings.lookup(uniq)], dtype=np.int64)[inverse]


COLUMNS = (
    Column("Category", TEXT, "Category name from --kernel-group-config, or 'other'"),
    Column("Total Time (ns)", INT, "Total execution time of the category's kernels"),
    Column("Time (%)", PERCENT, "Percentage of the total time of all kernels"),
    Column("Launches", INT, "Number of kernel executions in the category"),
    Column("Avg (ns)", INT, "Average execution time of the category's kernels"),
)


def category_rows(inputs: Inputs, options: CategoryOptions) -> Rows:
    """Per kernel: its category's label (string id) and its duration."""
    labels, groups = compile_groups(inputs.settings.kernel_groups)
    kernels = on_devices(inputs.table("kernels", KERNEL_COLUMNS), options.device)
    names = kernel_name_ids(inputs.strings, kernels, name_mode(options))
    category = categorize(inputs.strings, names, labels, groups) if kernels.rows else np.empty(0, np.int64)
    return Rows((inputs.strings.intern(labels)[category],), kernels["end"] - kernels["start"])


def category_frame(inputs: Inputs, options: CategoryOptions, keys: tuple[np.ndarray, ...], stats: Stats) -> Frame:
    """Every category (0 launches when no kernel matched it), by total descending, then label."""
    if len(keys[0]) == 0:  # docs/decisions.md D7: no kernel at all is an empty result, header only
        return {c.name: np.empty(0, dtype=object if c.kind == TEXT else np.int64) for c in COLUMNS}
    labels, _ = compile_groups(inputs.settings.kernel_groups)
    position = {int(key): i for i, key in enumerate(inputs.strings.intern(labels))}
    slot = np.array([position[key] for key in keys[0].tolist()], np.int64)
    total = np.zeros(len(labels), dtype=np.int64)
    launches = np.zeros(len(labels), dtype=np.int64)
    total[slot], launches[slot] = stats["sum"], stats["count"]
    average = np.divide(total, launches, out=np.full(len(labels), np.nan), where=launches > 0)
    name_rank = np.array([sorted(labels).index(label) for label in labels], dtype=np.int64)
    order = np.lexsort((name_rank, -total))
    return {
        "Category": np.array(labels, dtype=object)[order],
        "Total Time (ns)": total[order],
        "Time (%)": share_percent(total, float(total.sum()))[order],
        "Launches": launches[order],
        "Avg (ns)": average[order],
    }


SUMMARY = Summary(category_rows, category_frame)


CATEGORY_SUM = Rule(
    name=RULE_NAME,
    title="HGGC PPU Kernel Category Summary",
    help="Kernel execution time per category, in descending order of total time (ties by name). "
         "Categories are the '--kernel-group-config name=regex' items (repeatable, or @file with one "
         "name=regex per line), in order: a kernel belongs to the first category whose regex matches "
         "its name (in the chosen name mode), else to 'other'. When there are kernels, every configured "
         "category and 'other' is listed, with 0 launches and '-' average when no kernel matched. 'Time (%)' is the share of the "
         "total time of all kernels in the table.",
    columns=COLUMNS,
    compute=SUMMARY.compute,
    reads={"kernels": KERNEL_COLUMNS},
    options=CategoryOptions,
    share="Time (%)",
)

RULES = [CATEGORY_SUM]
