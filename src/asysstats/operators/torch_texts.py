"""PyTorch autograd range texts recognised in bulk with Arrow's regex kernels.

:func:`asysstats.operators.parsers.parse_pytorch` splits a text on ``, `` before
``word = ``; RE2 has no look-ahead, so the split points are marked instead: ``, key = ``
becomes ``§key=``. Only ASCII texts are taken here (Python's ``\\w`` and ``str.strip`` are
wider than RE2's on other text), so the non-ASCII marker cannot occur in them; every
other text is left to the per-text parsers. The results equal those of the per-text
parser and :func:`asysstats.operators.merge.merge_key`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.io.arrow import from_texts, text, to_numpy, valid_mask
from asysstats.operators.catalog import AUTOGRAD_FIELDS, PYTORCH, TORCH_NAMESPACES
from asysstats.operators.parsers import TORCH_MINOR

MARK = "\u00a7"
SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f ]"  # what str.strip() removes from ASCII text
SPLIT = r", (\w+) = "  # a split point with the key that follows it
HEAD = r"^(?P<ns>[A-Za-z_]\w*)::[A-Za-z_][\w.]*(?:, \w+ = |$)"  # catalog.TORCH_NAME, the whole first piece


def torch_mask(texts: pa.Array) -> np.ndarray:
    """Per text (range names without a domain): whether it is an ASCII PyTorch operator text.
    Every ``, key = `` in a text is a split point, so no marking is needed here."""
    if len(texts) == 0:
        return np.zeros(0, dtype=bool)
    head = pc.struct_field(pc.extract_regex(texts, pattern=HEAD), [0])
    fields = "|".join(AUTOGRAD_FIELDS)
    known = pc.or_kleene(pc.or_kleene(pc.is_in(head, value_set=from_texts(sorted(TORCH_NAMESPACES))),
                                      pc.ends_with(head, pattern="_C")),
                         pc.match_substring_regex(texts, pattern=f", (?:{fields}) = "))
    keep = pc.and_kleene(pc.and_kleene(pc.string_is_ascii(texts), pc.is_valid(head)), known)
    return to_numpy(keep.cast(pa.uint8()), np.dtype(np.uint8)).astype(bool) & valid_mask(keep)


def torch_keys(texts: pa.Array, keep_all: bool) -> pa.Array:
    """The merge keys of PyTorch operator texts (those :func:`torch_mask` takes): type,
    library, ``op=`` and the fields, minor ones dropped unless ``keep_all``."""
    body = pc.replace_substring_regex(texts, pattern=SPLIT, replacement=MARK + r"\1=")
    if not keep_all:
        body = pc.replace_substring_regex(body, pattern=f"{MARK}(?:{'|'.join(sorted(TORCH_MINOR))})=[^{MARK}]*",
                                          replacement="")
    body = pc.replace_substring_regex(body, pattern=rf"({MARK}\w+=){SPACE}+", replacement=r"\1")
    body = pc.replace_substring_regex(body, pattern=rf"{SPACE}+({MARK}|$)", replacement=r"\1")
    body = pc.replace_substring(body, pattern=MARK, replacement=",")
    return pc.binary_join_element_wise(text(f"{PYTORCH}|{PYTORCH}|op="), body, text(""))
