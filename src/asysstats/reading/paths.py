"""Report arguments: files, directories (their report files) and glob patterns."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Sequence

from asysstats.core.errors import AsysError

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
