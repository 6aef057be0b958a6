"""The columnar cache: columns read from a report, kept as Arrow IPC files and memory-mapped
on reuse, under ``$XDG_CACHE_HOME/asysstats`` (never next to or inside the report).

An entry is a folder named by a hash of the report's resolved path; its ``stamp.json``
holds the report's size and modification time. A stamp that differs (the report changed)
empties the folder; a file that does not read back (truncated, corrupt) is deleted and read
again from the report. The cache stores columns as read (inline text as text), so
run-specific string ids are never cached. Failures to write are ignored: the cache is an
optimisation, never a source of truth.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from typing import Sequence

import numpy as np
import pyarrow as pa

from asysstats.io.arrow import from_numpy, to_numpy
from asysstats.io.outputs import write_atomically
from asysstats.io.strings import StringPool

VERSION = 1


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "asysstats"


class ColumnCache:
    """Cached columns of one report, one IPC file per (physical table, column)."""

    def __init__(self, report: Path, root: Path | None = None) -> None:
        resolved = report.resolve()
        info = resolved.stat()
        self.folder = (root or cache_root()) / hashlib.sha256(str(resolved).encode()).hexdigest()[:32]
        self._stamp = {"path": str(resolved), "size": info.st_size, "mtime_ns": info.st_mtime_ns, "version": VERSION}
        self.enabled = self._prepare()

    def _prepare(self) -> bool:
        try:
            stamp_file = self.folder / "stamp.json"
            if stamp_file.exists():
                try:
                    if json.loads(stamp_file.read_text()) == self._stamp:
                        return True
                except (OSError, ValueError):
                    pass
                shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(stamp_file, json.dumps(self._stamp).encode(), force=True)
            return True
        except OSError:
            return False

    def _file(self, table: str, column: str) -> Path:
        return self.folder / f"{table}.{column}.arrow"

    def get(self, table: str, column: str) -> pa.ChunkedArray | None:
        """The cached column, memory-mapped; None when absent or unreadable (then deleted)."""
        if not self.enabled:
            return None
        path = self._file(table, column)
        if not path.exists():
            return None
        try:
            with pa.memory_map(str(path)) as source:
                return pa.ipc.open_file(source).read_all().column(0)
        except (OSError, pa.ArrowException, IndexError):
            path.unlink(missing_ok=True)
            return None

    def put(self, table: str, column: str, values: pa.ChunkedArray) -> bool:
        """Store a column (give a column of numbers one chunk, so that reuse maps it without a
        copy), through a temporary file renamed into place; whether it was stored."""
        if not self.enabled:
            return False
        target = self._file(table, column)
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            frame = pa.table({column: values})
            with pa.OSFile(str(temp), "wb") as sink, pa.ipc.new_file(sink, frame.schema) as writer:
                writer.write_table(frame)
            os.replace(temp, target)
            return True
        except (OSError, pa.ArrowException):
            temp.unlink(missing_ok=True)
            return False

    def put_column(self, table: str, name: str, values: np.ndarray, text: bool, strings: StringPool) -> bool:
        """Store a numpy column; a ``text`` one holds string ids and is stored as text."""
        return self.put(table, name, pa.chunked_array([strings.dictionary(values) if text else from_numpy(values)]))

    def put_table(self, table: str, columns: dict[str, np.ndarray], text: Sequence[str], strings: StringPool) -> None:
        """Store numpy columns; the ``text`` columns hold string ids and are stored as text."""
        for name, values in columns.items():
            self.put_column(table, name, values, name in text, strings)

    def get_table(self, table: str, columns: dict[str, np.dtype], text: Sequence[str],
                  strings: StringPool) -> dict[str, np.ndarray] | None:
        """Those of the columns that are stored (``text`` ones interned into ``strings``), or
        None when none is or their lengths differ."""
        found = {name: v for name in columns if (v := self.get(table, name)) is not None}
        if not found or len({len(v) for v in found.values()}) > 1:
            return None
        return {name: strings.intern_texts(values) if name in text else to_numpy(values, columns[name])
                for name, values in found.items()}

    def drop(self, table: str) -> None:
        """Forget every column of a table (after an inconsistency)."""
        for path in self.folder.glob(f"{table}.*.arrow"):
            path.unlink(missing_ok=True)

