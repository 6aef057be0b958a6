"""Opening a report file of any supported kind, by its first bytes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from asysstats.reading.sqlite import SQLITE_MAGIC, SqliteReport

if TYPE_CHECKING:
    from asysstats.reading.kineto.report import KinetoReport


def open_report(path: str | os.PathLike[str], cache: bool = True) -> "SqliteReport | KinetoReport":
    """Open any supported report file (the one entry point the CLI uses): a JSON trace
    (plain, or gzip by its magic bytes) is a PyTorch profiler trace, anything else SQLite."""
    if Path(path).is_file() and not starts_with(Path(path), SQLITE_MAGIC):
        from asysstats.reading.kineto.parse import looks_like_json_trace  # only for a trace: start-up time

        if looks_like_json_trace(Path(path)):
            from asysstats.reading.kineto.report import KinetoReport

            return KinetoReport(path, cache=cache)
    return SqliteReport(path, cache=cache)


def starts_with(path: Path, magic: bytes) -> bool:
    """Whether the file's first bytes are ``magic`` (False when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False
