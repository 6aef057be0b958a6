"""Benchmark of ``--merge-reports``: 16 rank reports on a local Dask cluster of 1 and 2 workers.

    python bench/many_reports.py [--reports 16] [--scale 8] [--repeat 2]

Generates (and caches in bench/out/) ``asys sample --scale N --seed k`` for k = 0..15, then
for each cluster size starts a fresh local cluster of process workers (one thread each),
opens the reports on it and runs a set of summary and PCCL rules over the merged set —
reading the reports cold (no columnar cache) — and prints the seconds of each phase (the
run with the best total), the rows loaded and the bytes that travelled from the workers;
without a cluster (every report read in this process) as the baseline. Writes bench/out/many_reports.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from asysstats.engine import Inputs
from asysstats.many.cluster import DaskExecutor, InlineExecutor
from asysstats.many.hosts import run_merged
from asysstats.many.merged import open_merged
from asysstats.rules import REGISTRY
from asysstats.synth.generator import write_sample

OUT = Path(__file__).resolve().parent / "out"
RULES = ("hggc_ppu_kern_sum", "hggc_api_sum", "hgtx_sum", "pccl_desync_summary", "pccl_stage_sum", "ppu_time_util")


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


def travelled(merged) -> tuple[int, int]:
    """Rows and bytes of every table the rules loaded (what came back from the workers)."""
    rows = sum(t.rows for t in merged._tables.values())
    size = sum(v.nbytes for t in merged._tables.values() for v in t.values())
    return rows, size


def one_run(paths: list[Path], workers: int) -> dict[str, float]:
    """Seconds of each phase; ``workers`` 0 = no cluster (every report read in this process)."""
    start = time.perf_counter()
    executor = DaskExecutor(workers=workers) if workers else InlineExecutor()
    started = time.perf_counter()
    merged = open_merged([str(p) for p in paths], executor, cache=False, normalize=True)
    opened = time.perf_counter()
    loading = [0.0]
    load = merged.load

    def timed_load(*args):
        begin = time.perf_counter()
        try:
            return load(*args)
        finally:
            loading[0] += time.perf_counter() - begin

    merged.load = timed_load
    for name in RULES:
        rule = next(r for r in REGISTRY if r.name == name)
        run_merged(rule, rule.parse_options({}), Inputs(merged))
    ran = time.perf_counter()
    rows, size = travelled(merged)
    merged.close()
    return {"cluster": started - start, "open": opened - started, "load": loading[0],
            "compute": ran - opened - loading[0], "total": ran - start, "rows": rows, "bytes": size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=16)
    parser.add_argument("--scale", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    paths = reports(args.reports, args.scale)
    size = sum(p.stat().st_size for p in paths)
    lines = [f"{args.reports} reports of `asys sample --scale {args.scale}` ({size / 2**20:.0f} MiB), rules: "
             f"{', '.join(RULES)}; best of {args.repeat} (seconds)", "",
             "| workers | start cluster | open reports | load columns | rules (driver) | total | rows loaded "
             "| MiB returned |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for workers in (0, 1, 2):
        best = min((one_run(paths, workers) for _ in range(args.repeat)), key=lambda r: r["total"])
        label = f"{workers} (Dask)" if workers else "none (this process)"
        lines.append(f"| {label} | {best['cluster']:.1f} | {best['open']:.1f} | {best['load']:.1f} | "
                     f"{best['compute']:.1f} | {best['total']:.1f} | {int(best['rows']):,} | "
                     f"{best['bytes'] / 2**20:.0f} |")
        print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n"
    print(text)
    (OUT / "many_reports.md").write_text(text)


if __name__ == "__main__":
    main()
