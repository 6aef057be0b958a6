"""PyTorch autograd range texts recognised in bulk with Arrow's string kernels.

:func:`asysstats.analysis.operators.parsers.parse_pytorch` splits a text on ``, `` before
``word = `` (a look-ahead, which RE2 lacks); here every ``, `` that precedes ``word = `` is
found as a cut whose next piece starts with ``word = ``. Only ASCII texts are taken
(Python's ``\\w`` and ``str.strip`` are wider than RE2's and Arrow's on other text); the
others are left to the per-text parsers. The results equal those of the per-text parser
and :func:`asysstats.analysis.operators.merge.merge_key`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.analysis.operators.catalog import AUTOGRAD_FIELDS, PYTORCH, TORCH_NAMESPACES
from asysstats.analysis.operators.parsers import TORCH_MINOR
from asysstats.compute.arrow import from_numpy, from_texts, on_threads, text, to_numpy, valid_mask

SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "  # what str.strip() removes from ASCII text
HEAD = r"^(?P<ns>[A-Za-z_]\w*)::[A-Za-z_][\w.]*(?:, \w+ = |$)"  # catalog.TORCH_NAME, the whole first piece
# A run of whole per-run id fields (parsers.TORCH_MINOR): a number, or a list without "=" (so no field starts in
# it), up to the next field or the end; the next field's start is kept (group 1).
RUN_ID_FIELDS = r"(?:, (?:seq|op_id) = -?\d+|, input_op_ids = \[[^\]=]*\])+(, \w+ = |$)"


def torch_mask(texts: pa.Array) -> np.ndarray:
    """Per text (range names without a domain): whether it is an ASCII PyTorch operator text.
    Every ``, key = `` in a text is a split point, so no marking is needed here."""
    if len(texts) == 0:
        return np.zeros(0, dtype=bool)
    namespaces, fields = from_texts(sorted(TORCH_NAMESPACES)), "|".join(AUTOGRAD_FIELDS)

    def taken(part: pa.Array) -> pa.Array:
        head = pc.struct_field(pc.extract_regex(part, pattern=HEAD), [0])
        known = pc.or_kleene(pc.or_kleene(pc.is_in(head, value_set=namespaces), pc.ends_with(head, pattern="_C")),
                             pc.match_substring_regex(part, pattern=f", (?:{fields}) = "))
        return pc.and_kleene(pc.and_kleene(pc.string_is_ascii(part), pc.is_valid(head)), known)

    return is_true(on_threads(taken, texts))


def split_fields(texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The pieces of PyTorch operator texts, first the operator name, then each ``key = value``
    field, with the index of the text of each.

    A text is cut at every ``, `` (no two overlap); a piece that starts with ``key = ``
    starts a field (the cut before it is a split point), the others continue the field
    before them, and each text's first piece is its operator name."""
    pieces = pc.split_pattern(texts, pattern=", ")
    flat = pieces.flatten()
    offsets = to_numpy(pieces.offsets, np.dtype(np.int32)).astype(np.int64)
    start = is_true(pc.match_substring(flat, pattern=" = "))  # the regex runs on these alone
    candidates = np.flatnonzero(start)
    start[candidates] = is_true(pc.match_substring_regex(flat.take(from_numpy(candidates)), pattern=r"^\w+ = "))
    start[offsets[:-1]] = True
    owner = np.repeat(np.arange(len(texts)), np.diff(offsets))[start]  # the text of each field
    bounds = np.append(np.flatnonzero(start), len(flat))
    return pc.binary_join(pa.ListArray.from_arrays(from_numpy(bounds.astype(np.int32)), flat), text(", ")), owner


def torch_fields(texts: pa.Array, keys: tuple[str, ...]) -> tuple[pa.Array, ...]:
    """Of PyTorch operator texts (those :func:`torch_mask` takes), the operator name and the
    value of each of ``keys`` (null when absent; the last when repeated), as
    :func:`~asysstats.analysis.operators.parsers.parse_pytorch` reads them."""
    fields, owner = split_fields(texts)
    first = np.ones(len(owner), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    out = [fields.filter(from_numpy(first))]
    for key in keys:
        holds = np.flatnonzero(is_true(pc.starts_with(fields, pattern=f"{key} = ")) & ~first)
        last = np.full(len(texts), -1, np.int64)
        np.maximum.at(last, owner[holds], holds)
        found = last >= 0  # the values cut from the fields taken alone, not from every field
        values = pc.ascii_trim(pc.utf8_slice_codeunits(fields.take(from_numpy(last[found])), start=len(key) + 3),
                               characters=SPACES)
        out.append(values.take(from_numpy(np.cumsum(found) - 1, valid=found)))
    return tuple(out)


def torch_keys(texts: pa.Array, keep_all: bool) -> pa.Array:
    """The merge keys of PyTorch operator texts (those :func:`torch_mask` takes): type,
    library, ``op=`` and the fields, minor ones dropped unless ``keep_all``."""
    fields, owner = split_fields(texts)
    if not keep_all:
        minor = np.zeros(len(fields), dtype=bool)
        for key in TORCH_MINOR:
            minor |= is_true(pc.starts_with(fields, pattern=f"{key} = "))
        fields, owner = fields.filter(from_numpy(~minor)), owner[~minor]
    fields = pc.ascii_rtrim(pc.replace_substring(fields, pattern=" = ", replacement="=", max_replacements=1),
                            characters=SPACES)
    fields = pc.replace_substring_regex(fields, pattern=rf"^(\w+=)[{SPACES}]+", replacement=r"\1")
    per_text = np.zeros(len(texts) + 1, dtype=np.int32)
    np.cumsum(np.bincount(owner, minlength=len(texts)), out=per_text[1:])
    body = pc.binary_join(pa.ListArray.from_arrays(from_numpy(per_text), fields), text(","))
    return pc.binary_join_element_wise(text(f"{PYTORCH}|{PYTORCH}|op="), body, text(""))


def without_run_ids(texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """PyTorch operator texts (those :func:`torch_mask` takes) without their per-run ids, as
    distinct texts and the index of each text among them. Only whole fields are taken out, so
    that a text's merge key (without minor fields) and its shapes are those of its distinct text
    (the 602 K texts of the 5 M-kernel sample are 24)."""
    stripped = pc.dictionary_encode(on_threads(
        lambda part: pc.replace_substring_regex(part, pattern=RUN_ID_FIELDS, replacement=r"\1"), texts))
    return stripped.dictionary, to_numpy(stripped.indices, np.dtype(np.int32)).astype(np.int64)


def is_true(mask: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, null as False."""
    return to_numpy(mask.cast(pa.uint8()), np.dtype(np.uint8)).astype(bool) & valid_mask(mask)
