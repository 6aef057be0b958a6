"""HGTX rules on a hand-built scene (every option), --filter-hgtx, and the Nsight corpus."""

from __future__ import annotations

import pytest

from conftest import corpus_params, fingerprint, run_cli

PUSHPOP, STARTEND, MARK, DOMAIN = 59, 60, 34, 75
PID = 10
T1, T2 = (PID << 24) | 1, (PID << 24) | 2


def build(writer):
    """Thread 1 (pid 10)                                   Thread 2
         outer [0 ................................ 1000)      worker [0 .......... 2000)
           mid [100 ......................... 900)            k3 launched @500 (device 1)
             inner [200 ............... 800)                replay [2900 .. 3200)
               core [300 ...... 700)                          graph launch @3000 -> k5
                 k1 @350, memcpy @360, mark @400
         async (start/end) [50 ........................................ 1500) ends on thread 2
         NCCL:AllReduce [1100 .. 1200)   k2 @1150
         capture [2000 .. 2100): creates graph node 7 @2050 (cloned as node 8 @2200, outside)
         k4 @5000: in no range (standalone)
    PPU:  k1 [1000,1100) kA   k2 [1300,1500) kB   k3 [600,700) kA dev 1   k4 [5100,5200) kC
          k5 [3100,3150) kB from graph 3 node 8   memcpy [1050,1250)"""
    rows = [  # start, end, type, text, thread, end thread, domain
        (0, None, DOMAIN, "NCCL", T1, None, 1),
        (0, 1000, PUSHPOP, "outer", T1, None, 0), (100, 900, PUSHPOP, "mid", T1, None, 0),
        (200, 800, PUSHPOP, "inner", T1, None, 0), (300, 700, PUSHPOP, "core", T1, None, 0),
        (400, None, MARK, "a mark", T1, None, 0), (50, 1500, STARTEND, "async", T1, T2, 0),
        (1100, 1200, PUSHPOP, "AllReduce", T1, None, 1), (2000, 2100, PUSHPOP, "capture", T1, None, 0),
        (0, 2000, PUSHPOP, "worker", T2, None, 0), (2900, 3200, PUSHPOP, "replay", T2, None, 0),
    ]
    writer.add("hgtx", start=[r[0] for r in rows], end=[r[1] for r in rows], eventType=[r[2] for r in rows],
               text=[r[3] for r in rows], globalTid=[r[4] for r in rows], endGlobalTid=[r[5] for r in rows],
               domainId=[r[6] for r in rows])
    calls = [(350, T1, 1), (1150, T1, 2), (500, T2, 3), (5000, T1, 4), (3000, T2, 5), (360, T1, 6)]
    writer.add("runtime", start=[c[0] for c in calls], end=[c[0] + 10 for c in calls],
               globalTid=[c[1] for c in calls], correlationId=[c[2] for c in calls],
               nameId=writer.strings(["hggcLaunchKernel"] * 4 + ["hggcGraphLaunch", "hggcMemcpyAsync"]))
    names = writer.strings(["_Z2kAv", "_Z2kBv", "_Z2kAv", "_Z2kCv", "_Z2kBv"])
    writer.add("kernels", start=[1000, 1300, 600, 5100, 3100], end=[1100, 1500, 700, 5200, 3150],
               correlationId=[1, 2, 3, 4, 5], deviceId=[0, 0, 1, 0, 0], contextId=1, streamId=7,
               globalPid=PID << 24, demangledName=names, shortName=names, mangledName=names,
               graphNodeId=[None, None, None, None, 8], graphId=[None, None, None, None, 3],
               gridX=2, gridY=1, gridZ=1, blockX=128, blockY=1, blockZ=1)
    writer.add("memcpy", start=[1050], end=[1250], correlationId=[6], deviceId=0, globalPid=PID << 24,
               bytes=64, copyKind=1)
    writer.add("graph_nodes", start=[2050, 2200], end=[2051, 2201], globalTid=T1, graphId=[3, 3],
               graphNodeId=[7, 8], originalGraphNodeId=[None, 7])
    writer.close()
    return writer.path


def csv(path, rule: str, *extra: str) -> list[str]:
    run = run_cli("stats", "-r", rule, "--format", "csv", *extra, path)
    assert run.code == 0, run.err
    return run.out.splitlines()[1:]


def test_hgtx_sum(writer):
    # total 6750 ns; the mark and the domain row are not ranges; NCCL's range is "NCCL:AllReduce"
    assert csv(build(writer), "hgtx_sum") == [
        '1,29.6,2000,1,2000,2000,2000,2000,0,"PushPop","worker",',
        '2,21.5,1450,1,1450,1450,1450,1450,0,"StartEnd","async",',
        '3,14.8,1000,1,1000,1000,1000,1000,0,"PushPop","outer",',
        '4,11.9,800,1,800,800,800,800,0,"PushPop","mid",',
        '5,8.9,600,1,600,600,600,600,0,"PushPop","inner",',
        '6,5.9,400,1,400,400,400,400,0,"PushPop","core",',
        '7,4.4,300,1,300,300,300,300,0,"PushPop","replay",',
        '8,1.5,100,1,100,100,100,100,0,"PushPop","NCCL:AllReduce",',
        '9,1.5,100,1,100,100,100,100,0,"PushPop","capture",',
    ]


@pytest.mark.parametrize("options, ranges", [
    ("thread=2", ["worker", "replay"]),
    ("process=99", []),
    ("process=99:thread=2", ["worker", "replay"]),  # a thread OR a process that matches
    ("process=10:rows=2", ["worker", "async"]),
])
def test_hgtx_sum_scope(writer, options, ranges):
    assert [line.split(",")[-2].strip('"') for line in csv(build(writer), f"hgtx_sum:{options}")] == ranges


def test_hgtx_pushpop_trace(writer):
    # same start (0): RangeId decides; 4 deep on thread 1; start/end ranges are not listed
    assert csv(build(writer), "hgtx_pushpop_trace") == [
        '1,0,1000,1000,800,200,"outer",10,1,0,1,2,"-",":2","outer",',
        '2,0,2000,2000,0,2000,"worker",10,2,0,0,10,"-",":10","worker",',
        '3,100,900,800,600,200,"mid",10,1,1,1,3,2,":2:3","-mid",',
        '4,200,800,600,400,200,"inner",10,1,2,1,4,3,":2:3:4","--inner",',
        '5,300,700,400,0,400,"core",10,1,3,0,5,4,":2:3:4:5","---core",',
        '6,1100,1200,100,0,100,"NCCL:AllReduce",10,1,0,0,8,"-",":8","NCCL:AllReduce",',
        '7,2000,2100,100,0,100,"capture",10,1,0,0,9,"-",":9","capture",',
        '8,2900,3200,300,0,300,"replay",10,2,0,0,11,"-",":11","replay",',
    ]


def test_hgtx_pushpop_trace_range_regex(writer):
    lines = csv(build(writer), "hgtx_pushpop_trace:range=^(core|mid)$")
    assert [line.split(",")[6] for line in lines] == ['"mid"', '"core"']
    bad = run_cli("stats", "-r", "hgtx_pushpop_trace:range=(", "--format", "csv", writer.path)
    assert bad.code == 2 and "option 'range'" in bad.err and "Traceback" not in bad.err


KERN_SUM = [
    '1,"NCCL:AllReduce","PushPop",10,1,1,1,200,200,200,200,200,0,"kB()",',
    '2,"async","StartEnd",10,1,1,1,200,200,200,200,200,0,"kB()",',
    '3,"async","StartEnd",10,1,1,1,100,100,100,100,100,0,"kA()",',
    '4,"capture","PushPop",10,1,1,1,50,50,50,50,50,0,"kB()",',  # graph node created in 'capture'
    '5,"core","PushPop",10,1,1,1,100,100,100,100,100,0,"kA()",',
    '6,"inner","PushPop",10,1,1,1,100,100,100,100,100,0,"kA()",',
    '7,"mid","PushPop",10,1,1,1,100,100,100,100,100,0,"kA()",',
    '8,"outer","PushPop",10,1,1,1,100,100,100,100,100,0,"kA()",',
    '9,"replay","PushPop",10,2,1,1,50,50,50,50,50,0,"kB()",',
    '10,"worker","PushPop",10,2,1,1,100,100,100,100,100,0,"kA()",',
]


def test_hgtx_kern_sum(writer):
    assert csv(build(writer), "hgtx_kern_sum") == KERN_SUM


@pytest.mark.parametrize("options, expected", [
    ("standalone", KERN_SUM + ['11,"-","-",10,1,"-",1,100,100,100,100,100,0,"kC()",']),
    ("device=1", ['1,"worker","PushPop",10,2,1,1,100,100,100,100,100,0,"kA()",']),
    ("no-graph-mapping", [line for line in KERN_SUM if "capture" not in line]),
    ("range-include=^c", [KERN_SUM[3], KERN_SUM[4]]),
    ("range-exclude=NCCL/^(async|mid|outer|inner|replay|worker)$", [KERN_SUM[3], KERN_SUM[4]]),
    ("base:range-include=^core$", ['1,"core","PushPop",10,1,1,1,100,100,100,100,100,0,"kA",']),
    ("mangled:range-include=^core$", ['1,"core","PushPop",10,1,1,1,100,100,100,100,100,0,"_Z2kAv",']),
    ("standalone:device=0:range-include=^NCCL", [  # kernels of excluded ranges become standalone
        '1,"NCCL:AllReduce","PushPop",10,1,1,1,200,200,200,200,200,0,"kB()",',
        '2,"-","-",10,1,"-",1,100,100,100,100,100,0,"kA()",', '3,"-","-",10,1,"-",1,100,100,100,100,100,0,"kC()",',
        '4,"-","-",10,2,"-",1,50,50,50,50,50,0,"kB()",']),
])
def test_hgtx_kern_sum_options(writer, options, expected):
    lines = csv(build(writer), f"hgtx_kern_sum:{options}")
    assert [line.split(",", 1)[1] for line in lines] == [line.split(",", 1)[1] for line in expected]


KERN_TRACE = [
    '1,"worker","PushPop",10,2,1,1,7,10,3,600,100,500,10,"2 1 1","128 1 1",3,"-","-","kA()","_Z2kAv",',
    '2,"outer","PushPop",10,1,0,1,7,2,1,1000,100,350,10,"2 1 1","128 1 1",1,"-","-","kA()","_Z2kAv",',
    '3,"async","StartEnd",10,1,0,1,7,7,1,1000,100,350,10,"2 1 1","128 1 1",1,"-","-","kA()","_Z2kAv",',
    '4,"mid","PushPop",10,1,0,1,7,3,1,1000,100,350,10,"2 1 1","128 1 1",1,"-","-","kA()","_Z2kAv",',
    '5,"inner","PushPop",10,1,0,1,7,4,1,1000,100,350,10,"2 1 1","128 1 1",1,"-","-","kA()","_Z2kAv",',
    '6,"core","PushPop",10,1,0,1,7,5,1,1000,100,350,10,"2 1 1","128 1 1",1,"-","-","kA()","_Z2kAv",',
    '7,"async","StartEnd",10,1,0,1,7,7,2,1300,200,1150,10,"2 1 1","128 1 1",2,"-","-","kB()","_Z2kBv",',
    '8,"NCCL:AllReduce","PushPop",10,1,0,1,7,8,2,1300,200,1150,10,"2 1 1","128 1 1",2,"-","-","kB()","_Z2kBv",',
    # the graph kernel: mapped to 'capture' through its node (API cells '-'), launched in 'replay'
    '9,"capture","PushPop",10,1,0,1,7,9,5,3100,50,"-","-","2 1 1","128 1 1",5,3,8,"kB()","_Z2kBv",',
    '10,"replay","PushPop",10,2,0,1,7,11,5,3100,50,3000,10,"2 1 1","128 1 1",5,3,8,"kB()","_Z2kBv",',
]


def test_hgtx_kern_trace(writer):
    path = build(writer)
    assert csv(path, "hgtx_kern_trace") == KERN_TRACE
    assert csv(path, "hgtx_kern_trace:standalone")[-1] == \
        '11,"-","-",10,1,0,1,7,"-",4,5100,100,5000,10,"2 1 1","128 1 1",4,"-","-","kC()","_Z2kCv",'
    no_graph = csv(path, "hgtx_kern_trace:no-graph-mapping:base:range-include=^(replay|capture)$")
    assert no_graph == [
        '1,"replay","PushPop",10,2,0,1,7,11,5,3100,50,3000,10,"2 1 1","128 1 1",5,3,8,"kB","_Z2kBv",']


PROJ_SUM = [
    '1,"async","StartEnd",10.9,500,500,1450,1,500,500,500,500,0,3,3,0,0,',
    '2,"core","PushPop",5.4,250,250,400,1,250,250,250,250,0,2,2,3,0,',
    '3,"inner","PushPop",5.4,250,250,600,1,250,250,250,250,0,2,2,2,1,',
    '4,"mid","PushPop",5.4,250,250,800,1,250,250,250,250,0,2,2,1,1,',
    '5,"outer","PushPop",5.4,250,250,1000,1,250,250,250,250,0,2,2,0,1,',
    '6,"NCCL:AllReduce","PushPop",4.3,200,200,100,1,200,200,200,200,0,1,1,0,0,',
    '7,"worker","PushPop",2.2,100,100,2000,1,100,100,100,100,0,1,1,0,0,',
    '8,"capture","PushPop",1.1,50,50,100,1,50,50,50,50,0,1,1,0,0,',
    '9,"replay","PushPop",1.1,50,50,300,1,50,50,50,50,0,1,1,0,0,',
]


def test_hgtx_ppu_proj_sum(writer):
    # active range: first PPU op (k3 @600) to last (k4 ends 5200) = 4600 ns
    # async: k1 + memcpy + k2 -> [1000, 1500) = 500 = 10.9 %; core: k1 + memcpy -> [1000, 1250)
    path = build(writer)
    assert csv(path, "hgtx_ppu_proj_sum") == PROJ_SUM
    # full: the report's span (no ANALYSIS_DETAILS): 0 (first range) .. 5200 (last kernel)
    assert csv(path, "hgtx_ppu_proj_sum:range-mode=full")[0] == \
        '1,"async","StartEnd",9.6,500,500,1450,1,500,500,500,500,0,3,3,0,0,'
    assert csv(path, "hgtx_ppu_proj_sum:device=1") == [
        '1,"worker","PushPop",100.0,100,100,2000,1,100,100,100,100,0,1,1,0,0,']
    assert [line.split(",")[1] for line in csv(path, "hgtx_ppu_proj_sum:no-graph-mapping:range-exclude=^[a-o]")] == \
        ['"NCCL:AllReduce"', '"worker"', '"replay"']


def test_hgtx_ppu_proj_trace(writer):
    path = build(writer)
    # async's PPU active time: [1000,1250) + [1300,1500) = 450; equal projected starts keep range order
    assert csv(path, "hgtx_ppu_proj_trace") == [
        '1,"worker",600,100,100,0,2000,"PushPop",10,2,1,0,0,10,"-",":10",',
        '2,"outer",1000,250,250,0,1000,"PushPop",10,1,2,0,1,2,"-",":2",',
        '3,"async",1000,500,450,50,1450,"StartEnd",10,1,3,0,0,7,"-",":7",',
        '4,"mid",1000,250,250,100,800,"PushPop",10,1,2,1,1,3,2,":2:3",',
        '5,"inner",1000,250,250,200,600,"PushPop",10,1,2,2,1,4,3,":2:3:4",',
        '6,"core",1000,250,250,300,400,"PushPop",10,1,2,3,0,5,4,":2:3:4:5",',
        '7,"NCCL:AllReduce",1300,200,200,1100,100,"PushPop",10,1,1,0,0,8,"-",":8",',
        '8,"capture",3100,50,50,2000,100,"PushPop",10,1,1,0,0,9,"-",":9",',
        '9,"replay",3100,50,50,2900,300,"PushPop",10,2,1,0,0,11,"-",":11",',
    ]
    assert [line.split(",")[1] for line in csv(path, "hgtx_ppu_proj_trace:no-graph-mapping:device=0")] == \
        ['"outer"', '"async"', '"mid"', '"inner"', '"core"', '"NCCL:AllReduce"', '"replay"']


# -- --filter-hgtx ---------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, rule, expected", [
    # CPU side: ranges inside core's span [300, 700); PPU side: core's projection [1000, 1250)
    ("core", "hgtx_sum", ['1,100.0,400,1,400,400,400,400,0,"PushPop","core",']),
    ("core", "hggc_ppu_kern_sum", ['1,100.0,100,1,100,100,100,100,0,"kA()",']),
    ("core", "hgtx_kern_sum", ['1,"core","PushPop",10,1,1,1,100,100,100,100,100,0,"kA()",']),
    ("AllReduce@NCCL", "hggc_ppu_kern_sum", ['1,100.0,200,1,200,200,200,200,0,"kB()",']),
    ("capture/0", "hggc_ppu_kern_sum", ['1,100.0,50,1,50,50,50,50,0,"kB()",']),  # through the graph node
    ("replay", "hgtx_sum", ['1,100.0,300,1,300,300,300,300,0,"PushPop","replay",']),
    ("outer", "hgtx_pushpop_trace:column=Name", ['1,"outer",', '2,"mid",', '3,"inner",', '4,"core",']),
])
def test_filter_hgtx(writer, spec, rule, expected):
    assert csv(build(writer), rule, "--filter-hgtx", spec) == expected


@pytest.mark.parametrize("spec, message", [
    ("AllReduce", "no HGTX range named 'AllReduce' (nearest: AllReduce@NCCL)"),
    ("outer/1", "HGTX range 'outer' has 1 instance(s), index 1 is out of range"),
    ("nothing like it", "no HGTX range named 'nothing like it'"),
])
def test_filter_hgtx_errors(writer, spec, message):
    run = run_cli("stats", "-r", "hgtx_sum", "--filter-hgtx", spec, build(writer))
    assert run.code == 2 and message in run.err and len(run.err.strip().splitlines()) == 1


# -- the Nsight corpus ---------------------------------------------------------------------------
RULES = ["hgtx_sum:process=0/1", "hgtx_pushpop_trace:range=.", "hgtx_kern_sum:standalone:base",
         "hgtx_kern_trace:standalone:mangled", "hgtx_ppu_proj_sum:range-mode=full:range-exclude=^zzz",
         "hgtx_ppu_proj_trace:no-graph-mapping"]


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_runs_every_rule(path):
    before = fingerprint(path)
    for rule in RULES:
        run = run_cli("stats", "-r", rule, "--format", "csv", path)
        assert "Traceback" not in run.err
        assert run.code == 0 or (run.code == 2 and "does not contain" in run.err), (rule, run.err)
    assert fingerprint(path) == before


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_hgtx_sum_matches_sql(path):
    import json
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name='NVTX_EVENTS'").fetchone():
        pytest.skip("no NVTX table")
    maxts = con.execute("SELECT max(max(start), max(coalesce(end, 0))) FROM NVTX_EVENTS").fetchone()[0]
    expected: dict[tuple[str, str], list[int]] = {}
    for name, style, duration in con.execute(f"""
            WITH d AS (SELECT domainId, globalTid >> 24 AS pid, coalesce(text, s.value) AS name, min(start)
                       FROM NVTX_EVENTS LEFT JOIN StringIds s ON s.id = textId WHERE eventType = 75 GROUP BY 1, 2)
            SELECT coalesce(d.name || ':', '') || coalesce(e.text, s.value),
                   CASE e.eventType WHEN 59 THEN 'PushPop' ELSE 'StartEnd' END, coalesce(e.end, {maxts}) - e.start
            FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
            LEFT JOIN d ON d.domainId = e.domainId AND d.pid = e.globalTid >> 24 AND e.domainId != 0
            WHERE e.eventType IN (59, 60)"""):
        expected.setdefault((name, style), []).append(duration)
    run = run_cli("stats", "-r", "hgtx_sum", "--format", "json", path)
    assert run.code == 0, run.err
    got = {(r["Range"], r["Style"]): (r["Total Time (ns)"], r["Instances"], r["Max (ns)"]) for r in json.loads(run.out)}
    assert got == {k: (sum(v), len(v), max(v)) for k, v in expected.items()}


def test_suspect_ranges_and_kernels_are_left_out_unless_kept(writer):
    t = T1
    writer.add("hgtx", start=[0, 500], end=[100, 400], eventType=PUSHPOP, text=["fine", "backwards"],
               globalTid=t, domainId=0)
    writer.add("runtime", start=[10, 20], end=[11, 21], globalTid=t, correlationId=[1, 2], nameId=writer.string("l"))
    k = writer.string("_Z1kv")
    writer.add("kernels", start=[30, 60], end=[40, 50], correlationId=[1, 2], deviceId=0, globalPid=PID << 24,
               demangledName=k, shortName=k, mangledName=k)
    writer.close()
    assert csv(writer.path, "hgtx_sum") == ['1,100.0,100,1,100,100,100,100,0,"PushPop","fine",']
    assert csv(writer.path, "hgtx_kern_sum") == ['1,"fine","PushPop",10,1,1,1,10,10,10,10,10,0,"k()",']
    kept = csv(writer.path, "hgtx_kern_sum", "--keep-suspect-events")
    assert kept == ['1,"fine","PushPop",10,1,1,2,0,0,0,-10,10,10,"k()",']  # durations 10 and -10
    assert [line.split(",")[-2] for line in csv(writer.path, "hgtx_sum", "--keep-suspect-events")] == \
        ['"fine"', '"backwards"']


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_pushpop_parents_match_tightest_enclosing_range(path):
    """Nsight's definition: the parent is the tightest other push/pop range on the thread
    that holds the range (checked on the files with under 1000 ranges)."""
    import json
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name='NVTX_EVENTS'").fetchone():
        pytest.skip("no NVTX table")
    if con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59").fetchone()[0] > 1000:
        pytest.skip("too many ranges for the SQL self-join")
    parents = {c: p for c, p, _ in con.execute("""
        SELECT c.rowid, p.rowid, min((c.start - p.start) + (p."end" - c."end"))
        FROM NVTX_EVENTS c LEFT JOIN NVTX_EVENTS p
          ON p.eventType = 59 AND p.globalTid = c.globalTid AND p.rowid != c.rowid
         AND p.start <= c.start AND p."end" >= c."end"
        WHERE c.eventType = 59 GROUP BY c.rowid""")}
    run = run_cli("stats", "-r", "hgtx_pushpop_trace", "--format", "json", path)
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    assert {r["RangeId"]: r["ParentId"] for r in rows} == parents
    children = {}
    for r in rows:
        children[r["ParentId"]] = children.get(r["ParentId"], 0) + 1
    assert all(r["NumChild"] == children.get(r["RangeId"], 0) for r in rows)
