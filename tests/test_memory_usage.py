"""device_memory_usage_summary / _detail: alloc-free matching, call-stack grouping, corpus."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.callstacks import chain_membership, group_labels, parse_groups
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable
from asysstats.rulebook.memory_usage import released_pairs

from conftest import corpus_params, fingerprint, run_cli

SUMMARY = "PID,Device ID,Group List,Memory Usage,"  # the reference's example header: no Row# (issue 27)
DETAIL = "Row#,PID,Device ID,Group List,Time (ns),TID,Context ID,Memory,Size (bytes),Access Flag,Event ID,"
PID = 100
GPID = PID << 24
CONFIG = ("--callstack-group-config", "acompute=(libacblas|libacdnn)",
          "--callstack-group-config", "launch_kernel=libtorch/LaunchKernel",
          "--callstack-group-config", "loss=loss\\.py",
          "--callstack-group-config", "torch=libtorch")

# Call chains, outermost frame first (stackDepth 0 is the innermost):
CHAINS = {
    1: [("train (train.py:10)", "/w/train.py"), ("at::empty", "libtorch_cuda.so"),
        ("acblasCreate", "libacblas.so"), ("hggcMalloc", "libhggc.so")],
    2: [("loss_fn (loss.py:5)", "/w/loss.py"), ("at::native::add", "libtorch_cuda.so"),
        ("hggcLaunchKernel", "libhggc.so"), ("hggcMalloc", "libhggc.so")],
    3: [("main", "app"), ("hggcMalloc", "libhggc.so")],
    4: [("LaunchKernel", "app"), ("alloc", "libtorch.so")],  # child/parent in the wrong order
}


def build(writer):
    for chain, frames in CHAINS.items():
        depth = np.arange(len(frames))[::-1]
        writer.add("callchains", id=chain, stackDepth=depth, symbol=writer.strings([f[0] for f in frames]),
                   module=writer.strings([f[1] for f in frames]))
    malloc = writer.string("hggcMalloc")
    # API calls: correlation 11..15 carry chains 1, 2, 3, 1, 4; correlation 12 runs on thread 3.
    writer.add("runtime", start=[5, 15, 35, 45, 65], end=[12, 22, 42, 52, 72], nameId=malloc,
               globalTid=[GPID + 1, GPID + 3, GPID + 1, GPID + 1, GPID + 1],
               correlationId=[11, 12, 13, 14, 15], callchainId=[1, 2, 3, 1, 4])
    # time: 10 alloc A (1000)  20 alloc B  30 free A (thread 2)  40 alloc A again  50 alloc C on device 1
    #       60 free C on device 0 (matches nothing)  70 alloc D
    writer.add("memory_usage", start=[10, 20, 30, 40, 50, 60, 70], globalPid=GPID,
               globalTid=[GPID + 1, None, GPID + 2, GPID + 1, GPID + 1, GPID + 1, GPID + 1],
               deviceId=[0, 0, 0, 0, 1, 0, 0], contextId=1, address=[0xA0, 0xB0, 0xA0, 0xA0, 0xC0, 0xC0, 0xD0],
               bytes=[1000, 200, 0, 300, 50, 50, 70], memKind=3, accessFlags=[1, 1, 1, 1, 1, 1, None],
               memoryOperationType=[0, 0, 1, 0, 0, 1, 0], correlationId=[11, 12, 21, 13, 14, 22, 15])
    writer.close()
    return writer.path


def csv(path, rule, *extra):
    run = run_cli("stats", "-r", rule, "--format", "csv", *extra, path)
    assert run.code == 0, run.err
    return run.out.splitlines()


def test_summary_unreleased_size_all_groups(writer):
    assert csv(build(writer), "device_memory_usage_summary", *CONFIG) == [
        SUMMARY,
        '100,0,"others",300,',  # address 0xA0 reused after its free
        '100,0,"launch_kernel/loss/torch",200,',  # Python frame above native frames
        '100,0,"torch",70,',
        '100,1,"acompute/torch",50,',  # the free on device 0 does not release it
    ]


@pytest.mark.parametrize("mode, expected", [
    ("usage-mode=alloc-size", ['"acompute/torch",1000', '"others",300', '"launch_kernel/loss/torch",200',
                               '"torch",70', '"acompute/torch",50']),
    ("usage-mode=alloc-count", ['"acompute/torch",1', '"acompute/torch",1', '"launch_kernel/loss/torch",1',
                                '"others",1', '"torch",1']),
    ("usage-mode=unreleased-count", ['"acompute/torch",1', '"launch_kernel/loss/torch",1', '"others",1',
                                     '"torch",1']),
    ("match-first-group", ['"others",300', '"launch_kernel",200', '"torch",70', '"acompute",50']),
])
def test_summary_modes(writer, mode, expected):
    lines = csv(build(writer), f"device_memory_usage_summary:{mode}", *CONFIG)
    assert [line.split(",", 2)[2].rstrip(",") for line in lines[1:]] == expected


def test_detail_unreleased(writer):
    assert csv(build(writer), "device_memory_usage_detail", *CONFIG) == [
        DETAIL,
        '1,100,0,"launch_kernel/loss/torch",20,3,1,176,200,1,12,',  # TID from its API call
        '2,100,0,"others",40,1,1,160,300,1,13,',
        '3,100,1,"acompute/torch",50,1,1,192,50,1,14,',
        '4,100,0,"torch",70,1,1,208,70,"-",15,',
    ]


def test_detail_all_shows_frees_with_negative_size(writer):
    lines = csv(build(writer), "device_memory_usage_detail:usage-mode=all:match-first-group", *CONFIG)
    assert lines[3] == '3,100,0,"acompute",30,2,1,160,-1000,1,21,'  # freed by another thread
    assert lines[6] == '6,100,0,"others",60,1,1,192,-50,1,22,'  # a free that releases nothing
    assert len(lines) == 8


def test_builtin_groups(writer):
    lines = csv(build(writer), "device_memory_usage_summary:usage-mode=alloc-size")
    assert lines[1] == '100,0,"pytorch/compute_lib/hggc_runtime/python",1000,'
    assert '"hggc_runtime",300,' in lines[2]


def test_same_group_name_twice_is_either_rule(writer):
    lines = csv(build(writer), "device_memory_usage_summary", "--callstack-group-config", "mine=^main$",
                "--callstack-group-config", "mine=loss")
    assert lines[1:] == ['100,0,"mine",500,', '100,0,"others",70,', '100,1,"others",50,']


def test_invalid_group_regex_is_one_line(writer):
    run = run_cli("stats", "-r", "device_memory_usage_summary", "--callstack-group-config", "bad=libtorch/(x",
                  build(writer))
    assert run.code == 2
    assert "--callstack-group-config 'bad=libtorch/(x'" in run.err and "'(x'" in run.err
    assert len(run.err.strip().splitlines()) == 1


def test_missing_table(writer):
    writer.add("kernels", start=[0], end=[1], deviceId=0)
    writer.close()
    run = run_cli("stats", "-r", "device_memory_usage_summary", writer.path)
    assert run.code == 2 and "does not contain device memory usage data" in run.err


# -- properties against brute force -------------------------------------------------------

def brute_released(events):
    """events: (key, time, op) rows; a free releases the latest earlier allocation unless freed."""
    freed = [-1] * len(events)
    taken = set()
    order = sorted(range(len(events)), key=lambda i: (events[i][1], i))
    for i in order:
        key, _, op = events[i]
        if op != 1:
            continue
        earlier = [j for j in order[:order.index(i)] if events[j][0] == key and events[j][2] == 0]
        if earlier and earlier[-1] not in taken:
            freed[i] = earlier[-1]
            taken.add(earlier[-1])
    return freed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(0, 1)), max_size=25))
def test_release_matching_matches_brute_force(rows):
    key = np.array([r[0] for r in rows], dtype=np.int64)
    time = np.array([r[1] for r in rows], dtype=np.int64)
    op = np.array([r[2] for r in rows], dtype=np.int64)
    got = released_pairs(key % 2, np.zeros_like(key), key // 2, time, op)
    assert got.tolist() == brute_released(rows)


TOKENS = ("a", "b", "c", "d")


def brute_member(chain, rule):
    """chain: frames outermost first as (symbol, module); rule: regex tokens parent to child."""
    hits = lambda frame, token: token in frame[0] or token in frame[1]  # noqa: E731
    return any(all(hits(chain[i], t) for i, t in zip(idx, rule))
               for idx in itertools.combinations(range(len(chain)), len(rule)))


frames_st = st.tuples(st.sampled_from(TOKENS + ("ab", "x")), st.sampled_from(TOKENS + ("cd", "y")))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(frames_st, min_size=1, max_size=6), min_size=1, max_size=5),
       st.lists(st.tuples(st.sampled_from(("g1", "g2", "g3")), st.lists(st.sampled_from(TOKENS), min_size=1,
                                                                        max_size=3)), min_size=1, max_size=4),
       st.booleans())
def test_grouping_matches_brute_force(chains, rules, first_only):
    pool = StringPool()
    ids, depth, sym, mod = [], [], [], []
    for c, chain in enumerate(chains):
        for d, (s, m) in enumerate(chain):
            ids.append(10 * c + 7)
            depth.append(len(chain) - 1 - d)
            sym.append(s)
            mod.append(m)
    perm = np.random.default_rng(len(ids)).permutation(len(ids))  # stored order does not matter
    frames = EventTable({"id": np.array(ids)[perm], "stackDepth": np.array(depth)[perm],
                         "symbol": pool.intern(sym)[perm], "module": pool.intern(mod)[perm]})
    config = parse_groups([(g, "/".join(tokens)) for g, tokens in rules])
    chain_ids, member = chain_membership(config, frames, pool)
    assert chain_ids.tolist() == [10 * c + 7 for c in range(len(chains))]
    labels = pool.lookup(group_labels(pool, config.names, member, first_only)).tolist()
    for chain, label in zip(chains, labels):
        groups = [n for n in config.names if any(g == n and brute_member(chain, t) for g, t in rules)]
        expected = groups[:1] if first_only else groups
        assert label == ("/".join(expected) or "others")


@pytest.mark.parametrize("path", corpus_params())
@pytest.mark.parametrize("rule", ["device_memory_usage_summary", "device_memory_usage_detail:usage-mode=all"])
def test_corpus_runs(path, rule):
    before = fingerprint(path)
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain GPU memory usage data" in run.err
    else:
        assert run.code == 0, run.err
        assert run.out.splitlines()[0] in (SUMMARY, DETAIL)
    assert fingerprint(path) == before
