"""asysstats: the `asys stats` / `asys analyze` / `asys compare` expert-system reports over
profiler reports (asysrep and Nsight Systems SQLite exports, PyTorch profiler traces).

The public API is :mod:`asysstats.api` (docs/api.md): ``asysstats.open``, ``Report.stats`` and
``Report.analyze``, ``asysstats.compare`` and ``asysstats.rules``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# No linear algebra here: numpy's OpenBLAS need not start its thread pool at import (0.04-0.09 s
# of every run). A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from asysstats import api  # noqa: E402
from asysstats.api import AsysError, MissingData, Note, Report, open  # noqa: E402

if TYPE_CHECKING:
    from asysstats.api import ColumnInfo, OptionInfo, RuleInfo, compare, rules

__version__ = "0.1.0"
__all__ = ["AsysError", "ColumnInfo", "MissingData", "Note", "OptionInfo", "Report", "RuleInfo", "compare", "open",
           "rules", "__version__"]


def __getattr__(name: str) -> Any:
    """The names :mod:`asysstats.api` imports when first asked for."""
    if name in api.LAZY:
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
