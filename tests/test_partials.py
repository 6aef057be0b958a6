"""The partials kernel (asysstats.compute.partials): statistics computed in parts and merged
equal the statistics of the concatenation; medians through buckets are exact (even counts,
empty parts and buckets included); against brute force and the single-process kernel."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.compute import partials as p
from asysstats.compute.grouped import grouped_stats


def in_parts(keys: np.ndarray, values: np.ndarray, part: np.ndarray, parts: int, buckets: int):
    """The reduced path on integer keys: partials per part, merged; medians per bucket, joined."""
    heads, pieces = [], [[] for _ in range(buckets)]
    for k in range(parts):
        mine = part == k
        group_keys, partial, group = p.partials([keys[mine]], values[mine])
        heads.append((group_keys[0], partial))
        bucket = (p.group_hash(group_keys) % np.uint64(buckets)).astype(np.int64)
        for i, (groups, local, vals) in enumerate(p.split_buckets(group, bucket, values[mine], buckets)):
            pieces[i].append((group_keys[0][groups], local, vals))
    stacked_keys = np.concatenate([h[0] for h in heads])
    merged_keys, stats, merged_group = p.merge([stacked_keys],
                                               {f: np.concatenate([h[1][f] for h in heads]) for f in p.PARTIAL_FIELDS})
    assert merged_keys[0][merged_group].tolist() == stacked_keys.tolist()
    stats["median"] = np.full(len(merged_keys[0]), np.nan)
    for bucket in pieces:
        bucket_keys = np.concatenate([g for g, _, _ in bucket])
        offsets = np.cumsum([0] + [len(g) for g, _, _ in bucket[:-1]])
        rows = np.concatenate([local + o for (_, local, _), o in zip(bucket, offsets)])
        first, median = p.medians([bucket_keys], rows, np.concatenate([v for _, _, v in bucket]))
        assert np.isnan(stats["median"][np.searchsorted(merged_keys[0], bucket_keys[first])]).all()  # one bucket
        stats["median"][np.searchsorted(merged_keys[0], bucket_keys[first])] = median
    assert not np.isnan(stats["median"]).any()
    return merged_keys[0], stats


rows = st.lists(st.tuples(st.integers(-1, 4), st.integers(0, 10**12), st.integers(0, 3)), max_size=60)


@settings(max_examples=120, deadline=None)
@given(rows=rows, buckets=st.integers(1, 3))
def test_parts_match_brute_force(rows, buckets):
    """Every statistic, including medians of even counts and empty parts or buckets."""
    keys = np.array([r[0] for r in rows], np.int64)
    values = np.array([r[1] for r in rows], np.int64)
    part = np.array([r[2] for r in rows], np.int64)
    got_keys, stats = in_parts(keys, values, part, 4, buckets)
    expected: dict[int, list[int]] = {}
    for key, value, _ in rows:
        expected.setdefault(key, []).append(value)
    assert got_keys.tolist() == sorted(expected)
    for i, key in enumerate(got_keys.tolist()):
        vals = expected[key]
        assert (stats["count"][i], stats["sum"][i], stats["min"][i], stats["max"][i]) == \
            (len(vals), sum(vals), min(vals), max(vals))
        assert stats["median"][i] == statistics.median(vals)
        assert np.isclose(stats["mean"][i], sum(vals) / len(vals), rtol=1e-12)
        assert np.isclose(stats["std"][i], statistics.pstdev(vals), rtol=1e-9, atol=1e-3)


def test_parts_equal_one_process_on_nanosecond_durations():
    """Realistic durations (1 µs .. 1 s, 500 groups, 8 parts): the printed (truncated)
    statistics equal those of the single-process kernel over the concatenation."""
    rng = np.random.default_rng(7)
    n = 200_000
    keys = rng.integers(0, 500, n)
    values = np.exp(rng.normal(np.log(1e3) + keys % 13, 1.5, n)).astype(np.int64).clip(1, 10**9)
    got_keys, got = in_parts(keys, values, rng.integers(0, 8, n), 8, 2)
    groups, expected = grouped_stats([keys], values)
    assert got_keys.tolist() == groups.keys[0].tolist()
    for name in ("count", "sum", "min", "max", "mean", "median", "std"):
        assert np.trunc(got[name]).tolist() == np.trunc(expected[name]).tolist(), name


def test_chan_keeps_the_spread_that_a_sum_of_squares_loses():
    """Around 10**9 ns a float64 sum of squares cancels the variance; Chan's merge does not."""
    values = 10**9 + np.arange(4, dtype=np.int64)
    _, stats = in_parts(np.zeros(4, np.int64), values, np.arange(4), 4, 1)
    assert int(stats["std"][0]) == 1  # sqrt(1.25)
    squares = float((values.astype(np.float64) ** 2).sum()) / 4 - (values.sum() / 4) ** 2
    assert int(np.sqrt(max(squares, 0.0))) != 1


def test_empty_parts_and_groups():
    keys, stats, group = p.merge([np.empty(0, np.int64)], {f: np.empty(0, np.int64) for f in p.PARTIAL_FIELDS})
    assert len(keys[0]) == len(group) == 0 and all(len(v) == 0 for v in stats.values())
    group_keys, partial, group = p.partials([np.empty(0, np.int64)], np.empty(0, np.int64))
    assert len(group_keys[0]) == len(group) == 0 and partial["count"].tolist() == []
    assert [len(v) for _, _, v in p.split_buckets(group, np.empty(0, np.int64), np.empty(0, np.int64), 3)] == [0] * 3
    assert len(p.medians([np.empty(0, np.int64)], np.empty(0, np.int64), np.empty(0, np.int64))[1]) == 0
    got_keys, stats = in_parts(np.array([5, 5]), np.array([10, 30]), np.array([2, 2]), 4, 3)
    assert got_keys.tolist() == [5] and stats["median"].tolist() == [20.0] and stats["std"].tolist() == [10.0]


def test_hashes_are_the_same_in_every_process():
    """Buckets must agree across workers: no per-process salt (Python's hash of str has one)."""
    code = ("import numpy as np; from asysstats.compute.partials import group_hash, string_hash;"
            "print(group_hash([string_hash(['gemm', 'nccl']), np.array([3, -1])]).tolist())")
    env = {**os.environ, "PYTHONPATH": str(Path(p.__file__).parents[2])}  # this tree's asysstats
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
            for _ in range(2)}
    here = p.group_hash([p.string_hash(["gemm", "nccl"]), np.array([3, -1])]).tolist()
    assert runs == {f"{here}\n"} and len(set(here)) == 2
