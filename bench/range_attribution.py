"""What the all-enclosing-ranges semantics costs over the innermost range, in one process, warm.

    python bench/range_attribution.py --scale 1434 --repeat 3

Both answers come from one sweep, ``intervals.enclosing_pairs``: every (range, launch call) pair
with the range holding the call's start on its thread. The innermost-range breakdown
(``hggc_ppu_kern_sum`` with ``hgtx-name``; nsys-ai's breakdown) keeps one range per kernel
(``launches.innermost_range_names``); ``hgtx_kern_sum`` (nsys ``nvtx_kern_sum``) keeps every pair
and groups them (``hgtx_kernels.kernel_groups``). Prints the best seconds of each over
``--repeat`` rounds, after one round that fills the column cache and maps the columns.
"""

from __future__ import annotations

import argparse

import numpy as np
from common import best_of
from run import sample

import asysstats
from asysstats.analysis.correlate import activity_table
from asysstats.analysis.hgtx import all_ranges
from asysstats.analysis.launches import innermost_range_names, launch_rows, runtime_calls
from asysstats.compute.intervals import enclosing_pairs
from asysstats.rulebook.hgtx_kernels import SUM_KERNEL_COLUMNS, SumOptions, kernel_groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1434)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = asysstats.open(sample(args.scale))
    inputs = report.inputs()
    kernels = activity_table(inputs, "kernels", SUM_KERNEL_COLUMNS)
    ranges = all_ranges(inputs)
    calls = runtime_calls(inputs)
    launch = launch_rows(calls, kernels)
    have = launch[launch >= 0]

    def sweep() -> tuple[np.ndarray, np.ndarray]:
        return enclosing_pairs(ranges["globalTid"], ranges["start"], ranges["end"],
                               calls["globalTid"][have], calls["start"][have])

    def innermost() -> np.ndarray:
        return innermost_range_names(report.inputs(), kernels)

    def every_range() -> object:
        return kernel_groups(report.inputs(), SumOptions())

    pairs = len(sweep()[0])
    innermost(), every_range()  # the cache filled, the columns mapped
    seconds = {name: best_of(args.repeat, work)[0]
               for name, work in (("sweep", sweep), ("innermost", innermost), ("all ranges", every_range))}
    print(f"{kernels.rows:,} kernels, {ranges.rows:,} ranges, {pairs:,} (range, launch) pairs; best of {args.repeat}:")
    print("| answer | seconds |\n|---|---|")
    print(f"| the sweep alone (`enclosing_pairs`) | {seconds['sweep']:.2f} |")
    print(f"| innermost range per kernel (`innermost_range_names`: sweep + one range a kernel) | "
          f"{seconds['innermost']:.2f} |")
    print(f"| every enclosing range (`kernel_groups`: sweep + graph nodes + grouping every pair) | "
          f"{seconds['all ranges']:.2f} |")


if __name__ == "__main__":
    main()
