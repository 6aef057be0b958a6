"""The shape shared by the summary rules: duration (or size) statistics per group, sorted
by total descending, ties by name ascending then the other keys (docs/decisions.md D8).

A summary rule is declared as a :class:`Summary`: ``rows`` (group keys and one value per
row, computed on one report) and ``frame`` (per-group statistics to output columns). Its
compute over one report is ``frame(statistics of rows)``; over merged reports the
statistics are reduced where each report lives (:mod:`asysstats.api.merging.reduce`) and the same
``frame`` makes the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from asysstats.analysis.inputs import Inputs
from asysstats.compute.grouped import Groups, Key, grouped_stats, share_percent
from asysstats.core.columns import INT, PERCENT, Column, Frame
from asysstats.core.strings import StringPool

Stats = dict[str, np.ndarray]
FrameOf = Callable[[Inputs, Mapping[str, Any], tuple[np.ndarray, ...], Stats], Frame]


@dataclass(frozen=True)
class Rows:
    """A summary's rows on one report: group keys (integer columns, per row or coded; the
    ones listed in ``text`` are string ids) and the value of each row."""

    keys: tuple[Key, ...]
    values: np.ndarray
    text: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class Summary:
    """A summary rule split in two: ``rows(inputs, options)`` and ``frame(inputs, options,
    group keys, statistics)`` (statistics as :func:`~asysstats.compute.grouped.grouped_stats`)."""

    rows: Callable[[Inputs, Mapping[str, Any]], Rows]
    frame: FrameOf

    def compute(self, inputs: Inputs, options: Mapping[str, Any]) -> Frame:
        """The rule over one report: ``frame`` of the statistics of ``rows``."""
        rows = self.rows(inputs, options)
        groups, stats = grouped_stats(rows.keys, rows.values)
        return self.frame(inputs, options, groups.keys, stats)


def stat_columns(thing: str, count: str = "Instances", unit: str = "ns", percent: bool = True,
                 stddev: str = "StdDev") -> tuple[Column, ...]:
    """``Time (%)``, ``Total Time (ns)``, count, Avg/Med/Min/Max/StdDev columns."""
    total = "Total Time" if unit == "ns" else "Total"
    head = (Column("Time (%)", PERCENT, f"Percentage of '{total}'"),) if percent else ()
    return head + (
        Column(f"{total} ({unit})", INT, f"Total of all {thing}"),
        Column(count, INT, f"Number of {thing}"),
        Column(f"Avg ({unit})", INT, f"Average of {thing}"),
        Column(f"Med ({unit})", INT, f"Median of {thing}"),
        Column(f"Min ({unit})", INT, f"Minimum of {thing}"),
        Column(f"Max ({unit})", INT, f"Maximum of {thing}"),
        Column(f"{stddev} ({unit})", INT, f"Population standard deviation of {thing}"),
    )


def summarize(strings: StringPool, keys: Sequence[np.ndarray], values: np.ndarray,
              name_key: int) -> tuple[Groups, Stats, np.ndarray]:
    """Group ``values`` by ``keys``; return groups, statistics and the output order."""
    groups, stats = grouped_stats(keys, values)
    return groups, stats, output_order(strings, groups.keys, stats, name_key)


def output_order(strings: StringPool, keys: Sequence[np.ndarray], stats: Stats, name_key: int) -> np.ndarray:
    """Groups by total descending, then the name key by text, then the other keys ascending."""
    tie_keys = [k for i, k in enumerate(keys) if i != name_key]
    name_rank = strings.sort_rank(keys[name_key])
    return np.lexsort(tuple(reversed(tie_keys)) + (name_rank, -stats["sum"]))


def stat_cells(columns: tuple[Column, ...], stats: Stats, order: np.ndarray) -> dict[str, np.ndarray]:
    """Frame entries for the columns made by :func:`stat_columns`."""
    total = stats["sum"][order]
    values = [stats[k][order] for k in ("count", "mean", "median", "min", "max", "std")]
    if columns[0].kind == PERCENT:
        grand = float(stats["sum"].sum())
        return dict(zip((c.name for c in columns), [share_percent(total, grand), total] + values))
    return dict(zip((c.name for c in columns), [total] + values))


def keyed_frame(columns: tuple[Column, ...], *key_columns: str) -> FrameOf:
    """The ``frame`` of a summary whose columns are :func:`stat_columns` followed by one
    column per key: key ``i`` is printed in ``key_columns[i]`` (key 0 is the name)."""
    def frame(inputs: Inputs, options: Mapping[str, Any], keys: tuple[np.ndarray, ...], stats: Stats) -> Frame:
        order = output_order(inputs.strings, keys, stats, 0)
        cells = stat_cells(columns[:-len(key_columns)], stats, order)
        cells.update((name, key[order]) for name, key in zip(key_columns, keys))
        return cells

    return frame
