"""Opening reports: the report arguments of the command line (files, folders of reports, glob
patterns), and a report file of any supported kind, by its first bytes."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from asysstats.core.errors import AsysError
from asysstats.core.input_files import check_input_file
from asysstats.reading.sqlite import SQLITE_MAGIC, SqliteReport

if TYPE_CHECKING:
    from asysstats.reading.kineto.report import KinetoReport


REPORT_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".asysrep", ".json", ".json.gz")
GLOB_CHARS = frozenset("*?[")


def expand_reports(arguments: Sequence[str]) -> list[str]:
    """Each argument as given, a directory as its report files, a pattern as its matches
    (each sorted by name); a directory or pattern without reports is an error."""
    out: list[str] = []
    for arg in arguments:
        path = Path(arg)
        if path.is_dir():
            found = sorted(str(p) for p in path.iterdir() if p.is_file() and p.name.endswith(REPORT_SUFFIXES))
            if not found:
                kinds = ", ".join("*" + s for s in REPORT_SUFFIXES)
                raise AsysError(f"{arg}: is a directory without reports ({kinds})")
            out += found
        elif not path.exists() and GLOB_CHARS & set(arg):
            found = sorted(p for p in glob.glob(arg) if Path(p).is_file())
            if not found:
                raise AsysError(f"{arg}: no report matches this pattern")
            out += found
        else:
            out.append(arg)
    return out


def open_report(path: str | os.PathLike[str], cache: bool = True) -> "SqliteReport | KinetoReport":
    """Open any supported report file (the one entry point the CLI uses): a JSON trace
    (plain, or gzip by its magic bytes) is a PyTorch profiler trace, anything else SQLite.
    What is not a regular file (a FIFO, a device) is refused before it is opened."""
    check_input_file(Path(path))
    if not starts_with(Path(path), SQLITE_MAGIC):
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
