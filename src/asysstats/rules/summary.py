"""The shape shared by the summary rules: duration (or size) statistics per group, sorted
by total descending, ties by name ascending then the other keys (conventions 11)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from asysstats.compute.grouped import Groups, grouped_stats, share_percent
from asysstats.io.strings import StringPool
from asysstats.registry import INT, PERCENT, Column


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
              name_key: int) -> tuple[Groups, dict[str, np.ndarray], np.ndarray]:
    """Group ``values`` by ``keys``; return groups, statistics and the output order
    (total descending, then the name key by text, then the other keys ascending)."""
    groups, stats = grouped_stats(keys, values)
    tie_keys = [k for i, k in enumerate(groups.keys) if i != name_key]
    name_rank = strings.sort_rank(groups.keys[name_key]) if groups.count else np.empty(0, np.int64)
    order = np.lexsort(tuple(reversed(tie_keys)) + (name_rank, -stats["sum"]))
    return groups, stats, order


def stat_cells(columns: tuple[Column, ...], stats: dict[str, np.ndarray], order: np.ndarray) -> dict[str, np.ndarray]:
    """Frame entries for the columns made by :func:`stat_columns`."""
    total = stats["sum"][order]
    values = [stats[k][order] for k in ("count", "mean", "median", "min", "max", "std")]
    if columns[0].kind == PERCENT:
        grand = float(stats["sum"].sum())
        return dict(zip((c.name for c in columns), [share_percent(total, grand), total] + values))
    return dict(zip((c.name for c in columns), [total] + values))
