"""Benchmark of ``--merge-reports``: 16 rank reports in this process and on a local Dask
cluster of 1 and 2 workers, summary rules on the reduced path and on the gather path.

    python bench/many_reports.py [--reports 16] [--scale 8] [--repeat 2]

Generates (and caches in bench/out/) ``asys sample --scale N --seed k`` for k = 0..15, then
for each configuration and path starts a fresh local cluster of process workers (one thread
each), opens the reports on it (``--ts-normalize``, cold: no columnar cache) and runs the
summary rules — reduced on the workers (``--merge-reports``), or gathered: their projected
columns brought to this process and computed here (the path before the reduction) — then
the PCCL and gap rules (always gathered). Prints the seconds of each phase (the run with the
best total) and the MiB that came back to this process; writes bench/out/many_reports.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from asysstats.analysis.inputs import Inputs
from asysstats.api.merging.hosts import run_merged
from asysstats.api.running import run_rule
from asysstats.reading.merged.cluster import DaskExecutor, InlineExecutor
from asysstats.reading.merged.report import MergedReport, open_merged
from asysstats.rulebook import REGISTRY
from asysstats.synth.generator import write_sample

OUT = Path(__file__).resolve().parent / "out"
SUMMARIES = ("hggc_ppu_kern_sum", "hggc_ppu_kern_gb_sum", "hggc_api_sum", "hgtx_sum", "osrt_sum",
             "hggc_ppu_mem_time_sum")
GATHERED = ("pccl_desync_summary", "pccl_stage_sum", "ppu_time_util")
MIB = 2 ** 20


def reports(count: int, scale: int) -> list[Path]:
    folder = OUT / f"ranks_{scale}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        path = folder / f"job_node_n{k:02d}.asysrep"
        if not path.exists():
            write_sample(path, scale=scale, seed=k)
        paths.append(path)
    return paths


def received(merged: MergedReport) -> int:
    """Bytes that came back to this process: gathered columns and reduced statistics."""
    return sum(v.nbytes for t in merged._tables.values() for v in t.values()) + merged.returned


def rules_time(merged: MergedReport, names: tuple[str, ...], reduced: bool) -> float:
    start = time.perf_counter()
    for name in names:
        rule = next(r for r in REGISTRY if r.name == name)  # stats and analyze rules
        run = run_merged if reduced else run_rule
        run(rule, rule.parse_options({}), Inputs(merged))
    return time.perf_counter() - start


def one_run(paths: list[Path], workers: int, reduced: bool) -> dict[str, float]:
    """Seconds of each phase, bytes returned; ``workers`` 0 = every report read in this process."""
    start = time.perf_counter()
    executor = DaskExecutor(workers=workers) if workers else InlineExecutor()
    started = time.perf_counter()
    merged = open_merged([str(p) for p in paths], executor, cache=False, normalize=True)
    opened = time.perf_counter()
    summaries = rules_time(merged, SUMMARIES, reduced)
    summary_bytes = received(merged)
    others = rules_time(merged, GATHERED, True)
    out = {"cluster": started - start, "open": opened - started, "summaries": summaries, "others": others,
           "total": time.perf_counter() - start, "summary_bytes": summary_bytes,
           "other_bytes": received(merged) - summary_bytes}
    merged.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=16)
    parser.add_argument("--scale", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    paths = reports(args.reports, args.scale)
    size = sum(p.stat().st_size for p in paths)
    lines = [f"{args.reports} reports of `asys sample --scale {args.scale}` ({size / MIB:.0f} MiB); summary rules: "
             f"{', '.join(SUMMARIES)}; PCCL and gap rules: {', '.join(GATHERED)}; best of {args.repeat} (seconds)",
             "", "| workers | summaries | start cluster | open reports | summary rules | MiB returned | PCCL and gap "
             "rules | MiB returned | total |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for workers in (0, 1, 2):
        for reduced in (True, False):
            best = min((one_run(paths, workers, reduced) for _ in range(args.repeat)), key=lambda r: r["total"])
            label = f"{workers} (Dask)" if workers else "none (this process)"
            lines.append(f"| {label} | {'reduced' if reduced else 'gathered'} | {best['cluster']:.1f} | "
                         f"{best['open']:.1f} | {best['summaries']:.1f} | {best['summary_bytes'] / MIB:.2f} | "
                         f"{best['others']:.1f} | {best['other_bytes'] / MIB:.0f} | {best['total']:.1f} |")
            print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n"
    print(text)
    (OUT / "many_reports.md").write_text(text)


if __name__ == "__main__":
    main()
