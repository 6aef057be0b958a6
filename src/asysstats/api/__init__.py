"""The public API: reports opened, rules run, results as ``pyarrow.Table`` (docs/api.md).

>>> import asysstats
>>> with asysstats.open("report.sqlite") as report:
...     kernels = report.stats("hggc_ppu_kern_sum", rows=10)

``compare``, ``rules`` and the declaration records are imported when first asked for: the
command line's runs do not need them (start-up time).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from asysstats.api.reports import Note, Report, open
from asysstats.core.errors import AsysError, MissingData

if TYPE_CHECKING:
    from asysstats.api.catalog import ColumnInfo, OptionInfo, RuleInfo, rules
    from asysstats.api.comparing import compare

LAZY = {"compare": "asysstats.api.comparing", "rules": "asysstats.api.catalog", "RuleInfo": "asysstats.api.catalog",
        "OptionInfo": "asysstats.api.catalog", "ColumnInfo": "asysstats.api.catalog"}
__all__ = ["AsysError", "ColumnInfo", "MissingData", "Note", "OptionInfo", "Report", "RuleInfo", "compare", "open",
           "rules"]


def __getattr__(name: str) -> Any:
    """A name of :data:`LAZY`, from its module."""
    if name in LAZY:
        return getattr(import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
