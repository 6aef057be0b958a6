"""The better of several runs of ``bench/run.py``, as one run file per report: each rule's rows as
its run printed them, from the run with the fewest warm seconds (then cold) on the run's last report;
this machine's speed drifts between runs half an hour apart, which the rounds of one run do not see.
A run's reports stay together (issue 31's growth compares rounds minutes apart).

    python bench/best.py bench/out/run1_sample_287.md,bench/out/run1_sample_1434.md \\
        bench/out/run_sample_287.md,bench/out/run_sample_1434.md      # -> bench/out/best_sample_*.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from targets import OUT, read_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="the run files of one run, comma-separated, each run the same reports")
    args = parser.parse_args()
    runs = [[Path(name) for name in run.split(",")] for run in args.runs]
    texts = [[path.read_text().splitlines() for path in run] for run in runs]
    deciding = [read_table(run[-1])[1] for run in runs]
    for at, path in enumerate(runs[-1]):
        rows = [{line.split("|")[1].strip(): line for line in text[at][4:] if line.startswith("| ")} for text in texts]
        lines = [texts[-1][at][0] + "; each rule's row from the better of: "
                 + ", ".join(run[at].name for run in runs), *texts[-1][at][1:4]]
        for rule in rows[0]:
            held = [number for number, table in enumerate(deciding) if rule in table and rule in rows[number]]
            better = min(held, key=lambda number: (deciding[number][rule]["warm (s)"], deciding[number][rule]["cold (s)"]))
            lines.append(rows[better][rule])
        target = OUT / f"best_{path.stem.split('_', 1)[1]}.md"  # run_sample_287.md -> best_sample_287.md
        target.write_text("\n".join(lines) + "\n")
        print(target)


if __name__ == "__main__":
    main()
