"""Property tests of the numpy kernel against brute force (empty, single, touching, nested,
identical and unsorted inputs are all within the generated space)."""

from __future__ import annotations

import statistics
import tracemalloc
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from asysstats.analysis.activity import row_index
from asysstats.compute import arrow, grouped, intervals
from asysstats.compute.distinct import DERIVED_BASE, FEW_SAMPLED, Coded, distinct, narrowed, sampled_distinct, tie_order
from asysstats.compute.keys import lookup_pair, row_order
from asysstats.core.strings import StringPool

SETTINGS = settings(max_examples=80, deadline=None)
times = st.integers(0, 60)
spans = st.lists(st.tuples(times, st.integers(0, 25)), max_size=25)


def arrays(pairs):
    s = np.array([p[0] for p in pairs], dtype=np.int64)
    return s, s + np.array([p[1] for p in pairs], dtype=np.int64)


def covered(pairs) -> set[int]:
    return {t for s, d in pairs for t in range(s, s + d)}


stat_values = st.one_of(st.integers(-50, 1000), st.integers(2 ** 60, 2 ** 60 + 1000))  # durations, timestamps


by_selection = st.sampled_from([0, 10 ** 9])  # ``SELECTION_ROWS``: every grouping by selection, or none


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), stat_values), max_size=40), st.booleans(), by_selection)
def test_grouped_stats_match_brute_force(rows, coded, selection_rows):
    keys = np.array([r[0] for r in rows], dtype=np.int64)
    values = np.array([r[1] for r in rows], dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouped, "SELECTION_ROWS", selection_rows)
        groups, stats = grouped.grouped_stats([Coded.of(keys) if coded else keys], values)
    expected = {}
    for k, v in rows:
        expected.setdefault(k, []).append(v)
    assume(all(abs(sum(vals)) < 2 ** 63 for vals in expected.values()))  # sums are int64 (8 timestamps need not fit)
    assert list(groups.keys[0]) == sorted(expected)
    for i, k in enumerate(groups.keys[0]):
        vals = expected[k]
        assert stats["count"][i] == len(vals)
        assert stats["sum"][i] == sum(vals)
        assert stats["min"][i] == min(vals) and stats["max"][i] == max(vals)
        assert np.isclose(stats["mean"][i], sum(vals) / len(vals))
        assert np.isclose(stats["median"][i], statistics.median(vals))
        assert np.isclose(stats["std"][i], statistics.pstdev(vals), atol=1e-6)
    assert values[groups.order].tolist() == [v for k in sorted(expected) for v in sorted(expected[k])]


@SETTINGS
@given(st.lists(st.integers(-2, 12), max_size=40))
def test_map_coded_maps_each_row_and_codes_distinct_values(ids):
    texts = {i: f"name{i % 5}" for i in range(13)}  # several ids hold one text
    pool = StringPool(lambda keys: [(k, texts[k]) for k in keys])
    coded = pool.map_coded(np.array(ids, dtype=np.int64), str.upper)
    assert [pool.text(i) if i >= 0 else None for i in coded.rows()] == \
        [texts[i].upper() if i >= 0 else None for i in ids]
    assert coded.values.tolist() == sorted(set(coded.values.tolist()))  # distinct, ascending
    assert sorted(set(coded.codes.tolist())) == list(range(len(coded.values)))  # every code used


id_values = st.one_of(st.integers(-3, 60), st.integers(DERIVED_BASE, DERIVED_BASE + 40),
                      st.integers(-2 ** 62, 2 ** 62))


@SETTINGS
@given(st.lists(id_values, max_size=60))
def test_distinct_equals_numpy_unique(values):
    ids = np.array(values, dtype=np.int64)
    uniq, index = distinct(ids)
    expected, inverse = np.unique(ids, return_inverse=True)
    assert uniq.tolist() == expected.tolist() and index.tolist() == inverse.reshape(-1).tolist()


@pytest.mark.parametrize("count", [2, 64, 65])
def test_distinct_of_few_scattered_values_sampled_or_sorted(count):
    """Few values far apart are looked up among a sample's; a value the sample misses, or
    too many values, and they are sorted: the same result either way."""
    rng = np.random.default_rng(count)
    ids = (rng.integers(0, count, 50_000) << 40) + 7
    ids[-1] = 1 << 60  # between the sampled rows
    uniq, index = distinct(ids)
    expected, inverse = np.unique(ids, return_inverse=True)
    assert uniq.tolist() == expected.tolist() and index.tolist() == inverse.tolist()
    uniq, index = distinct(ids[:-1])
    assert uniq.tolist() == expected[:-1].tolist() and np.array_equal(uniq[index], ids[:-1])


@pytest.mark.parametrize("rare", [1, 3, 40])
def test_sampled_distinct_finds_the_values_its_sample_missed(rare):
    """A thread of a few events among millions (5.7 M ranges, one thread of 1,434: the sample
    of 4,096 rows missed it and np.unique's hashing took 1.5 s): its values are found among the
    rows the sample missed, still without sorting the rows."""
    rng = np.random.default_rng(rare)
    ids = (rng.integers(0, 8, 200_000) << 40) + 7
    rows = rng.choice(len(ids), rare, replace=False)
    ids[rows] = (np.arange(rare) + 100) << 40  # rare values, each in one row
    found = sampled_distinct(ids)
    assert found is not None
    expected, inverse = np.unique(ids, return_inverse=True)
    assert found[0].tolist() == expected.tolist() and found[1].tolist() == inverse.tolist()
    ids[:FEW_SAMPLED + 1] = np.arange(FEW_SAMPLED + 1) << 41  # too many values: left to the sort
    assert sampled_distinct(ids) is None


@SETTINGS
@given(st.lists(id_values, max_size=40), st.lists(st.integers(0, 39), max_size=40))
def test_coded_take_keeps_the_values_of_the_rows_taken(values, picks):
    ids = np.array(values, dtype=np.int64)
    index = np.array([p for p in picks if p < len(ids)], dtype=np.int64)
    taken = Coded.of(ids).take(index)
    assert taken.rows().tolist() == ids[index].tolist()
    assert taken.values.tolist() == sorted(set(ids[index].tolist()))  # only the values the rows use


@SETTINGS
@given(st.lists(id_values, max_size=40), st.integers(0, 2 ** 32 - 1))
def test_coded_mapped_and_narrowed_keep_the_values_of_every_row(values, seed):
    ids = np.array(values, dtype=np.int64)
    coded = Coded.of(ids)
    replacement = np.random.default_rng(seed).integers(-1, 3, len(coded.values))  # several values may map to one
    mapped = coded.mapped(replacement)
    assert mapped.rows().tolist() == replacement[coded.codes].tolist()
    assert mapped.values.tolist() == sorted(set(replacement[coded.codes].tolist())) and mapped.codes.dtype == np.uint8
    assert mapped[np.arange(len(ids))[::-1]].tolist() == mapped.rows()[::-1].tolist()


def test_narrowed_codes_take_the_narrowest_type():
    codes = np.arange(3)
    assert [narrowed(codes, n).dtype for n in (256, 257, 65537, 1 << 31, (1 << 31) + 1)] == \
        [np.uint8, np.uint16, np.int32, np.int32, np.int64]


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 2), id_values), max_size=40),
       st.tuples(*[st.sampled_from(["array", "coded", "float"])] * 2,
                 st.sampled_from(["array", "coded"])))  # ids beyond 2 ** 53 are not floats
def test_dense_group_ids_number_key_tuples_in_order(rows, forms):
    columns = [np.array([r[i] for r in rows], dtype=np.int64) for i in range(3)]
    keys = [Coded.of(c) if form == "coded" else c.astype(np.float64) if form == "float" else c
            for c, form in zip(columns, forms)]
    gid, values = grouped.dense_group_ids(keys)
    tuples = sorted(set(rows))
    assert list(zip(*[v.tolist() for v in values])) == tuples
    assert gid.dtype == np.int64 and gid.tolist() == [tuples.index(r) for r in rows]
    assert [c.tolist() for c in columns] == [[r[i] for r in rows] for i in range(3)]  # keys left as they were


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-3, 3), st.integers(0, 2)), max_size=40))
def test_group_heads_are_the_first_rows_of_lexsort_groups(rows):
    # ties in both keys fall to the earliest row, as lexsort's stable order has it
    gid = np.array([r[0] for r in rows], dtype=np.int64)
    start, tie = (np.array([r[i] for r in rows], dtype=np.int64) for i in (1, 2))
    dense, _ = grouped.dense_group_ids([gid])
    count = len(np.unique(gid))
    order = np.lexsort((tie, start, dense))
    heads = order[np.r_[True, dense[order][1:] != dense[order][:-1]]] if len(rows) else order
    assert grouped.group_heads(dense, count, [start, tie]).tolist() == heads.tolist()


@pytest.mark.parametrize("few", [True, False])
def test_float_keys_are_grouped_as_np_unique_groups_them(monkeypatch, few):
    # NaNs are one value, -0.0 is 0.0; few distinct values are found by a binary search among them,
    # more than FEW_FLOATS by np.unique's sort (here forced to 2)
    monkeypatch.setattr(grouped, "FEW_FLOATS", 1 << 16 if few else 2)
    floats = np.array([0.5, np.nan, -0.0, np.inf, 0.0, np.nan, -np.inf, 0.5, 2.0, -3.25])
    ints = np.array([1, 1, 1, 2, 1, 1, 1, 1, 2, 2])
    gid, (float_values, int_values) = grouped.dense_group_ids([floats, ints])
    expected = np.unique(np.stack([np.unique(floats, return_inverse=True)[1], ints], axis=1), axis=0,
                         return_inverse=True)[1]
    assert gid.tolist() == expected.reshape(-1).tolist()
    assert float_values.tolist()[:5] == [-np.inf, -3.25, 0.0, 0.5, 2.0] and np.isnan(float_values[-1])
    assert int_values.tolist() == [1, 2, 1, 1, 2, 2, 1]
    assert grouped.key_coded(floats, narrow=True).codes.dtype == (np.uint8 if few else np.int64)


def test_grouping_by_six_keys_holds_few_arrays_of_a_value_per_row():
    rows = 400_000
    group = np.random.default_rng(3).integers(0, 2000, rows)
    keys = [group % 40 * 7, 1000 + group % 8, group // 250, 5000 + group % 16, group % 32, group % 2]
    values = group * 3 + 100
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        groups, stats = grouped.grouped_stats(keys, values)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert groups.count == len(np.unique(np.stack(keys, axis=1), axis=0)) and stats["count"].sum() == rows
    assert peak < 4 * 8 * rows  # a code per row of every key at once, in int64, was 8.5 such arrays


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-50, 10 ** 6)), min_size=1, max_size=60),
       st.integers(1, 9), by_selection)
def test_deviations_made_a_few_rows_at_a_time_give_the_stddev_of_each_group(rows, block, selection_rows):
    keys = np.array([r[0] for r in rows], dtype=np.int64)
    values = np.array([r[1] for r in rows], dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouped, "DEVIATION_ROWS", block)  # blocks that start and end inside groups
        patch.setattr(grouped, "SELECTION_ROWS", selection_rows)
        groups, stats = grouped.grouped_stats([keys], values)
    for i, key in enumerate(groups.keys[0].tolist()):
        assert np.isclose(stats["std"][i], statistics.pstdev([v for k, v in rows if k == key]), rtol=1e-12, atol=1e-6)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2)), max_size=20),
       st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=20))
def test_row_index_finds_the_first_matching_row(table, queries):
    table_keys = [np.array([t[i] for t in table], dtype=np.int64) for i in range(2)]
    query_keys = [np.array([q[i] for q in queries], dtype=np.int64) for i in range(2)]
    expected = [table.index(q) if q in table else -1 for q in queries]
    assert row_index(table_keys, query_keys).tolist() == expected


@SETTINGS
@given(st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 3), st.integers(-5, 40)), max_size=40), by_selection)
def test_grouped_stats_with_two_keys_keeps_the_groups_api(rows, selection_rows):
    a = np.array([r[0] for r in rows], dtype=np.int64)
    b = np.array([r[1] for r in rows], dtype=np.int64)
    values = np.array([r[2] for r in rows], dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouped, "SELECTION_ROWS", selection_rows)
        groups, stats = grouped.grouped_stats([a, b], values)
    reference = grouped.group_by([a, b], values)
    assert groups.label().tolist() == reference.label().tolist()
    assert "order" not in vars(groups) or not len(rows)  # the packed sort's labels need no permutation
    assert [k.tolist() for k in groups.keys] == [k.tolist() for k in reference.keys]
    assert groups.bounds.tolist() == reference.bounds.tolist()
    assert np.array_equal(values[groups.order], values[reference.order])
    assert groups.label().tolist() == reference.label().tolist()
    assert groups.first(values).tolist() == stats["min"].tolist()


@SETTINGS
@given(st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 3), st.integers(0, 6), st.integers(0, 3)), max_size=40),
       st.sampled_from([3, (1 << 16) - 1]))
def test_grouping_by_ids_keeps_row_order_as_lexsort_does(rows, few):
    """``group_by`` without values, and (id, start, end) order, equal a stable ``lexsort``: below
    and past the radix sort's ``FEW_GROUPS`` (patched to 3, so that both are drawn)."""
    a, b, start, span = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(4))
    end = start + span
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouped, "FEW_GROUPS", few)
        groups = grouped.group_by([a, b])
        gid, key_values = grouped.dense_group_ids([a, b])
        order = grouped.id_time_order(gid, len(key_values[0]), start, end)
    assert groups.order.tolist() == np.lexsort((b, a)).tolist()
    assert [k.tolist() for k in groups.keys] == [k.tolist() for k in key_values]
    assert groups.label().tolist() == gid.tolist()
    assert order.tolist() == np.lexsort((end, start, gid)).tolist()


def test_stddev_and_median_follow_the_reference_example():
    _, stats = grouped.grouped_stats([np.zeros(2, np.int64)], np.array([4562345, 3474616]))
    assert int(stats["std"][0]) == 543864 and int(stats["median"][0]) == 4018480


@SETTINGS
@given(st.lists(st.integers(0, 100), min_size=1, max_size=30), st.sampled_from([50, 90, 100]))
def test_percentile_is_nearest_rank(values, q):
    groups = grouped.group_by([np.zeros(len(values), np.int64)], np.array(values))
    got = grouped.percentile_sorted(groups, np.array(values), q)[0]
    ordered = sorted(values)
    rank = max(1, -(-len(values) * q // 100))
    assert got == ordered[rank - 1]


@SETTINGS
@given(spans)
def test_union_length_and_segments(pairs):
    s, e = arrays(pairs)
    us, ue = intervals.union(s, e)
    assert intervals.union_length(s, e) == len(covered(pairs))
    assert np.all(us[1:] > ue[:-1])  # disjoint, sorted, not touching
    assert {t for a, b in zip(us, ue) for t in range(a, b)} == covered(pairs)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), times, st.integers(0, 25)), max_size=30))
def test_covered_length_by_group(rows):
    g = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.int64)
    e = s + np.array([r[2] for r in rows], dtype=np.int64)
    got = intervals.covered_length_by_group(g, s, e, 3)
    for k in range(3):
        assert got[k] == len(covered([(r[1], r[2]) for r in rows if r[0] == k]))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0, 1, 7, 2 ** 40, 2 ** 61])), max_size=30))
def test_group_start_order_is_lexsort_by_group_then_start(rows):
    # starts spread past 2 ** 60 do not pack with the groups into an int64: then lexsort itself
    group = np.array([r[0] for r in rows], dtype=np.int64)
    start = np.array([r[1] for r in rows], dtype=np.int64)
    assert intervals.group_start_order(group, start).tolist() == np.lexsort((start, group)).tolist()


@SETTINGS
@given(spans, spans)
def test_segments_overlap(a, b):
    sa, ea = arrays(a)
    sb, eb = arrays(b)
    assert intervals.segments_overlap(*intervals.union(sa, ea), *intervals.union(sb, eb)) == len(covered(a) & covered(b))


@SETTINGS
@given(spans, spans)
def test_merged_segments_are_the_union_of_all_intervals(a, b):
    sa, ea = arrays(a)
    sb, eb = arrays(b)
    merged = intervals.merged_segments(intervals.union(sa, ea), intervals.union(sb, eb))
    whole = intervals.union(np.concatenate([sa, sb]), np.concatenate([ea, eb]))
    assert [m.tolist() for m in merged] == [w.tolist() for w in whole]


@SETTINGS
@given(spans, st.lists(times, min_size=2, max_size=8).map(sorted))
def test_busy_per_window(pairs, edges):
    s, e = arrays(pairs)
    got = intervals.busy_per_window(s, e, np.array(edges))
    cov = covered(pairs)
    assert list(got) == [len([t for t in cov if lo <= t < hi]) for lo, hi in zip(edges, edges[1:])]


@SETTINGS
@given(spans)
def test_gaps(pairs):
    s, e = arrays(pairs)
    gs, ge = intervals.gaps(s, e)
    cov = covered(pairs)
    idle = {t for a, b in zip(gs, ge) for t in range(a, b)}
    if pairs:  # a zero-length interval is an activity: it bounds the span and cuts the gap it lies in
        assert idle == set(range(min(s), max(e))) - cov
        assert not any(a < start < b for a, b in zip(gs, ge) for start, d in pairs if d == 0)
    else:
        assert not idle


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), times, st.integers(0, 25)), max_size=15),
       st.lists(st.tuples(st.integers(0, 2), times), max_size=20))
def test_enclosing_pairs(ranges, points):
    rg = np.array([r[0] for r in ranges], dtype=np.int64)
    rs = np.array([r[1] for r in ranges], dtype=np.int64)
    re_ = rs + np.array([r[2] for r in ranges], dtype=np.int64)
    pg = np.array([p[0] for p in points], dtype=np.int64)
    pt = np.array([p[1] for p in points], dtype=np.int64)
    r, p = intervals.enclosing_pairs(rg, rs, re_, pg, pt)
    expected = {(i, j) for i, (g, s, d) in enumerate(ranges) for j, (h, t) in enumerate(points)
                if g == h and s <= t < s + d}
    assert set(zip(r.tolist(), p.tolist())) == expected and len(r) == len(expected)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), times, st.integers(0, 25), st.integers(0, 3)), max_size=15),
       st.lists(st.tuples(st.integers(0, 2), times), max_size=20))
def test_innermost_and_outermost_enclosing(ranges, points):
    rg, rs, length, tie = (np.array([r[i] for r in ranges], dtype=np.int64) for i in range(4))
    pg, pt = (np.array([p[i] for p in points], dtype=np.int64) for i in range(2))
    inner = intervals.innermost_enclosing(rg, rs, rs + length, tie, pg, pt)
    outer = intervals.outermost_enclosing(rg, rs, rs + length, tie, pg, pt)
    for j, (h, t) in enumerate(points):
        holding = [(s, -d, k, i) for i, (g, s, d, k) in enumerate(ranges) if g == h and s <= t < s + d]
        assert outer[j] == (min(holding)[3] if holding else -1)  # earliest start, latest end, lowest tie, index
        if not holding:
            assert inner[j] == -1
        else:  # latest start, earliest end, highest tie (any of equal ranges)
            g, s, d, k = ranges[inner[j]]
            assert g == h and s <= t < s + d and (s, -d, k) == max(holding)[:3]


def test_innermost_enclosing_timeline():
    # thread 7:  A [0, 100)  =========================
    #              B [10, 20)  ===      C [40, 90) ============
    #                                     D [40, 50) ===   E [60, 70) ===
    # thread 8:  F [0, 30)  ========
    # points (thread, time): 5 in A; 15 in B; 30 in A (B ended); 45 in D; 55 in C (D ended);
    # 65 in E; 80 in C; 99 in A; 100 in none; thread 8 at 29 in F; thread 9 at 5 in none
    rg = np.array([7, 7, 7, 7, 7, 8])
    rs = np.array([0, 10, 40, 40, 60, 0])
    re_ = np.array([100, 20, 90, 50, 70, 30])
    pg = np.array([7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 9])
    pt = np.array([5, 15, 30, 45, 55, 65, 80, 99, 100, 29, 5])
    got = intervals.innermost_enclosing(rg, rs, re_, np.arange(6), pg, pt)
    assert got.tolist() == [0, 1, 0, 3, 2, 4, 2, 0, -1, 5, -1]


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 1), times, st.integers(0, 10)), max_size=20))
def test_overlap_components(rows):
    g = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.int64)
    e = s + np.array([r[2] for r in rows], dtype=np.int64)
    labels = intervals.overlap_components(g, s, e)
    # brute force: union-find over pairs that overlap in the chained sense (sorted sweep)
    parent = list(range(len(rows)))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    order = sorted(range(len(rows)), key=lambda i: (g[i], s[i], e[i]))
    reach, prev = None, None
    for i in order:
        if prev is not None and g[i] == g[prev] and s[i] < reach:
            parent[find(i)] = find(prev)
            reach = max(reach, e[i])
        else:
            reach = e[i]
        prev = i
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (labels[i] == labels[j]) == (find(i) == find(j))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-10, 10)), max_size=40), st.sampled_from([1, 2 ** 61]))
def test_running_max_by_segment_restarts_where_the_segment_changes(rows, scale):
    """Small values take the lift by span; values spread by 2^61 overflow it and take ranks."""
    segment = np.array([r[0] for r in rows], dtype=np.int64)
    values = np.array([r[1] * scale // 10 for r in rows], dtype=np.int64)
    expected, reach = [], None
    for i, value in enumerate(values.tolist()):
        reach = value if i == 0 or segment[i] != segment[i - 1] else max(reach, value)
        expected.append(reach)
    assert intervals.running_max_by_segment(segment, values).tolist() == expected


@SETTINGS
@given(st.lists(st.integers(-5, 30), max_size=40), st.lists(st.integers(-5, 30), max_size=40))
def test_set_difference_equals_numpy_setdiff1d(values, other):
    a, b = np.array(values, dtype=np.int64), np.array(other, dtype=np.int64)
    assert intervals.set_difference(a, b).tolist() == np.setdiff1d(a, b).tolist()


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-2, 2), id_values), max_size=60))
def test_tie_order_is_the_lexsort_of_every_key(rows):
    primary, second, third = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
    asked = []
    order = tie_order(primary, lambda at: asked.append(len(at)) or (third[at], second[at]))
    assert order.tolist() == np.lexsort((third, second, primary)).tolist()
    counts = np.unique(primary, return_counts=True)[1]
    tied = int(counts[counts > 1].sum())
    assert asked == ([tied] if tied else [])  # the other keys are computed for the tied rows alone


pairs = st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 40)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(keys=pairs, wanted=pairs, spread=st.sampled_from([1, 1 << 24]))
def test_lookup_pair_is_the_first_matching_row(keys, wanted, spread):
    """Both paths (a direct table for dense ids; the sort for ids ``spread`` apart or negative)
    give the first row holding each wanted pair, -1 when none."""
    high = np.array([h for h, _ in keys], np.int64)
    low = np.array([w * spread if w >= 0 else w for _, w in keys], np.int64)
    wanted_high = np.array([h for h, _ in wanted], np.int64)
    wanted_low = np.array([w * spread if w >= 0 else w for _, w in wanted], np.int64)
    pairs_ = list(zip(high.tolist(), low.tolist()))
    expected = [pairs_.index(p) if p in pairs_ else -1 for p in zip(wanted_high.tolist(), wanted_low.tolist())]
    assert lookup_pair(high, low, wanted_high, wanted_low).tolist() == expected


def test_lookup_pair_golden():
    # process 7 calls with correlation ids 1, 2, 2 (a repeat), process 9 one call with id 2
    high, low = np.array([7, 7, 7, 9]), np.array([1, 2, 2, 2])
    got = lookup_pair(high, low, np.array([7, 9, 9, 8, 7, 7]), np.array([2, 2, 1, 2, 0, 99]))
    assert got.tolist() == [1, 3, -1, -1, -1, -1]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(times, st.integers(0, 1 << 61)), st.integers(1, 25)),
                max_size=30))
def test_open_counts_match_brute_force(rows):
    """Times within the packed bits, and past them (ranked), give the count at every time a step is."""
    group, start, length = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
    time, count, of = intervals.open_counts(group, 4, start, start + length)
    expected = [(g, t, sum(1 for h, s, d in rows if h == g and s <= t < s + d))
                for g in range(4) for t in sorted({s for h, s, _ in rows if h == g} | {s + d for h, s, d in rows if h == g})]
    assert list(zip(of.tolist(), time.tolist(), count.tolist())) == expected


def test_open_counts_timeline():
    # group 0:  [0, 10)  ==========          group 1:  [5, 6)  =
    #           [2, 10)    ========                    [6, 8)   ==
    #           [10, 12)           ==
    # group 0 counts: 1 from 0, 2 from 2, 1 from 10 (two ends, one start), 0 from 12;
    # group 1: 1 from 5, 1 from 6 (an end and a start), 0 from 8
    time, count, group = intervals.open_counts(np.array([0, 0, 0, 1, 1]), 2, np.array([0, 2, 10, 5, 6]),
                                               np.array([10, 10, 12, 6, 8]))
    assert group.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert time.tolist() == [0, 2, 10, 12, 5, 6, 8]
    assert count.tolist() == [1, 2, 1, 0, 1, 1, 0]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12).flatmap(lambda width: st.lists(
    st.lists(st.one_of(st.integers(-3, 3), st.integers(-2 ** 62, 2 ** 62)), min_size=width, max_size=width),
    min_size=1, max_size=60)))
def test_row_order_is_the_lexsort_order(rows):
    """Dense ranks packed into one int64 (few distinct values per key) or ``lexsort`` (a dozen
    keys of many values overflow 62 bits): the order of ``np.lexsort``, ties in row order."""
    keys = [np.array(column, np.int64) for column in zip(*rows)]
    assert row_order(keys).tolist() == np.lexsort(keys[::-1]).tolist()


def test_row_order_golden():
    # rows (group, -total): ties of group 1 broken by total, equal rows keep their order
    group, total = np.array([1, 0, 1, 1, 0]), np.array([-5, -2, -9, -5, -3])
    assert row_order([group, total]).tolist() == [4, 1, 2, 0, 3]


@SETTINGS
@given(st.lists(id_values, max_size=60))
def test_group_order_is_the_stable_sort_by_group(groups):
    values = np.array(groups, np.int64)
    assert intervals.group_order(values).tolist() == np.argsort(values, kind="stable").tolist()


def test_group_order_of_many_groups_sorts_the_values():
    # 70,000 distinct groups (more than 16-bit codes hold), each twice: ties keep row order
    values = np.tile(np.arange(70_000, 0, -1) * 3, 2)
    assert np.array_equal(intervals.group_order(values), np.argsort(values, kind="stable"))


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.text(alphabet="ab, =01", max_size=12)), max_size=40),
       st.integers(1, 8), st.integers(0, 3), st.booleans())
def test_on_threads_is_the_function_over_the_rows_in_order(values, thread_rows, offset, pair):
    """Slices of the rows on threads give what one call gives, for a function of one array or of a
    tuple of them, nulls and an offset array included; a slice a thread when there are rows enough
    (``THREAD_ROWS`` made small to have several)."""
    texts = pa.array(["lead"] * offset + values, pa.string()).slice(offset)
    calls = []

    def strip(part: pa.Array) -> pa.Array | tuple[pa.Array, ...]:
        calls.append(len(part))
        stripped = pc.replace_substring_regex(part, pattern=r", a = \d+", replacement="")
        return (stripped, pc.utf8_length(part)) if pair else stripped

    with mock.patch.object(arrow, "THREAD_ROWS", thread_rows):
        got = arrow.on_threads(strip, texts)
    calls_made = len(calls)
    expected = strip(texts)
    assert [a.to_pylist() for a in got] == [a.to_pylist() for a in expected] if pair \
        else got.to_pylist() == expected.to_pylist()
    assert sum(calls[:calls_made]) == len(values)
    assert calls_made == max(1, min(pa.cpu_count(), len(values) // thread_rows))
