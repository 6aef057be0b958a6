"""The shape shared by the summary rules: duration (or size) statistics per group, sorted
by total descending, ties by name ascending then the other keys (docs/decisions.md D8).

A summary rule is declared as a :class:`~asysstats.analysis.declarations.Summary`: ``rows`` (group keys and one value per
row, computed on one report) and ``frame`` (per-group statistics to output columns). Its
compute over one report is ``frame(statistics of rows)``; over merged reports the
statistics are reduced where each report lives (:mod:`asysstats.api.merging.reduce`) and the same
``frame`` makes the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from asysstats.analysis.declarations import FrameOf, Options, Stats
from asysstats.analysis.inputs import Inputs
from asysstats.compute.grouped import Groups, Key, grouped_stats, sample_deviation, share_percent
from asysstats.core.result import DECIMAL, FIGURE, INT, PERCENT, Column, Frame
from asysstats.core.strings import StringPool

STATISTICS = ("share", "sum", "count", "mean", "median", "min", "max", "std", "sample_std")  # their columns' order
UNSCALED = ("share", "count")  # the statistics a unit's ``divisor`` leaves as they are


@dataclass(frozen=True)
class StatColumns:
    """The statistics columns of a summary: ``Time (%)``, ``Total Time (ns)``, the count and
    Avg/Med/Min/Max/StdDev, each declared with the statistic it prints."""

    by_statistic: dict[str, Column]  # a statistic of grouped_stats (or "share", "sample_std") -> its column
    divisor: int = 1  # the values per unit printed (10**6: bytes printed in MB)

    @classmethod
    def of(cls, thing: str, count: str = "Instances", unit: str = "ns", percent: bool = True,
           stddev: str = "StdDev") -> "StatColumns":
        total = "Total Time" if unit == "ns" else "Total"
        columns = {
            "share": Column("Time (%)", PERCENT, f"Percentage of '{total}'"),
            "sum": Column(f"{total} ({unit})", INT, f"Total of all {thing}"),
            "count": Column(count, INT, f"Number of {thing}"),
            "mean": Column(f"Avg ({unit})", INT, f"Average of {thing}"),
            "median": Column(f"Med ({unit})", INT, f"Median of {thing}"),
            "min": Column(f"Min ({unit})", INT, f"Minimum of {thing}"),
            "max": Column(f"Max ({unit})", INT, f"Maximum of {thing}"),
            "std": Column(f"{stddev} ({unit})", INT, f"Population standard deviation of {thing}"),
        }
        if not percent:
            del columns["share"]
        return cls(columns)

    @classmethod
    def nvidia(cls, thing: str, count: str = "Instances", unit: str = "ns") -> "StatColumns":
        """The columns of an ``nsys stats`` summary (docs/decisions.md D31): averages, medians
        and the sample standard deviation as decimals; ``MB`` (10^6 bytes, three decimals)
        prints sizes and no ``Time (%)``."""
        size = unit == "MB"
        total, number = ("Total", FIGURE) if size else ("Total Time", INT)
        decimal = FIGURE if size else DECIMAL
        columns = {
            "share": Column("Time (%)", PERCENT, f"Percentage of '{total}'"),
            "sum": Column(f"{total} ({unit})", number, f"Total of all {thing}"),
            "count": Column(count, INT, f"Number of {thing}"),
            "mean": Column(f"Avg ({unit})", decimal, f"Average of {thing}"),
            "median": Column(f"Med ({unit})", decimal, f"Median of {thing}"),
            "min": Column(f"Min ({unit})", number, f"Minimum of {thing}"),
            "max": Column(f"Max ({unit})", number, f"Maximum of {thing}"),
            "sample_std": Column(f"StdDev ({unit})", decimal, f"Sample standard deviation of {thing}"),
        }
        if size:
            del columns["share"]
        return cls(columns, 10 ** 6 if size else 1)

    @property
    def columns(self) -> tuple[Column, ...]:
        return tuple(self.by_statistic[s] for s in STATISTICS if s in self.by_statistic)

    def cells(self, stats: Stats, order: np.ndarray) -> dict[str, np.ndarray]:
        """The frame's statistics columns, groups in ``order``; the share of each group's total
        in the total of all groups."""
        def values(statistic: str) -> np.ndarray:
            if statistic == "share":
                return share_percent(stats["sum"][order], float(stats["sum"].sum()))
            value = sample_deviation(stats)[order] if statistic == "sample_std" else stats[statistic][order]
            return value if self.divisor == 1 or statistic in UNSCALED else value / self.divisor

        return {column.name: values(statistic) for statistic, column in self.by_statistic.items()}


def summarize(strings: StringPool, keys: Sequence[Key], values: np.ndarray,
              name_key: int) -> tuple[Groups, Stats, np.ndarray]:
    """Group ``values`` by ``keys``; return groups, statistics and the output order."""
    groups, stats = grouped_stats(keys, values)
    return groups, stats, output_order(strings, groups.keys, stats, name_key)


def output_order(strings: StringPool, keys: Sequence[np.ndarray], stats: Stats, name_key: int) -> np.ndarray:
    """Groups by total descending, then the name key by text, then the other keys ascending."""
    tie_keys = [k for i, k in enumerate(keys) if i != name_key]
    name_rank = strings.sort_rank(keys[name_key])
    return np.lexsort(tuple(reversed(tie_keys)) + (name_rank, -stats["sum"]))


def keyed_frame(statistics: StatColumns, *key_columns: str) -> FrameOf[Any]:
    """The ``frame`` of a summary whose columns are ``statistics`` and one column per key:
    key ``i`` is printed in the column named ``key_columns[i]`` (key 0 is the name)."""
    def frame(inputs: Inputs, options: Options, keys: tuple[np.ndarray, ...], stats: Stats) -> Frame:
        order = output_order(inputs.strings, keys, stats, 0)
        cells = statistics.cells(stats, order)
        cells.update((name, key[order]) for name, key in zip(key_columns, keys, strict=True))
        return cells

    return frame
