"""Bulk recognition of PyTorch texts against the per-text parser, merge keys and recognition."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.analysis.operators.merge import merge_key
from asysstats.analysis.operators.parsers import AUTOGRAD_SPLIT, SHAPE_FIELDS, parse_builtin, parse_pytorch
from asysstats.analysis.operators.recognise import custom_rules, recognise_ranges, recognise_text, type_filter
from asysstats.analysis.operators.torch_texts import torch_fields, torch_keys, torch_mask, without_run_ids
from asysstats.compute.arrow import from_texts
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable

heads = st.sampled_from(["aten::mm", "_C::rms_norm", "_moe_C::topk", "my::op", "my::op.out", "x::", "::y",
                         "aten::mm x", "aten:mm", "[acBLAS] --format=Gemm", "D_MoE,M_1", "aten::é", "1a::b", ""])
keys = st.sampled_from(["seq", "op_id", "sizes", "input_op_ids", "alpha", "k2", "é", "a b"])
values = st.text(st.sampled_from(list("0a[], =\t\n\x1c\x1f é")), max_size=8)
fields = st.lists(st.tuples(keys, values, st.sampled_from([" = ", "=", " =  ", ", "])), max_size=4)
texts = st.one_of(st.builds(lambda h, f: h + "".join(f", {k}{eq}{v}" for k, v, eq in f), heads, fields),
                  st.text(max_size=20))


def reference(text: str) -> bool:
    parsed = parse_builtin(text, text, None)
    return text.isascii() and parsed is not None and parsed.family == "pytorch"


@settings(max_examples=400, deadline=None)
@given(st.lists(texts, max_size=12))
def test_torch_texts_match_the_parser(items: list[str]) -> None:
    mask = torch_mask(from_texts(items))
    assert mask.tolist() == [reference(t) for t in items]
    chosen = [t for t, m in zip(items, mask) if m]
    for keep_all in (False, True):
        options = AnalysisOptions(no_merge_pytorch_parameter=keep_all)
        expected = [merge_key(parse_builtin(t, t, None), options) for t in chosen]
        assert torch_keys(from_texts(chosen), keep_all).to_pylist() == expected
    wanted = ("sizes", "seq", "alpha")
    got = [column.to_pylist() for column in torch_fields(from_texts(chosen), wanted)]
    params = [parse_pytorch(t).params for t in chosen]
    assert got[0] == [p["op"] for p in params]
    fields_of = [dict(piece.partition(" = ")[::2] for piece in AUTOGRAD_SPLIT.split(t)[1:]) for t in chosen]
    for key, column in zip(wanted, got[1:]):
        assert column == [f[key].strip() if key in f else None for f in fields_of]


run_id_values = st.sampled_from(["12", "-3", "12.5", "1a", "[]", "[(1, 0), (2, 0)]", "[[1]]", "[a, b = c]", "[1] x",
                                 "", "7, x"])
torch_texts = st.builds(lambda head, items: head + "".join(f", {k} = {v}" for k, v in items),
                        st.sampled_from(["aten::mm", "aten::add_"]),
                        st.lists(st.tuples(st.sampled_from(["seq", "op_id", "input_op_ids", "sizes", "alpha"]),
                                           run_id_values), max_size=5))


@settings(max_examples=300, deadline=None)
@given(st.lists(torch_texts, max_size=8))
def test_texts_without_run_ids_keep_their_keys_and_shapes(items: list[str]) -> None:
    """A text and its distinct text without run ids have the same merge key and the same shapes."""
    chosen = [t for t, m in zip(items, torch_mask(from_texts(items))) if m]
    distinct_texts, slots = without_run_ids(from_texts(chosen))
    assert len(distinct_texts) == len(set(distinct_texts.to_pylist()))
    assert torch_keys(distinct_texts, False).take(slots).to_pylist() == torch_keys(from_texts(chosen), False).to_pylist()
    shapes = [{k: parse_pytorch(t).params[k] for k in ("op",) + SHAPE_FIELDS} for t in chosen]
    assert [{k: parse_pytorch(distinct_texts[i].as_py()).params[k] for k in ("op",) + SHAPE_FIELDS}
            for i in slots] == shapes


def test_run_ids_go_only_as_whole_fields() -> None:
    texts = ["aten::mm, seq = 1, op_id = 2, sizes = [[2]], input_op_ids = [(1, 0)]", "aten::mm, sizes = [[2]]",
             "aten::mm, seq = 1.5, sizes = [[2]]", "aten::mm, input_op_ids = [a, b = c]"]
    distinct_texts, slots = without_run_ids(from_texts(texts))
    assert [distinct_texts[i].as_py() for i in slots] == ["aten::mm, sizes = [[2]]", "aten::mm, sizes = [[2]]",
                                                         "aten::mm, seq = 1.5, sizes = [[2]]",
                                                         "aten::mm, input_op_ids = [a, b = c]"]


def test_fields_keep_their_commas_and_lose_outer_spaces() -> None:
    text = "aten::mm, seq = 1, sizes =  [[2, 3], [3]] \t, op_id = 2, alpha = a = b"
    assert torch_mask(from_texts([text])).tolist() == [True]
    assert torch_keys(from_texts([text]), False).to_pylist() == ["PyTorch|PyTorch|op=aten::mm,sizes=[[2, 3], [3]],"
                                                                 "alpha=a = b"]
    op, sizes, alpha, seq, strides = (c.to_pylist() for c in torch_fields(from_texts([text, "aten::mm"]),
                                                                          ("sizes", "alpha", "seq", "strides")))
    assert (op, sizes, alpha, seq, strides) == (["aten::mm"] * 2, ["[[2, 3], [3]]", None], ["a = b", None],
                                                ["1", None], [None, None])


def test_bulk_recognition_does_not_import_pandas() -> None:
    """pa.scalar (a Python value given to a compute function) would import pandas."""
    code = ("import sys\nfrom asysstats.compute.arrow import from_texts\n"
            "from asysstats.analysis.operators.torch_texts import torch_fields, torch_keys, torch_mask\n"
            "texts = from_texts(['aten::mm, seq = 1', 'x'])\n"
            "torch_mask(texts), torch_keys(texts, False), torch_fields(texts, ('seq',))\n"
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


rules = st.sampled_from([(("Custom", "kernel:zz"),), (("Custom", "hgtx:mm"),),
                         (("Custom", "kernel:mm"), ("Other", "hgtx:NCCL"))])
ops = st.sampled_from([None, ("PyTorch",), ("GEMM", "Custom")])
domains = st.sampled_from([None, "NCCL", "acblas"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(texts | st.sampled_from(["[acBLAS] --format=Gemm,t,n,1,2,3", "AllReduce, p:0"]), domains),
                max_size=10), rules, ops)
def test_recognise_ranges_routes_texts_like_the_per_text_recognition(items, config, op) -> None:
    """Bulk or one by one, each range's :class:`Parsed` is what ``recognise_text`` gives it."""
    pool = StringPool()
    custom = custom_rules(config)
    types = type_filter(op, custom)
    domain_ids = np.array([pool.intern([d])[0] if d else -1 for _, d in items], dtype=np.int64)
    names = np.array([pool.intern([f"{d}:{t}" if d else t])[0] for t, d in items], dtype=np.int64)
    ranges = EventTable({"name": names, "domain": domain_ids})
    index, parsed = recognise_ranges(pool, ranges, custom, types)
    for row in range(len(items)):
        canonical = pool.text(names[row])
        domain = items[int(np.flatnonzero(names == names[row])[0])][1]  # a name's first range gives its domain
        bare = canonical[len(domain) + 1:] if domain and canonical.startswith(domain + ":") else canonical
        expected = recognise_text(canonical, bare, domain, custom, types)
        assert (parsed[index[row]] if index[row] >= 0 else None) == expected
