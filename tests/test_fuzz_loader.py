"""Fuzzing the loader with mutated small reports: any damage gives a result or a one-line
error, never a traceback or a hang, and the mutated file is never modified (checked by run_cli).

A longer run: ASYS_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz_loader.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asysstats.synth.writer import ReportWriter

from conftest import run_cli

EXAMPLES = int(os.environ.get("ASYS_FUZZ_EXAMPLES", "30"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> bytes:
    writer = ReportWriter(tmp_path_factory.mktemp("fuzz") / "seed.asysrep")
    names = writer.strings(["void k<int>(int)", "k2", "hggcLaunchKernel"])
    writer.add("kernels", start=list(range(0, 400, 10)), end=list(range(5, 405, 10)), deviceId=[i % 2 for i in range(40)],
               demangledName=[names[i % 2] for i in range(40)], correlationId=list(range(1, 41)))
    writer.add("runtime", start=list(range(0, 400, 10)), end=list(range(2, 402, 10)), globalTid=1 << 24 | 1,
               nameId=names[2], correlationId=list(range(1, 41)))
    writer.add("hgtx", start=[0], end=[300], eventType=[59], globalTid=[1 << 24 | 1], text=["step"])
    writer.close()
    return writer.path.read_bytes()


mutations = st.lists(st.tuples(st.integers(0, 1 << 20), st.binary(min_size=1, max_size=16)), min_size=1, max_size=6)


@FUZZ
@given(mutations=mutations, cut=st.one_of(st.none(), st.integers(0, 1 << 20)),
       rule=st.sampled_from(["hggc_ppu_kern_sum", "hggc_api_sum", "hgtx_sum", "hgtx_kern_sum", "hggc_ppu_trace"]))
def test_mutated_reports(pristine, tmp_path_factory, mutations, cut, rule):
    data = bytearray(pristine)
    for offset, chunk in mutations:
        at = offset % len(data)
        data[at:at + len(chunk)] = chunk
    if cut is not None:
        data = data[: max(1, cut % len(data))]
    path = Path(tmp_path_factory.mktemp("m")) / "m.asysrep"
    path.write_bytes(bytes(data))
    run = run_cli("stats", "-r", rule, "--format", "csv", "--no-cache", path)
    assert run.code in (0, 2), (run.code, run.err)
    assert "Traceback" not in run.err and "internal error" not in run.err, run.err
    if run.code == 2:
        assert run.err.count("\n") == 1, run.err


def test_column_declaration_not_utf8(pristine, tmp_path):
    """connectorx panics (pyo3's PanicException, not an Exception) on a column declaration that is
    not UTF-8: the table is read through sqlite3 instead, or the report rejected in one line."""
    data = bytearray(pristine)
    table = data.find(b'CREATE TABLE "HGPTI_ACTIVITY_KIND_KERNEL"')
    declared = data.find(b'"end" INTEGER', table) + len(b'"end" ')
    data[declared + 1] = 0xFF  # INTEGER -> I\xffTEGER: still an integer affinity to SQLite
    path = tmp_path / "declared.asysrep"
    path.write_bytes(bytes(data))
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "--no-cache", path)
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == ['1,50.0,100,20,5,5,5,5,0,"k2",', '2,50.0,100,20,5,5,5,5,0,"void k<int>(int)",']
