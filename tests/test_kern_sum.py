"""hggc_ppu_kern_sum: golden output, option handling, and the corpus against SQL GROUP BY."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import corpus_params, fingerprint, run_cli

HEADER = "Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,"


def build(writer):
    add, mul = writer.strings(["_Z3addPiS_S_", "_Z3mulPiS_S_"])
    # device 0:  add [0,50)  mul [100,180)      device 1: add [200,260) add [400,500)
    writer.add("kernels", start=[0, 100, 200, 400], end=[50, 180, 260, 500], deviceId=[0, 0, 1, 1],
               demangledName=[add, mul, add, add], shortName=[add, mul, add, add],
               mangledName=[add, mul, add, add], correlationId=[1, 2, 3, 4], globalPid=1000 << 24)
    writer.close()
    return writer.path


def test_golden_csv(writer):
    path = build(writer)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", path)
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        HEADER,
        '1,72.4,210,3,70,60,50,100,21,"add(int*, int*, int*)",',
        '2,27.6,80,1,80,80,80,80,0,"mul(int*, int*, int*)",',
    ]


def test_header_matches_reference_example():
    from asysstats.rulebook import REGISTRY

    rule = REGISTRY.get("hggc_ppu_kern_sum")
    assert ",".join(["Row#"] + [c.name for c in rule.columns]) + "," == HEADER


@pytest.mark.parametrize("option, expected", [
    ("base", '1,72.4,210,3,70,60,50,100,21,"add",'),
    ("mangled", '1,72.4,210,3,70,60,50,100,21,"_Z3addPiS_S_",'),
    ("device=1", '1,100.0,160,2,80,80,60,100,20,"add(int*, int*, int*)",'),
    ("rows=1:column=Name/Instances", '1,"add(int*, int*, int*)",3,'),
])
def test_options(writer, option, expected):
    path = build(writer)
    run = run_cli("stats", "-r", f"hggc_ppu_kern_sum:{option}", "--format", "csv", path)
    assert run.code == 0, run.err
    assert run.out.splitlines()[1] == expected


def test_device_filter_selecting_nothing_prints_header_only(writer):
    path = build(writer)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum:device=7", "--format", "csv", path)
    assert (run.code, run.out) == (0, HEADER + "\n")


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_matches_sql_group_by(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name='CUPTI_ACTIVITY_KIND_KERNEL'").fetchone():
        pytest.skip("no kernel table")
    columns = {r[1] for r in con.execute("PRAGMA table_info('CUPTI_ACTIVITY_KIND_KERNEL')")}
    name = "coalesce(k.mangledName, k.demangledName)" if "mangledName" in columns else "k.demangledName"
    expected = {}
    for text, total, count, lo, hi in con.execute(
            f"SELECT s.value, sum(k.end-k.start), count(*), min(k.end-k.start), max(k.end-k.start) "
            f"FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = {name} GROUP BY s.value"):
        expected[text] = (total, count, lo, hi)
    before = fingerprint(path)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum:mangled", "--format", "json", path)
    assert run.code == 0, run.err
    import json

    rows = json.loads(run.out)
    got = {r["Name"]: (r["Total Time (ns)"], r["Instances"], r["Min (ns)"], r["Max (ns)"]) for r in rows}
    assert got == expected
    assert fingerprint(path) == before


def test_filter_time_on_an_nsight_export_counts_from_session_start():
    from conftest import NSYS_CORPUS

    path = NSYS_CORPUS / "fuser_hopper_r1.sqlite"
    if not path.exists():
        pytest.skip("corpus absent")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cut = 1_500_000_000  # event times are ns from the session start (ANALYSIS_DETAILS is on another clock)
    (inside,) = con.execute(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= {cut}").fetchone()
    assert 0 < inside < 19
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "json", "--filter-time", f"{cut}/", path)
    import json

    assert sum(row["Instances"] for row in json.loads(run.out)) == inside
