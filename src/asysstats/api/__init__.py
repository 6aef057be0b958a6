"""The public API: reports opened, rules run, results as ``pyarrow.Table`` (docs/api.md).

>>> import asysstats
>>> with asysstats.open("report.sqlite") as report:
...     kernels = report.stats("hggc_ppu_kern_sum", rows=10)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asysstats.api.catalog import ColumnInfo, OptionInfo, RuleInfo, rules
from asysstats.api.reports import Note, Report, open
from asysstats.core.errors import AsysError, MissingData

if TYPE_CHECKING:
    from asysstats.api.comparing import compare

__all__ = ["AsysError", "ColumnInfo", "MissingData", "Note", "OptionInfo", "Report", "RuleInfo", "compare", "open",
           "rules"]


def __getattr__(name: str) -> Any:
    """``compare``, imported when first asked for (the command line's runs do not)."""
    if name == "compare":
        from asysstats.api.comparing import compare

        return compare
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
