"""The interface every kind of report implements: an Nsight or asysrep SQLite export
(:class:`~asysstats.reading.sqlite.SqliteReport`), a PyTorch profiler trace
(:class:`~asysstats.reading.kineto.report.KinetoReport`) and a merged set of reports
(:class:`~asysstats.reading.merged.report.MergedReport`). The analysis reads reports through
it alone (:class:`asysstats.analysis.inputs.Inputs`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable


class ReportSource(Protocol):
    """Logical tables of one report (or of a merged set read as one), typed and cached."""

    path: Path  # the file (a merged set: the name its outputs take)
    dialect: str  # asysrep | nsys | kineto (asysstats.reading.schema)
    strings: StringPool  # the text of every string id its tables hold
    hgtx_end: int | None  # where HGTX ranges without an end stop, when not at the report's last one

    def has(self, logical: str) -> bool:
        """Whether the report holds the logical table (``kernels``, ``runtime``, ...)."""

    def load(self, logical: str, columns: Sequence[str] = ()) -> EventTable:
        """The table's ``columns`` (all when empty), the whole report (no time window);
        raises :class:`~asysstats.core.errors.MissingData` when the report lacks it."""

    def physical_tables(self, logical: str) -> list[str]:
        """The report's own tables the logical one is read from."""

    def missing_message(self, logical: str) -> str:
        """One line saying the report lacks the table and how to collect it."""

    def derived(self, name: str, columns: Sequence[str], text: Sequence[str],
                build: Callable[[], Mapping[str, np.ndarray]]) -> EventTable:
        """A table computed from the report by ``build`` (``text``: its string-id columns),
        kept where the report's kind can keep it (the column cache of an SQLite export)."""

    def transient(self) -> AbstractContextManager[None]:
        """A block whose loads the report need not keep after it."""

    def close(self) -> None:
        """Free what the report holds open."""
