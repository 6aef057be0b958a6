"""pccl_stage_sum: golden output, brute-force property, corpus (no PCCL stage table there)."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.synth.writer import NSYS, ReportWriter

from conftest import corpus_params, fingerprint, run_cli

HEADER = "Row#,PID,Device ID,TID,Channel ID,Channel Type,Name,Total Time,Instances,Avg,Med,Min,Max,Stdev,"
PID = 631660


def add_stages(writer, rows):
    """rows: (tid, device, channel, type, stage, start, end)."""
    tid, dev, chan, kind, stage, start, end = zip(*rows)
    writer.add("pccl_stages", start=list(start), end=list(end), globalTid=[(PID << 24) + t for t in tid],
               deviceId=list(dev), channelId=list(chan), channelType=list(kind), stageNameId=writer.strings(stage))
    writer.close()
    return writer.path


def test_golden_csv(writer):
    path = add_stages(writer, [
        (631712, 0, 1, "RX", "RecvWait", 0, 10), (631712, 0, 1, "RX", "RecvWait", 20, 50),
        (631712, 0, 1, "RX", "RecvWait", 60, 80),
        (631711, 1, 1, "TX", "GPUWait", 0, 50),
        (631712, 0, 1, "TX", "GPUWait", 0, 25), (631712, 0, 1, "TX", "GPUWait", 30, 65),
        (631712, 0, 0, "TX", "GPUWait", 100, 160),
    ])
    run = run_cli("stats", "-r", "pccl_stage_sum", "--format", "csv", path)
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        HEADER,  # three totals of 60: name first, then channel 0 before 1
        '1,631660,0,631712,0,"TX","GPUWait",60,1,60,60,60,60,0,',
        '2,631660,0,631712,1,"TX","GPUWait",60,2,30,30,25,35,5,',
        '3,631660,0,631712,1,"RX","RecvWait",60,3,20,20,10,30,8,',
        '4,631660,1,631711,1,"TX","GPUWait",50,1,50,50,50,50,0,',
    ]


def test_nsight_export_has_no_stage_data(tmp_path):
    w = ReportWriter(tmp_path / "n.sqlite", dialect=NSYS)
    w.add("kernels", start=[0], end=[1], deviceId=0)
    w.close()
    run = run_cli("stats", "-r", "pccl_stage_sum", w.path)
    assert run.code == 2 and "does not contain PCCL transfer stage data (collect with --trace pccl)" in run.err


stage_rows = st.lists(st.tuples(st.integers(1, 2), st.integers(0, 1), st.integers(0, 1), st.sampled_from(["TX", "RX"]),
                                st.sampled_from(["GPUWait", "Transmit"]), st.integers(0, 100), st.integers(0, 50)),
                      min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(stage_rows)
def test_matches_brute_force(tmp_path_factory, rows):
    w = ReportWriter(tmp_path_factory.mktemp("s") / "r.asysrep")
    path = add_stages(w, [(t, d, c, k, s, start, start + dur) for t, d, c, k, s, start, dur in rows])
    expected = {}
    for t, d, c, k, s, _, dur in rows:
        expected.setdefault((PID, d, t, c, k, s), []).append(dur)
    want = sorted(((-sum(v), key[5], key[:5]), key, sum(v), len(v), int(statistics.median(v)), min(v), max(v),
                   int(statistics.pstdev(v))) for key, v in expected.items())
    run = run_cli("stats", "-r", "pccl_stage_sum", "--format", "json", path)
    assert run.code == 0, run.err
    import json

    got = [((r["PID"], r["Device ID"], r["TID"], r["Channel ID"], r["Channel Type"], r["Name"]), r["Total Time"],
            r["Instances"], r["Med"], r["Min"], r["Max"]) for r in json.loads(run.out)]
    assert got == [w_[1:7] for w_ in want]


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_runs(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", "pccl_stage_sum", "--format", "csv", path)
    assert "Traceback" not in run.err
    assert run.code == 2 and "does not contain PCCL transfer stage data" in run.err
    assert fingerprint(path) == before
