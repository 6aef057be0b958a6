"""Property tests: operator times and active times against a brute-force reference.

Random reports: PyTorch ranges one after another on one thread, each launching 1-3 kernels
(random intervals, overlaps and empty kernels allowed, on two devices), plus kernels
outside any range, some named like GEMMs. The reference computes every instance's span,
each group's statistics and its per-device union of busy time with plain Python.
"""

from __future__ import annotations

import csv as csv_module
import statistics
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from test_operators_build import Build

from asysstats.synth.writer import ReportWriter

from conftest import run_cli

kernel = st.tuples(st.integers(0, 1000), st.integers(0, 60), st.integers(0, 1))  # start, length, device
operator = st.tuples(st.sampled_from(["aten::a", "aten::b", "aten::c"]), st.lists(kernel, min_size=1, max_size=3))
loose = st.tuples(st.sampled_from(["gemm_x", "gemm_y", "plain"]), kernel)


def union_length(intervals: list[tuple[int, int]]) -> int:
    covered, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            covered += end - start
            reach = end
        elif end > reach:
            covered += end - reach
            reach = end
    return covered


def reference(ops, loose_kernels) -> dict[str, tuple]:
    """OP Name -> (total, instances, avg, med, min, max, active, stddev), truncated like the writer."""
    groups: dict[str, list] = {}
    for name, kernels in ops:
        groups.setdefault(name, []).append([(s, s + n, d) for s, n, d in kernels])
    for name, (s, n, d) in loose_kernels:
        if name != "plain":
            groups.setdefault(name, []).append([(s, s + n, d)])
    out = {}
    for name, instances in groups.items():
        spans = [max(e for _, e, _ in k) - min(s for s, _, _ in k) for k in instances]
        every = [k for kernels in instances for k in kernels]
        active = sum(union_length([(s, e) for s, e, d in every if d == dev]) for dev in (0, 1))
        out[name] = (sum(spans), len(spans), int(statistics.fmean(spans)), int(statistics.median(spans)), min(spans),
                     max(spans), active, int(statistics.pstdev(spans)))
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(operator, max_size=5), st.lists(loose, max_size=3))
def test_op_sum_matches_brute_force(ops, loose_kernels):
    with tempfile.TemporaryDirectory() as folder:
        b = Build(ReportWriter(Path(folder) / "r.asysrep"))
        for i, (name, kernels) in enumerate(ops):
            b.range(f"{name}, seq = {i}", 100 * i, 100 * i + 50)
            for j, (start, length, device) in enumerate(kernels):
                b.kernel("k", start, start + length, launch=100 * i + 1 + j, device=device)
        for j, (name, (start, length, device)) in enumerate(loose_kernels):
            b.kernel(name, start, start + length, launch=10_000 + j, device=device)
        run = run_cli("stats", "-r", "ppu_op_sum", "--format", "csv", b.close())
        assert run.code == 0, run.err
        rows = [r[:-1] for r in csv_module.reader(run.out.splitlines()[1:])]
        got = {r[15].split(",")[0]: tuple(int(r[i]) for i in (2, 4, 5, 6, 7, 8, 9, 11)) for r in rows}
        assert got == reference(ops, loose_kernels)
        totals = [int(r[2]) for r in rows]
        assert totals == sorted(totals, reverse=True)
