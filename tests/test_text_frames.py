"""Per-row text as an Arrow string array in a frame, and range stacks built that way."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hgtx_core import PUSHPOP, gtid, program, stack_program

from asysstats.analysis.declarations import Rule
from asysstats.analysis.hgtx import all_ranges, range_stacks
from asysstats.analysis.inputs import Inputs
from asysstats.compute.arrow import from_texts
from asysstats.core.result import TEXT, Column, Result
from asysstats.core.strings import StringPool
from asysstats.reading.sqlite import SqliteReport
from asysstats.synth.writer import ReportWriter
from asysstats.writing.writers import to_column, to_csv, to_json, to_lines

texts = st.lists(st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12),
                 max_size=30)


@settings(max_examples=20, deadline=None)
@given(texts)
def test_writers_print_a_text_column_like_python_strings(values):
    rule = Rule("demo", "Demo", "A demo rule.", (Column("Text", TEXT, "text"),), lambda i, o: {}, {"hgtx": ()})
    as_column, as_objects = (Result(rule.name, rule.title, rule.share, rule.columns, {"Text": v}, StringPool())
                             for v in (from_texts(values), np.array(values, dtype=object)))
    for writer in (to_csv, to_column, to_json, to_lines):
        assert writer(as_column) == writer(as_objects)


@settings(max_examples=30, deadline=None)
@given(st.lists(program, min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_range_stacks_follow_the_parents(programs, rnd):
    rows = [(thread, s, e) for thread, ops in enumerate(programs) for s, e in stack_program(ops)[0]]
    if not rows:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.asysrep"
        w = ReportWriter(path)
        w.add("hgtx", start=[r[1] for r in rows], end=[r[2] for r in rows], eventType=PUSHPOP, text="r",
              globalTid=[gtid(1, r[0]) for r in rows], domainId=0)
        w.close()
        report = SqliteReport(path, cache=False)
        ranges = all_ranges(Inputs(report))
        parent = dict(zip(ranges["rangeId"].tolist(), ranges["parentId"].tolist()))
        want = []
        for range_id in ranges["rangeId"].tolist():
            stack = [range_id]
            while stack[0] in parent and parent[stack[0]] in parent:
                stack.insert(0, parent[stack[0]])
            want.append("".join(f":{i}" for i in stack))
        pick = [rnd.randrange(ranges.rows) for _ in range(rnd.randrange(ranges.rows + 1))]
        stacks = range_stacks(Inputs(report), ranges["rangeId"][np.array(pick, dtype=np.int64)])
        assert stacks[:].to_pylist() == np.asarray(stacks).tolist() == [want[i] for i in pick]
        assert stacks[1:3].to_pylist() == [want[i] for i in pick[1:3]]  # a slice, as the writers read it
        assert stacks.csv_cells(slice(1, 3)).to_pylist() == [f'"{want[i]}"' for i in pick[1:3]]  # CSV cells
