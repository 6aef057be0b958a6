"""``asys sample``: a synthetic asysrep of LLM inference steps (a MoE decoder on 4 PPUs).

Each kind of step (start-up, prefill, decode, shutdown) is written once as a program,
simulated for all ranks and a few variants at once, then tiled over the steps with numpy
(``asysstats.synth.llm``). ``--scale N`` repeats the batch of 12 steps N times; the same
seed gives the same report.
"""

from __future__ import annotations

import os
from pathlib import Path

from asysstats.core.errors import AsysError
from asysstats.synth.llm.sample import build
from asysstats.synth.writer import ReportWriter


def write_sample(out: Path, scale: int = 1, seed: int = 7, force: bool = False) -> Path:
    """Write the sample report to ``out``; an existing file is replaced only with ``force``."""
    out = Path(out)
    if out.is_dir():
        raise AsysError(f"asys sample: {out} is a directory")
    if out.exists() and not force:
        raise AsysError(f"asys sample: {out} exists (overwrite it with -f true)")
    if scale < 1:
        raise AsysError(f"asys sample: --scale must be >= 1, got {scale}")
    partial = out.with_name(out.name + ".part")
    writer = ReportWriter(partial)
    writer.meta("Generator", f"asys sample --scale {scale} --seed {seed}")
    build(writer, scale, seed)
    writer.close()
    os.replace(partial, out)
    return out
