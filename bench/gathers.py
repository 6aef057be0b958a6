"""What a gather by row number costs per value, by column length: issue 31's target 2.

    python bench/gathers.py [--rows 1000000,5000000,20000000,50000000] [--repeat 5]

For each length, an int64 column of random values and a random permutation of its rows; prints the
best of ``--repeat`` in nanoseconds a value of: taking the column in the permutation's order
(``np.take``, the gather the range and operator rules make), in the rows' own order, writing it in
the permutation's order (a scatter), and the way round the random gather: sort the row numbers
(int32), take in that order, scatter back to the permutation's order. A column past the processor's
last-level cache pays a memory access a value in a random gather, one in its cache does not: the
step in cost from one length to the next is where the columns stop fitting.
"""

from __future__ import annotations

import argparse
from typing import Callable

import numpy as np
from common import best_of


def costs(rows: int, repeat: int) -> dict[str, float]:
    """Nanoseconds a value of each way of moving a column of ``rows`` values."""
    rng = np.random.default_rng(1)
    column = rng.integers(0, 1 << 40, rows)
    order = rng.permutation(rows)
    in_order = np.arange(rows)
    out = np.empty(rows, np.int64)

    def sorted_and_back() -> None:
        by_row = np.argsort(order.astype(np.int32), kind="stable")
        out[by_row] = np.take(column, order[by_row])

    ways: dict[str, Callable[[], object]] = {
        "random gather": lambda: np.take(column, order, out=out),
        "gather in row order": lambda: np.take(column, in_order, out=out),
        "random scatter": lambda: out.__setitem__(order, column),
        "sort, gather, scatter back": sorted_and_back,
    }
    return {name: best_of(repeat, work)[0] / rows * 1e9 for name, work in ways.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,5000000,20000000,50000000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    lengths = [int(rows) for rows in args.rows.split(",")]
    table = {rows: costs(rows, args.repeat) for rows in lengths}
    ways = list(next(iter(table.values())))
    print("| rows | " + " | ".join(f"{way} (ns a value)" for way in ways) + " |")
    print("|---" * (len(ways) + 1) + "|")
    for rows, cost in table.items():
        print(f"| {rows:,} | " + " | ".join(f"{cost[way]:.1f}" for way in ways) + " |")


if __name__ == "__main__":
    main()
