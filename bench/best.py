"""The better of several runs of ``bench/run.py`` on one report, as one run file: each rule's row as
its run printed it, from the run with the fewest warm seconds (then cold); this machine's speed drifts
between runs minutes apart, which the rounds of one run do not see.

    python bench/best.py bench/out/run1_sample_1434.md bench/out/run_sample_1434.md > best_sample_1434.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from targets import read_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run files of one report (bench/out/run_*.md)")
    args = parser.parse_args()
    texts = [path.read_text().splitlines() for path in args.runs]
    tables = [read_table(path)[1] for path in args.runs]
    lines = [{line.split("|")[1].strip(): line for line in text[4:] if line.startswith("| ")} for text in texts]
    print(texts[-1][0] + f"; each rule's row from the better of: {', '.join(path.name for path in args.runs)}")
    print("\n".join(texts[-1][1:4]))
    for rule in tables[0]:
        held = [at for at, table in enumerate(tables) if rule in table]
        better = min(held, key=lambda at: (tables[at][rule]["warm (s)"], tables[at][rule]["cold (s)"]))
        print(lines[better][rule])


if __name__ == "__main__":
    main()
