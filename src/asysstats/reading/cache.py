"""The columnar cache: columns read from a report, kept as Arrow IPC files and memory-mapped
on reuse, under ``$XDG_CACHE_HOME/asysstats`` (never next to or inside the report).

An entry is a folder named by a hash of the report's resolved path. Its ``stamp.json`` holds
what records a change of the report (:func:`report_stamp`): the file's identity (device,
inode), size, modification and status-change times, and for SQLite the database header (its
change counter, page count, schema cookie) and the state of its ``-wal`` and ``-journal``
files; for any other report (a Kineto trace) a hash of its content. A stamp that differs
empties the folder. Each stored file has a ``.sum`` file beside it naming its entry, table
and column, size and XXH3-64 hash: a file without it, or that does not match it (altered, swapped,
truncated, not a file), is deleted and read again from the report. The cache stores columns
as read (inline text as text), so run-specific string ids are never cached. Next to a
dictionary-encoded text column it keeps the fingerprints of its dictionaries
(:mod:`~asysstats.compute.textindex`), with a digest of them and of the text: fingerprints
that do not match the column are computed again, never used. Failures to write are ignored:
the cache is an optimisation, never a source of truth (docs/reliability.md). Its size is capped
(:func:`cache_limit`; the entries used longest ago go: :mod:`~asysstats.reading.cache_folder`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import weakref
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import xxhash

from asysstats.compute.arrow import from_numpy, text_bytes, text_offsets, to_numpy
from asysstats.compute.textindex import KEY_FORMAT, fingerprints
from asysstats.core.errors import AsysError, quoted
from asysstats.core.files import publish, temporary_beside, write_atomically
from asysstats.core.strings import StringPool

VERSION = 4  # 4: stored files vouched for by XXH3-64, not CRC-32
KEYS_SUFFIX = ".fingerprints.arrow"  # the file of a text column's fingerprints, after its name
SUM_SUFFIX = ".sum"  # the file that vouches for a stored file, after its name
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_HEADER = 100  # bytes: the change counter (24), page count (28), schema cookie (40), ...
HASH_CHUNK = 1 << 24


CACHE_MAX_ENV = "ASYSSTATS_CACHE_MAX"
DEFAULT_CACHE_MAX = 10 << 30  # bytes: the columns of a few large reports
SIZE = re.compile(r"\s*(\d+)\s*(?:([KMGT])(?:i?B)?|B)?\s*", re.IGNORECASE)
SIZE_UNITS = "KMGT"  # powers of 1024
_recorders: list[Writes] = []  # the recording_writes() under way


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "asysstats"


def cache_limit() -> int:
    """The size cap of the cache in bytes: ``ASYSSTATS_CACHE_MAX`` (bytes, or with a K, M, G or T
    suffix of powers of 1024: ``10G``, ``500MiB``), else 10 GiB."""
    given = os.environ.get(CACHE_MAX_ENV, "")
    if not given.strip():
        return DEFAULT_CACHE_MAX
    match = SIZE.fullmatch(given)
    if match is None:
        raise AsysError(f"{CACHE_MAX_ENV}={quoted(given)}: expected a size in bytes, or with K, M, G or T (10G)")
    unit = match.group(2)
    return int(match.group(1)) << (10 * (SIZE_UNITS.index(unit.upper()) + 1) if unit else 0)


class Writes:
    """What a run stored in the cache: the entry folders, and the bytes of the files."""

    def __init__(self) -> None:
        self.folders: set[Path] = set()
        self.size = 0


@contextlib.contextmanager
def recording_writes() -> Iterator[Writes]:
    """Within: what it gives collects the entry folders columns are stored in and their bytes
    (a run that stored any checks the size cap after it)."""
    written = Writes()
    _recorders.append(written)
    try:
        yield written
    finally:
        _recorders.remove(written)


def report_stamp(path: Path) -> dict[str, object]:
    """What records a change of the report at ``path`` (resolved): see the module's docstring."""
    stamp: dict[str, object] = {"path": str(path), "version": VERSION, **file_state(path)}
    with path.open("rb") as handle:
        header = handle.read(SQLITE_HEADER)
        if header.startswith(SQLITE_MAGIC):
            stamp["header"] = header.hex()
            for suffix in ("-wal", "-journal"):
                sidecar = path.with_name(path.name + suffix)
                if sidecar.exists():
                    stamp[suffix] = {**file_state(sidecar), "sha256": content_hash(sidecar)}
        else:
            handle.seek(0)
            stamp["sha256"] = content_hash(handle)
    return stamp


def file_state(path: Path) -> dict[str, int]:
    """A file's identity, size and times as the file system records them."""
    info = path.stat()
    return {"device": info.st_dev, "inode": info.st_ino, "size": info.st_size,
            "mtime_ns": info.st_mtime_ns, "ctime_ns": info.st_ctime_ns}


def content_hash(source: Path | BinaryIO) -> str:
    """SHA-256 of a file's bytes, read in pieces."""
    if isinstance(source, Path):
        with source.open("rb") as handle:
            return content_hash(handle)
    digest = hashlib.sha256()
    while piece := source.read(HASH_CHUNK):
        digest.update(piece)
    return digest.hexdigest()


class ColumnCache:
    """Cached columns of one report, one IPC file per (physical table, column)."""

    def __init__(self, report: Path, root: Path | None = None) -> None:
        resolved = report.resolve()
        self.folder = (root or cache_root()) / hashlib.sha256(str(resolved).encode()).hexdigest()[:32]
        self._stamp = report_stamp(resolved)
        self._entry = hashlib.sha256(json.dumps(self._stamp, sort_keys=True).encode()).hexdigest()
        self.enabled = self._prepare()

    def _prepare(self) -> bool:
        try:
            stamp_file = self.folder / "stamp.json"
            if stamp_file.exists():
                try:
                    if json.loads(stamp_file.read_text()) == self._stamp:
                        with contextlib.suppress(OSError):  # its last use, for the size cap (cache_folder)
                            os.utime(stamp_file, follow_symlinks=False)
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
        """The cached column, memory-mapped; None when absent or not vouched for (then deleted)."""
        frame = self._read(self._file(table, column), table, column) if self.enabled else None
        return None if frame is None else frame.column(0)

    def _read(self, path: Path, table: str, column: str) -> pa.Table | None:
        """An IPC file memory-mapped, when its ``.sum`` file vouches for it; else None (and
        whatever is there is deleted)."""
        if not path.exists() and not path.is_symlink():
            return None
        try:
            if path.is_file():
                with pa.memory_map(str(path)) as source:
                    data = source.read_buffer()
                if self._vouched(path, table, column, data):
                    frame = pa.ipc.open_file(data).read_all()
                    if frame.num_columns:
                        return frame
        except (OSError, ValueError, pa.ArrowException):
            pass
        self._remove(path)
        return None

    def _vouched(self, path: Path, table: str, column: str, data: pa.Buffer) -> bool:
        """Whether the ``.sum`` file of ``path`` names this entry, table and column, and the
        size and XXH3-64 hash of ``data`` (5 times zlib's CRC-32 speed: 22 against 4 GB/s, 0.5 s of a
        warm run over 2 GB of columns)."""
        return json.loads(self._sum_file(path).read_text()) == self._sum(table, column, data)

    def _sum(self, table: str, column: str, data: pa.Buffer | memoryview) -> dict[str, object]:
        return {"entry": self._entry, "table": table, "column": column, "size": len(data),
                "xxh3_64": xxhash.xxh3_64_intdigest(data)}

    @staticmethod
    def _sum_file(path: Path) -> Path:
        return path.with_name(path.name + SUM_SUFFIX)

    def _remove(self, path: Path) -> None:
        """Delete a stored file and its ``.sum`` file, whatever they are (a folder too)."""
        for target in (path, self._sum_file(path)):
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                try:
                    target.unlink(missing_ok=True)
                except OSError:
                    pass

    def put(self, table: str, column: str, values: pa.ChunkedArray,
            keys: list[np.ndarray] | None = None) -> pa.ChunkedArray | None:
        """Store a column (give a column of numbers one chunk, so that reuse maps it without a
        copy), and the fingerprints of its dictionaries when ``keys`` gives them (one array a
        chunk); the column as stored, memory-mapped, or None when it was not stored."""
        if not self.enabled:
            return None
        self._remove(self._keys_file(table, column))
        stored = self._write(self._file(table, column), table, column, pa.table({column: values}))
        if stored is not None and keys is not None:
            self._put_keys(table, column, values, keys)
        return None if stored is None else stored.column(0)

    def _write(self, target: Path, table: str, column: str, frame: pa.Table) -> pa.Table | None:
        """Write an IPC file through a temporary file renamed into place, then its ``.sum``
        file (a reader in between finds them not matching: it reads the report instead); the
        file as written, memory-mapped (the mapping hashed for the ``.sum``: not read twice),
        or None when either was not written."""
        try:
            self._remove(target)
            with temporary_beside(target) as temp:  # written by appending: not truncated (temporary_beside)
                with pa.OSFile(str(temp), "ab") as sink, pa.ipc.new_file(sink, frame.schema) as writer:
                    writer.write_table(frame)
                with pa.memory_map(str(temp)) as written:
                    data = written.read_buffer()
                vouch = json.dumps(self._sum(table, column, data)).encode()
                publish(temp, target, force=True)  # renamed: the mapping stays the file's
            write_atomically(self._sum_file(target), vouch, force=True)
            for record in _recorders:
                record.folders.add(self.folder)
                record.size += target.stat().st_size + len(vouch)
            return pa.ipc.open_file(data).read_all()
        except (OSError, pa.ArrowException):
            return None

    def put_column(self, table: str, name: str, values: np.ndarray, text: bool,
                   strings: StringPool) -> pa.ChunkedArray | None:
        """Store a numpy column; a ``text`` one holds string ids and is stored as text (:meth:`put`)."""
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
        stored = self._read(self._keys_file(table, column), table, column + KEYS_SUFFIX)
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
        self._write(self._keys_file(table, column), table, column + KEYS_SUFFIX, frame)

    def put_table(self, table: str, columns: Iterable[tuple[str, np.ndarray]], text: Sequence[str],
                  strings: StringPool) -> dict[str, np.ndarray]:
        """Store numpy columns one at a time as they come; the ``text`` columns hold string ids and
        are stored as text. The columns to read from now on: the numbers stored, mapped from their
        files (the copies given can go); the text, and what could not be stored (a read-only
        cache folder), as given."""
        kept = {}
        for name, values in columns:
            stored = self.put_column(table, name, values, name in text, strings)
            mapped = stored is not None and name not in text and values.dtype.kind in "iuf"  # not bits of bools
            kept[name] = to_numpy(stored, values.dtype) if mapped else values
        return kept

    def get_table(self, table: str, columns: dict[str, np.dtype], text: Sequence[str],
                  strings: StringPool) -> dict[str, np.ndarray] | None:
        """Those of the columns that are stored (``text`` ones interned into ``strings``), or
        None when none is or their lengths differ."""
        found = self.get_later(table, columns, text, strings)
        return None if found is None else {**found[0], **{name: make() for name, make in found[1].items()}}

    def get_later(self, table: str, columns: dict[str, np.dtype], text: Sequence[str], strings: StringPool
                  ) -> tuple[dict[str, np.ndarray], dict[str, Callable[[], np.ndarray]]] | None:
        """:meth:`get_table` with the ``text`` columns interned when first read (a function each):
        a table's text columns take 0.27 s and 46 MB apiece on 5.7 M HGTX ranges, and most rules
        read one of three."""
        found = {name: v for name in columns if (v := self.get(table, name)) is not None}
        if not found or len({len(v) for v in found.values()}) > 1:
            return None

        pool = weakref.ref(strings)  # the pool refers to its report: tables kept per report must not

        def interned(name: str, values: pa.ChunkedArray) -> Callable[[], np.ndarray]:
            def make() -> np.ndarray:
                found_pool = pool()
                if found_pool is None:
                    raise RuntimeError(f"{table}.{name}: read after its report was closed")
                return found_pool.intern_texts(values, self.keys(table, name, values))
            return make
        return ({name: to_numpy(values, columns[name]) for name, values in found.items() if name not in text},
                {name: interned(name, values) for name, values in found.items() if name in text})

    def drop(self, table: str) -> None:
        """Forget every column of a table (after an inconsistency)."""
        for path in self.folder.glob(f"{table}.*.arrow"):
            self._remove(path)


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
