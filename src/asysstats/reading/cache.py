"""The columnar cache: columns read from a report, kept as Arrow IPC files and memory-mapped
on reuse, under ``$XDG_CACHE_HOME/asysstats`` (never next to or inside the report).

An entry is a folder named by a hash of the report's resolved path; its ``stamp.json``
holds the report's size and modification time. A stamp that differs (the report changed)
empties the folder; a file that does not read back (truncated, corrupt) is deleted and read
again from the report. The cache stores columns as read (inline text as text), so
run-specific string ids are never cached. Next to a dictionary-encoded text column it keeps
the fingerprints of its dictionaries (:mod:`~asysstats.compute.textindex`), with a digest of
them and of the text: fingerprints that do not match the column are computed again, never
used. Failures to write are ignored: the cache is an optimisation, never a source of truth.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa

from asysstats.compute.arrow import from_numpy, text_bytes, text_offsets, to_numpy
from asysstats.compute.textindex import KEY_FORMAT, fingerprints
from asysstats.core.files import write_atomically
from asysstats.core.strings import StringPool

VERSION = 2
KEYS_SUFFIX = ".fingerprints.arrow"  # the file of a text column's fingerprints, after its name


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

    def _keys_file(self, table: str, column: str) -> Path:
        return self.folder / f"{table}.{column}{KEYS_SUFFIX}"

    def stored(self) -> dict[str, list[str]]:
        """The names of the stored columns, by table (physical or derived), in name order."""
        found: dict[str, list[str]] = {}
        for path in sorted(self.folder.glob("*.arrow")):
            table, _, column = path.stem.rpartition(".")
            if table and not path.name.endswith(KEYS_SUFFIX):
                found.setdefault(table, []).append(column)
        return found

    def get(self, table: str, column: str) -> pa.ChunkedArray | None:
        """The cached column, memory-mapped; None when absent or unreadable (then deleted)."""
        frame = self._read(self._file(table, column)) if self.enabled else None
        return None if frame is None else frame.column(0)

    @staticmethod
    def _read(path: Path) -> pa.Table | None:
        """An IPC file memory-mapped; None when absent or unreadable (then deleted)."""
        if not path.exists():
            return None
        try:
            with pa.memory_map(str(path)) as source:
                frame = pa.ipc.open_file(source).read_all()
            if frame.num_columns:
                return frame
        except (OSError, pa.ArrowException):
            pass
        path.unlink(missing_ok=True)
        return None

    def put(self, table: str, column: str, values: pa.ChunkedArray, keys: list[np.ndarray] | None = None) -> bool:
        """Store a column (give a column of numbers one chunk, so that reuse maps it without a
        copy), and the fingerprints of its dictionaries when ``keys`` gives them (one array a
        chunk); whether the column was stored."""
        if not self.enabled:
            return False
        self._keys_file(table, column).unlink(missing_ok=True)
        stored = self._write(self._file(table, column), pa.table({column: values}))
        if stored and keys is not None:
            self._put_keys(table, column, values, keys)
        return stored

    @staticmethod
    def _write(target: Path, frame: pa.Table) -> bool:
        """Write an IPC file through a temporary file renamed into place; whether it was written."""
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with pa.OSFile(str(temp), "wb") as sink, pa.ipc.new_file(sink, frame.schema) as writer:
                writer.write_table(frame)
            os.replace(temp, target)
            return True
        except (OSError, pa.ArrowException):
            temp.unlink(missing_ok=True)
            return False

    def put_column(self, table: str, name: str, values: np.ndarray, text: bool, strings: StringPool) -> bool:
        """Store a numpy column; a ``text`` one holds string ids and is stored as text."""
        if not text:
            return self.put(table, name, pa.chunked_array([from_numpy(values)]))
        dictionary, keys = strings.dictionary(values)
        return self.put(table, name, pa.chunked_array([dictionary]), [keys])

    def keys(self, table: str, column: str, values: pa.ChunkedArray) -> list[np.ndarray] | None:
        """The fingerprints of the dictionary of every chunk of the cached text column ``values``:
        the stored ones when their digest matches the column's text, else computed and stored;
        None for a column that is not dictionary-encoded (or without a cache)."""
        if not self.enabled or not all(pa.types.is_dictionary(chunk.type) for chunk in values.chunks):
            return None
        dictionaries = [chunk.dictionary for chunk in values.chunks]
        stored = self._read(self._keys_file(table, column))
        if stored is not None and stored.num_rows == sum(len(d) for d in dictionaries) and \
                stored.schema.metadata == {b"digest": _digest(dictionaries, stored.column(0))}:
            ends = np.cumsum([len(d) for d in dictionaries])
            return np.split(to_numpy(stored.column(0), np.dtype(np.uint64)), ends[:-1])
        keys = [fingerprints(d if d.type == pa.string() else d.cast(pa.string())) for d in dictionaries]
        if self._file(table, column).exists():  # not a column read that could not be stored
            self._put_keys(table, column, values, keys)
        return keys

    def _put_keys(self, table: str, column: str, values: pa.ChunkedArray, keys: list[np.ndarray]) -> None:
        """Store the fingerprints of the column's dictionaries, with their digest."""
        joined = pa.chunked_array([from_numpy(np.concatenate(keys) if keys else np.empty(0, np.uint64))])
        digest = _digest([chunk.dictionary for chunk in values.chunks], joined)
        frame = pa.table({"keys": joined}).replace_schema_metadata({"digest": digest})
        self._write(self._keys_file(table, column), frame)

    def put_table(self, table: str, columns: Iterable[tuple[str, np.ndarray]], text: Sequence[str],
                  strings: StringPool) -> dict[str, np.ndarray]:
        """Store numpy columns one at a time as they come; the ``text`` columns hold string ids and
        are stored as text. The columns not stored (a read-only cache folder)."""
        return {name: values for name, values in columns
                if not self.put_column(table, name, values, name in text, strings)}

    def get_table(self, table: str, columns: dict[str, np.dtype], text: Sequence[str],
                  strings: StringPool) -> dict[str, np.ndarray] | None:
        """Those of the columns that are stored (``text`` ones interned into ``strings``), or
        None when none is or their lengths differ."""
        found = {name: v for name in columns if (v := self.get(table, name)) is not None}
        if not found or len({len(v) for v in found.values()}) > 1:
            return None
        return {name: strings.intern_texts(values, self.keys(table, name, values)) if name in text
                else to_numpy(values, columns[name]) for name, values in found.items()}

    def drop(self, table: str) -> None:
        """Forget every column of a table (after an inconsistency)."""
        for path in self.folder.glob(f"{table}.*.arrow"):
            path.unlink(missing_ok=True)


def _digest(dictionaries: list[pa.Array], keys: pa.ChunkedArray) -> bytes:
    """A hash of the fingerprint format, the dictionaries' strings (lengths and bytes) and their
    fingerprints (hex, as schema metadata stores it)."""
    digest = hashlib.sha256(KEY_FORMAT)
    # the ignores: numpy's stubs make ndarray a Buffer only for Python >= 3.12
    for dictionary in dictionaries:
        if len(dictionary):
            offsets = text_offsets(dictionary)
            digest.update(offsets - offsets[0] if offsets[0] else offsets)  # type: ignore[arg-type]
            digest.update(text_bytes(dictionary))
    for chunk in keys.chunks:
        digest.update(to_numpy(chunk, np.dtype(np.uint64)))  # type: ignore[arg-type]
    return digest.hexdigest().encode()
