"""Output columns: a name, a kind that tells the writers how to format it, and help.

Rules never format; the writers format every cell from its column's kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INT = "int"          # ns, bytes, counts, ids; floats are truncated toward zero
PERCENT = "percent"  # one decimal (the --format ratio unit changes the decimals)
RATIO = "ratio"      # one decimal
DECIMAL = "decimal"  # a measured value, one decimal
TEXT = "text"        # quoted; string ids are resolved through the report's string pool
# Comparison cells (docs/decisions.md D5): an (n, 2) array of base and target values, each side
# formatted with the inner kind and joined as "base / target"; a missing side prints "-".
PAIR_INT = "pair_int"
PAIR_PERCENT = "pair_percent"
PAIR_TEXT = "pair_text"  # text values (str or None), never string ids: the sides have different pools
PAIR_INNER = {PAIR_INT: INT, PAIR_PERCENT: PERCENT, PAIR_TEXT: TEXT}
COLUMN_KINDS = (INT, PERCENT, RATIO, DECIMAL, TEXT) + tuple(PAIR_INNER)

# A computed table before it is shaped into a result: column name -> numpy array (or an Arrow
# string array, or a column gathered a slice at a time: asysstats.core.result.Gathered).
Frame = dict[str, Any]


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    help: str

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind}")
