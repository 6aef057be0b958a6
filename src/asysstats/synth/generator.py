"""``asys sample``: a synthetic asysrep of LLM inference steps (a MoE decoder on 4 PPUs).

Each kind of step (start-up, prefill, decode, shutdown) is written once as a program,
simulated for all ranks and a few variants at once, then tiled over the steps with numpy
(``asysstats.synth.llm``). ``--scale N`` repeats the batch of 12 steps N times; the same
seed gives the same report. The report is written as outputs are
(:mod:`asysstats.core.files`): into a marked temporary file beside it, removed on any
failure or signal, made the report only when complete.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from asysstats.core.errors import AsysError
from asysstats.core.files import check_output, output_errors, publish, temporary_beside
from asysstats.core.integers import checked_int
from asysstats.synth import MAX_SCALE
from asysstats.synth.llm.sample import build
from asysstats.synth.writer import ReportWriter

BYTES_PER_SCALE = 900_000  # of report per batch of steps (docs/performance.md: 1.26 GB at 1,434)
MEMORY_PER_SCALE = 2_700_000  # bytes at the peak per batch of steps (measured: 0.4 GB at 100)


def write_sample(out: Path, scale: int = 1, seed: int = 7, force: bool = False) -> Path:
    """Write the sample report to ``out``; an existing file is replaced only with ``force``.
    A scale past :data:`MAX_SCALE`, or one whose report the folder has no room for or whose
    build the machine's memory cannot hold, is an error before any work."""
    out = Path(out)
    checked_int(scale, "asys sample: --scale", 1, MAX_SCALE)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if scale * MEMORY_PER_SCALE > memory:
        raise AsysError(f"asys sample: --scale {scale} needs about {scale * MEMORY_PER_SCALE / 1e9:,.1f} GB of memory; "
                        f"the machine has {memory / 1e9:,.1f} GB")
    with output_errors(out):
        check_output(out, force)
        free, needed = shutil.disk_usage(out.parent).free, scale * BYTES_PER_SCALE
        if needed > free:
            raise AsysError(f"asys sample: --scale {scale} makes a report of about {needed / 1e6:,.0f} MB; "
                            f"{out.parent} has {free / 1e6:,.0f} MB free")
        with temporary_beside(out) as temp:
            writer = ReportWriter(temp)
            writer.meta("Generator", f"asys sample --scale {scale} --seed {seed}")
            build(writer, scale, seed)
            try:
                writer.close()
            except sqlite3.OperationalError as exc:  # a full disk, a file too large
                raise AsysError(f"cannot write {out}: {exc}") from exc
            publish(temp, out, force)
    return out
