"""Comparison rules against brute-force pure-Python references on random pairs of small reports."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.synth.writer import ReportWriter

from conftest import run_cli

NAMES = ("alpha", "beta", "gamma", "delta")
counter = itertools.count()

activity = st.tuples(st.sampled_from(NAMES), st.integers(0, 2), st.integers(0, 500), st.integers(0, 60))
report = st.lists(activity, max_size=12)


def write(tmp_path, events) -> str:
    path = tmp_path / f"r{next(counter)}.asysrep"
    writer = ReportWriter(path)
    if events:
        names, device, start, length = zip(*events)
        ids = writer.strings(names)
        writer.add("kernels", start=list(start), end=[s + n for s, n in zip(start, length)], deviceId=list(device),
                   demangledName=ids, shortName=ids, mangledName=ids, globalPid=1 << 24)
    else:
        writer.create("kernels")
    writer.close()
    return str(path)


def rounded(value: float) -> float:
    """One decimal, half away from zero (docs/decisions.md D2)."""
    import math

    return math.copysign(math.floor(abs(value) * 10 + 0.5 + 1e-9) / 10, value)


def rows(rule: str, base: str, target: str) -> list[dict]:
    run = run_cli("stats", "-r", rule, "--format", "json", "--no-cache", base, target)
    assert run.code == 0, run.err
    return json.loads(run.out)


def kernel_table(events) -> dict[str, tuple[int, int]]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, _, _, length in events:
        totals[name][0] += length
        totals[name][1] += 1
    return {name: (total, count) for name, (total, count) in totals.items()}


@settings(max_examples=40, deadline=None)
@given(report, report)
def test_kernel_summary_compare_matches_brute_force(tmp_path_factory, base_events, target_events):
    tmp = tmp_path_factory.mktemp("props")
    base, target = kernel_table(base_events), kernel_table(target_events)
    grand = [sum(t for t, _ in table.values()) for table in (base, target)]

    def percent(table, grand_total, name):
        return table[name][0] * 100.0 / grand_total if name in table and grand_total else None

    expected = []
    for name in base.keys() | target.keys():
        b, t = base.get(name), target.get(name)
        ratio = rounded(t[0] / b[0]) if b and t and b[0] else None
        shares = [percent(base, grand[0], name), percent(target, grand[1], name)]
        larger = max((s for s in shares if s is not None), default=float("-inf"))
        expected.append((-larger, name, [b[1] if b else None, t[1] if t else None],
                         [b[0] if b else None, t[0] if t else None], ratio))
    expected.sort()
    got = rows("ppu_kernel_summary_compare", write(tmp, base_events), write(tmp, target_events))
    assert [(r["Base Kernel"] or r["Target Kernel"], r["Instances"], r["Total (ns)"], r["Total Ratio"]) for r in got] \
        == [(name, count, total, ratio) for _, name, count, total, ratio in expected]


def busy(spans: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals, point by point."""
    return len({t for s, e in spans for t in range(s, e)})


@settings(max_examples=40, deadline=None)
@given(report, report)
def test_time_util_compare_matches_brute_force(tmp_path_factory, base_events, target_events):
    tmp = tmp_path_factory.mktemp("props")

    def per_device(events):
        spans = defaultdict(list)
        for _, device, start, length in events:
            if length > 0:
                spans[device].append((start, start + length))
        return {d: (busy(s), max(e for _, e in s) - min(b for b, _ in s)) for d, s in spans.items()}

    base, target = per_device(base_events), per_device(target_events)
    got = rows("ppu_time_util_compare", write(tmp, base_events), write(tmp, target_events))
    # devices pair by id when the reports have the same ids, else by order of id (issue 27)
    ids = sorted(base), sorted(target)
    count = max(map(len, ids))
    expected = list(zip(*(device + [None] * (count - len(device)) for device in ids)))
    assert sorted(((r["Base Device ID"], r["Target Device ID"]) for r in got), key=str) == sorted(expected, key=str)
    for r in got:
        for side, table in zip(range(2), (base, target)):
            active, span = table.get(r[("Base Device ID", "Target Device ID")[side]], (None, None))
            assert r["PPU Active Time (ns)"][side] == active and r["Duration (ns)"][side] == span
            assert r["In-Use (%)"][side] == (rounded(active * 100.0 / span) if active is not None else None)
    larger = [max(v for v in r["In-Use (%)"] if v is not None) for r in got]
    assert larger == sorted(larger, reverse=True)


side_rows = st.lists(st.tuples(st.sampled_from(("a", "b", "c", None)), st.integers(0, 5)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(side_rows, side_rows, st.one_of(st.none(), st.integers(1, 4)), st.booleans())
def test_matching_is_a_full_outer_join(base_rows, target_rows, top, matched_only):
    """Keys may repeat: the k-th row of a key pairs with the k-th of the other side."""
    import numpy as np

    from asysstats.analysis.comparison import Selection, match_rows, ordered, selected

    def frame(rows):
        return {"name": np.array([r[0] for r in rows], dtype=object),
                "value": np.array([r[1] for r in rows], dtype=np.int64)}

    frames = frame(base_rows), frame(target_rows)
    pairing = match_rows([frames[0]["name"]], [frames[1]["name"]])
    expected = []
    used = set()
    for i, (name, _) in enumerate(base_rows):
        k = sum(1 for n, _ in base_rows[:i] if n == name)
        hits = [j for j, (n, _) in enumerate(target_rows) if n == name]
        expected.append((i, hits[k] if k < len(hits) else -1))
        used.add(expected[-1][1])
    expected += [(-1, j) for j in range(len(target_rows)) if j not in used]
    assert list(zip(pairing.base.tolist(), pairing.target.tolist())) == expected

    chosen = selected(pairing, Selection(top=top, matched_only=matched_only))
    keep = [(b, t) for b, t in expected if (top is None or 0 <= b < top or 0 <= t < top)
            and (not matched_only or (b >= 0 and t >= 0))]
    assert sorted(zip(chosen.base.tolist(), chosen.target.tolist())) == sorted(keep)

    result = ordered(chosen, frames, "value", ("name",), None)
    larger = [max(frames[0]["value"][b] if b >= 0 else -1, frames[1]["value"][t] if t >= 0 else -1)
              for b, t in zip(result.base.tolist(), result.target.tolist())]
    assert larger == sorted(larger, reverse=True)
