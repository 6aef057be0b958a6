"""HGTX rules against the worked examples of the rule reference, rebuilt as tiny reports.

Each fixture encodes just what the example shows (range ids are row ids of the HGTX table,
so filler rows — a domain creation and marks, which are ignored — come first).
"""

from __future__ import annotations

from conftest import run_cli

PUSHPOP, STARTEND, MARK, DOMAIN = 59, 60, 34, 75
ADD = "_Z3addPiS_S_"


def gtid(pid: int, tid: int) -> int:
    return (pid << 24) | tid


def csv(path, rule: str) -> list[str]:
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    return run.out.splitlines()


def fillers(writer, n: int, tid: int) -> None:
    """``n`` ignored HGTX rows: a domain creation (no ranges use it) and marks."""
    writer.add("hgtx", start=list(range(1, n + 1)), end=[None] * n, eventType=[DOMAIN] + [MARK] * (n - 1),
               text=["unused domain"] + [f"mark {i}" for i in range(1, n)], globalTid=tid, domainId=[9] + [0] * (n - 1))


def launch(writer, tid: int, corr: list[int], call: list[tuple[int, int]], kern: list[tuple[int, int]], **extra) -> None:
    writer.add("runtime", start=[c[0] for c in call], end=[c[1] for c in call], globalTid=tid, correlationId=corr,
               nameId=writer.string("hggcLaunchKernel"))
    name = writer.string(ADD)
    writer.add("kernels", start=[k[0] for k in kern], end=[k[1] for k in kern], correlationId=corr,
               globalPid=tid & ~0xFFFFFF, demangledName=name, shortName=name, mangledName=name, **extra)


def test_hgtx_sum_example(writer):
    t = gtid(100, 100)
    durations = [181837947, 177622641, 177254919, 170843422]
    starts = [10**9 * (i + 1) for i in range(4)]
    writer.add("hgtx", start=starts, end=[s + d for s, d in zip(starts, durations)], eventType=PUSHPOP,
               text=["[prof_range]: iter 6", "[prof_range]: iter 9", "[prof_range]: iter 7", "[prof_range]: iter 8"],
               globalTid=t, domainId=0)
    writer.close()
    assert csv(writer.path, "hgtx_sum") == [
        "Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range,",
        '1,25.7,181837947,1,181837947,181837947,181837947,181837947,0,"PushPop","[prof_range]: iter 6",',
        '2,25.1,177622641,1,177622641,177622641,177622641,177622641,0,"PushPop","[prof_range]: iter 9",',
        '3,25.1,177254919,1,177254919,177254919,177254919,177254919,0,"PushPop","[prof_range]: iter 7",',
        '4,24.1,170843422,1,170843422,170843422,170843422,170843422,0,"PushPop","[prof_range]: iter 8",',
    ]


def build_kern_sum(writer):
    # thread 3588556:  profile [1000 ............................................ 100M)
    #                    Loop1 [2000 ........ 40M)    Loop2 [50M ........... 90M)
    #                     DoProcess [3000 .. 30M)      DoProcess [51M ... 80M)
    #                       launch @4000                  launch @52M
    #   kernels:              add 4562345 ns                add 3474616 ns
    t = gtid(3588556, 3588556)
    writer.add("hgtx", start=[1000, 2000, 3000, 50_000_000, 51_000_000],
               end=[100_000_000, 40_000_000, 30_000_000, 90_000_000, 80_000_000], eventType=PUSHPOP,
               text=["profile", "Loop1", "DoProcess", "Loop2", "DoProcess"], globalTid=t, domainId=0)
    launch(writer, t, [1, 2], [(4000, 5000), (52_000_000, 52_001_000)],
           [(6000, 6000 + 4562345), (60_000_000, 60_000_000 + 3474616)], deviceId=0)
    writer.close()
    return writer.path


def test_hgtx_kern_sum_example(writer):
    assert csv(build_kern_sum(writer), "hgtx_kern_sum") == [
        "Row#,HGTX Range,Style,PID,TID,HGTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns),Min (ns),Max (ns),"
        "StdDev (ns),Kernel Name,",
        '1,"DoProcess","PushPop",3588556,3588556,2,2,8036961,4018480,4018480,3474616,4562345,543864,"add(int*, int*, int*)",',
        '2,"Loop1","PushPop",3588556,3588556,1,1,4562345,4562345,4562345,4562345,4562345,0,"add(int*, int*, int*)",',
        '3,"Loop2","PushPop",3588556,3588556,1,1,3474616,3474616,3474616,3474616,3474616,0,"add(int*, int*, int*)",',
        '4,"profile","PushPop",3588556,3588556,1,2,8036961,4018480,4018480,3474616,4562345,543864,"add(int*, int*, int*)",',
    ]


def test_hgtx_kern_trace_example(writer):
    # range ids 6, 7, 8 (five ignored rows first); kernel exec id 23 (22 kernels of another
    # process come first, launched outside any range)
    t = gtid(4010376, 4010376)
    fillers(writer, 5, t)
    writer.add("hgtx", start=[80_000_000, 80_100_000, 80_200_000], end=[99_000_000, 98_000_000, 97_000_000],
               eventType=PUSHPOP, text=["profile", "Loop1", "DoProcess"], globalTid=t, domainId=0)
    other = gtid(7, 7)
    launch(writer, other, list(range(100, 122)), [(i * 10, i * 10 + 5) for i in range(22)],
           [(1000 + i * 10, 1005 + i * 10) for i in range(22)], deviceId=0, contextId=1, streamId=1)
    launch(writer, t, [8], [(80913269, 80913269 + 4025776)], [(85579190, 85579190 + 11136752)], deviceId=0,
           contextId=1, streamId=1, gridX=64, gridY=1, gridZ=1, blockX=1, blockY=1, blockZ=1)
    writer.close()
    lines = csv(writer.path, "hgtx_kern_trace")
    assert lines == [
        "Row#,Range Name,Style,PID,TID,Device ID,Context ID,Stream ID,HGTX Range ID,Kernel Exec ID,Kernel Start (ns),"
        "Kernel Duration (ns),API Start (ns),API Duration (ns),GridXYZ,BlockXYZ,Correlation ID,Graph ID,"
        "Graph Node ID,Kernel Name,Mangled Name,",
        '1,"profile","PushPop",4010376,4010376,0,1,1,6,23,85579190,11136752,80913269,4025776,"64 1 1","1 1 1",8,"-","-",'
        '"add(int*, int*, int*)","_Z3addPiS_S_",',
        '2,"Loop1","PushPop",4010376,4010376,0,1,1,7,23,85579190,11136752,80913269,4025776,"64 1 1","1 1 1",8,"-","-",'
        '"add(int*, int*, int*)","_Z3addPiS_S_",',
        '3,"DoProcess","PushPop",4010376,4010376,0,1,1,8,23,85579190,11136752,80913269,4025776,"64 1 1","1 1 1",8,"-","-",'
        '"add(int*, int*, int*)","_Z3addPiS_S_",',
    ]


def test_hgtx_pushpop_trace_example(writer):
    # four threads of process 3730996; ids 1-5 are ignored rows, 10 is a start/end range
    a, b, c, d = (gtid(3730996, t) for t in (3730996, 3731078, 3731079, 3731080))
    fillers(writer, 5, a)
    rows = [  # (start, end, text, thread), row ids 6..13
        (173403462, 309023366, "profile", a), (173765782, 298721096, "Loop1", b),
        (186000000, 186000000 + 112237187, "DoProcess", b), (173985240, 264616466, "Loop1", c),
        (173000000, 174000000, "not a push/pop range", a), (174054855, 298794768, "Loop1", d),
        (187000000, 187000000 + 109974015, "DoProcess", d), (185211331, 263511821, "DoProcess", c),
    ]
    writer.add("hgtx", start=[r[0] for r in rows], end=[r[1] for r in rows],
               eventType=[PUSHPOP] * 4 + [STARTEND] + [PUSHPOP] * 3, text=[r[2] for r in rows],
               globalTid=[r[3] for r in rows], domainId=0)
    writer.close()
    lines = csv(writer.path, "hgtx_pushpop_trace")
    assert lines[:6] == [
        "Row#,Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,RangeId,"
        "ParentId,RangeStack,NameTree,",
        '1,173403462,309023366,135619904,0,135619904,"profile",3730996,3730996,0,0,6,"-",":6","profile",',
        '2,173765782,298721096,124955314,112237187,12718127,"Loop1",3730996,3731078,0,1,7,"-",":7","Loop1",',
        '3,173985240,264616466,90631226,78300490,12330736,"Loop1",3730996,3731079,0,1,9,"-",":9","Loop1",',
        '4,174054855,298794768,124739913,109974015,14765898,"Loop1",3730996,3731080,0,1,11,"-",":11","Loop1",',
        '5,185211331,263511821,78300490,0,78300490,"DoProcess",3730996,3731079,1,0,13,9,":9:13","-DoProcess",',
    ]
    assert len(lines) == 8


def build_projection(writer):
    """profile (id 6) holds Loop1..Loop10, each holding a DoProcess that launches 5 ops.

    Loop1's ops (PPU time from S = 777876074):  A [S, S+10M) with three short ops inside it,
    and E [S+14961664-470590, S+14961664): projection 14961664, union 10470590.
    Loops 2-10: five identical ops each, the last ending at S+53206947; they add 10977973
    of union, so profile's projection is 53206947 with 21448563 active."""
    t = gtid(295684, 295684)
    fillers(writer, 5, t)
    S = 777876074
    cpu = [(776113485, 776113485 + 56055065, "profile"), (776142784, 776142784 + 28572367, "Loop1"),
           (776146124, 776146124 + 27485685, "DoProcess")]
    for k in range(2, 11):
        lo = 804_800_000 + (k - 2) * 3_000_000
        cpu += [(lo, lo + 2_900_000, f"Loop{k}"), (lo + 10, lo + 2_800_000, "DoProcess")]
    writer.add("hgtx", start=[c[0] for c in cpu], end=[c[1] for c in cpu], eventType=PUSHPOP,
               text=[c[2] for c in cpu], globalTid=t, domainId=0)
    end1 = S + 14961664
    ops = [(S, S + 10_000_000), (S + 1000, S + 2000), (S + 3000, S + 4000), (S + 5000, S + 6000),
           (end1 - 470590, end1)]
    lengths = [1219774] * 8 + [1219774 + 7]
    for k, length in zip(range(2, 11), lengths):
        lo = S + 15_000_000 + (k - 2) * 3_000_000 if k < 10 else S + 53206947 - length
        ops += [(lo, lo + length)] * 5
    calls = [(776200000 + i * 1000, 776200500 + i * 1000) for i in range(5)]
    for k in range(2, 11):
        lo = 804_800_000 + (k - 2) * 3_000_000 + 1000
        calls += [(lo + i * 1000, lo + i * 1000 + 500) for i in range(5)]
    corr = list(range(1, 51))
    launch(writer, t, corr[:40], calls[:40], ops[:40], deviceId=0)
    writer.add("runtime", start=[c[0] for c in calls[40:]], end=[c[1] for c in calls[40:]], globalTid=t,
               correlationId=corr[40:], nameId=writer.string("hggcMemcpyAsync"))
    writer.add("memcpy", start=[o[0] for o in ops[40:]], end=[o[1] for o in ops[40:]], correlationId=corr[40:],
               globalPid=t & ~0xFFFFFF, deviceId=0, bytes=64, copyKind=1)
    writer.close()
    return writer.path


def test_hgtx_ppu_proj_trace_example(writer):
    lines = csv(build_projection(writer), "hgtx_ppu_proj_trace")
    assert lines[:4] == [
        "Row#,Name,Projected Start (ns),Projected Duration (ns),PPU Active Time (ns),Orig Start (ns),"
        "Orig Duration (ns),Style,PID,TID,NumPPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack,",
        '1,"profile",777876074,53206947,21448563,776113485,56055065,"PushPop",295684,295684,50,0,10,6,"-",":6",',
        '2,"Loop1",777876074,14961664,10470590,776142784,28572367,"PushPop",295684,295684,5,1,1,7,6,":6:7",',
        '3,"DoProcess",777876074,14961664,10470590,776146124,27485685,"PushPop",295684,295684,5,2,0,8,7,":6:7:8",',
    ]
    assert len(lines) == 1 + 1 + 10 * 2


def test_hgtx_ppu_proj_sum_on_the_projection_example(writer):
    lines = csv(build_projection(writer), "hgtx_ppu_proj_sum")[:3]
    # active analysis range = [S, S+53206947); Proj Active Time = union of the projections
    # DoProcess: 10 disjoint projections, 14961664 + 8 x 1219774 + 1219781 = 25939637 (48.8 %),
    # range time 27485685 + 9 x 2799990, population stddev 4122566, level 2 everywhere
    assert lines == [
        "Row#,Range,Style,In-Use (%),Proj Active Time (ns),Total Proj Time (ns),Total Range Time (ns),"
        "Range Instances,Proj Avg (ns),Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),Total PPU Ops,"
        "Avg PPU Ops,Avg Range Lvl,Avg Num Child,",
        '1,"profile","PushPop",100.0,53206947,53206947,56055065,1,53206947,53206947,53206947,53206947,0,50,50,0,10,',
        '2,"DoProcess","PushPop",48.8,25939637,25939637,52685595,10,2593963,1219774,1219774,14961664,4122566,50,5,2,0,',
    ]
