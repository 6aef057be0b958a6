"""Issue 31's targets 1-3 per rule, from two tables of ``bench/run.py`` (a smaller and a larger report).

    python bench/targets.py bench/out/run_sample_287.md bench/out/run_sample_1434.md

For every rule of the larger table, against the scan of the columns it read: (cold - a plain
write of its output) and (warm - that write) over the scan (target 1: at most 3 and 1; the write
is about nothing for a summary, the whole cost of writing bytes for a trace); for rules in both
tables, cold and warm seconds and peak RSS less what a process that only starts up takes (the
header of each table gives it: a constant, not a cost per kernel) per million kernels, the larger
report's over the smaller one's (target 2: each within 20 %; not told where the smaller report's
cost over start-up is within the noise, ``NOISE``); and peak RSS less start-up over the
columns of the tables read (target 3: at most 2.5). Prints a Markdown table and the rules that
miss each target; of those that miss target 1, the ones that would meet it without the start-up
of their process (the header's seconds, which the scan has no counterpart of).
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from asysstats.reading.sqlite import SqliteReport

OUT = Path(__file__).resolve().parent / "out"  # where bench/run.py keeps its reports
COLD, WARM, LINEAR, MEMORY = 3.0, 1.0, 0.2, 2.5
NOISE = (0.3, 0.3, 30.0)  # cold s, warm s, MB over start-up in the smaller report below which growth is not told
HEADER = re.compile(r"report: (?P<report>\S+) .*start-up (?P<seconds>[\d.]+) s and (?P<rss>\d+) MB RSS "
                    r"\((?P<cold_rss>\d+) MB with")


def read_table(path: Path) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The header's start-up figures and kernel count, and each rule's row by column name."""
    lines = path.read_text().splitlines()
    found = HEADER.search(lines[0])
    if found is None:
        raise SystemExit(f"{path}: not a table of bench/run.py (no start-up in its first line)")
    head = {"seconds": float(found["seconds"]), "cold_rss": float(found["cold_rss"]),
            "kernels": kernel_count(OUT / found["report"])}
    names = [cell.strip() for cell in lines[2].strip("|").split("|")]
    rows = {}
    for line in lines[4:]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows[cells[0]] = {name: float(cell) for name, cell in zip(names[1:], cells[1:])}
    return head, rows


def kernel_count(report: Path) -> float:
    """Millions of kernels in the report."""
    opened = SqliteReport(report, cache=False)
    return sum(int(opened.scalar(t, f'SELECT count(*) FROM "{t}"') or 0)
               for t in opened.physical_tables("kernels")) / 1e6


def per_kernel(head: dict[str, float], row: dict[str, float]) -> tuple[float, float, float]:
    """Cold and warm seconds and peak MB, less start-up, per million kernels."""
    return ((row["cold (s)"] - head["seconds"]) / head["kernels"], (row["warm (s)"] - head["seconds"]) / head["kernels"],
            (row["peak RSS (MB)"] - head["cold_rss"]) / head["kernels"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("small", type=Path)
    parser.add_argument("large", type=Path)
    args = parser.parse_args()
    (small_head, small), (large_head, large) = read_table(args.small), read_table(args.large)
    missed: dict[str, list[str]] = {"1 (cold)": [], "1 (warm)": [], "2": [], "3": []}
    start_up_bound: dict[str, list[str]] = {"1 (cold)": [], "1 (warm)": []}
    print(f"| rule | (cold − write) / scan | (warm − write) / scan | the two less start-up | cold, warm s and "
          f"peak MB / M kernels over start-up ({small_head['kernels']:.1f} M → {large_head['kernels']:.1f} M) "
          "| larger / smaller | (RSS − start-up) / columns |")
    print("|---|---|---|---|---|---|---|")
    for rule, row in large.items():
        cold, warm = row["(cold − write) / that scan"], row["(warm − write) / that scan"]
        start_up = large_head["seconds"] * row["warm / that scan"] / row["warm (s)"]  # over a scan the table rounds
        memory = row["(RSS − start-up) / columns"]
        growth, ratios = "–", "–"
        if rule in small:
            before, after = per_kernel(small_head, small[rule]), per_kernel(large_head, large[rule])
            told = [a * small_head["kernels"] >= noise for a, noise in zip(before, NOISE)]
            change = [b / a if known else math.nan for a, b, known in zip(before, after, told)]
            growth = "; ".join(f"{a:.2f} → {b:.2f}" for a, b in zip(before, after))
            ratios = "; ".join(f"{r:.2f}" if known else "–" for r, known in zip(change, told))
            if not all(abs(r - 1) <= LINEAR for r, known in zip(change, told) if known):
                missed["2"].append(rule)
        for target, value, bound in (("1 (cold)", cold, COLD), ("1 (warm)", warm, WARM), ("3", memory, MEMORY)):
            if value > bound:
                missed[target].append(rule)
                if target in start_up_bound and value - start_up <= bound:
                    start_up_bound[target].append(rule)
        print(f"| {rule} | {cold:.2f} | {warm:.2f} | {cold - start_up:.2f}; {warm - start_up:.2f} | {growth} "
              f"| {ratios} | {memory:.2f} |")
    print()
    for target, rules in missed.items():
        print(f"- target {target} missed by {len(rules)} of {len(large)}: {', '.join(rules) or 'none'}")
        if target in start_up_bound:
            bound = start_up_bound[target]
            print(f"  - of them met less start-up by {len(bound)}: {', '.join(bound) or 'none'}")


if __name__ == "__main__":
    main()
