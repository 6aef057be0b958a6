"""Open a report read-only, detect its dialect, and load logical tables as typed columns.

The columns are read by :mod:`asysstats.reading.sqlite_columns` (or mapped from the column cache). The
database is opened with ``mode=ro``; nothing is ever written next to or into it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shlex
import shutil
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, to_numpy
from asysstats.compute.distinct import DERIVED_BASE
from asysstats.core.errors import AsysError
from asysstats.core.files import private_folder, stop_signals_held
from asysstats.core.input_files import check_input_file
from asysstats.core.memory import release_memory
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable, given_once
from asysstats.reading.cache import ColumnCache
from asysstats.reading.schema import (
    ASYSREP,
    DIALECT_MARKERS,
    NSYS,
    TABLES,
    Col,
    TableSpec,
    derive_ids,
    missing_data,
    missing_words,
)
from asysstats.reading.sqlite_columns import TableReader

SQLITE_MAGIC = b"SQLite format 3\x00"
HEAD_BYTES = 4096  # of a file that is not SQLite, read to tell what it is
UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS, UTF32_BOMS = (b"\xff\xfe", b"\xfe\xff"), (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
NSYS_SUFFIXES = (".nsys-rep", ".qdrep")  # Nsight Systems' own report files
LOCK_TIMEOUT_S = 2.0  # how long to wait for a writer's lock before giving up
DERIVED_FORMAT = 1  # bump when a derived table (hgtx.all_ranges) is built differently


def check_report_file(path: Path) -> None:
    """A one-line error for a path that cannot be a report: not a regular file
    (:func:`~asysstats.core.input_files.check_input_file`), unreadable, empty, or not SQLite."""
    check_input_file(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError as exc:
        raise AsysError(f"{path}: cannot read ({exc.strerror})") from exc
    if len(head) == 0:
        raise AsysError(f"{path}: empty file, not a report")
    if not head.startswith(SQLITE_MAGIC):
        raise AsysError(f"{path.name}: {what_else(path, head)}")


def what_else(path: Path, head: bytes) -> str:
    """What a file that is not an SQLite database is, as far as its first bytes tell, and what
    to do: UTF-16/32 text, JSON that is not a trace object, an Nsight Systems ``.nsys-rep``."""
    wide = "UTF-32" if head.startswith(UTF32_BOMS) else "UTF-16" if head.startswith(UTF16_BOMS) else None
    if wide is None and b"\x00" in head[:2] and head.strip(b"\x00")[:1] in (b"{", b"["):
        wide = "UTF-16"  # JSON text without a byte order mark: every other byte is zero
    if wide:
        return f"is {wide} text, not a report; save a PyTorch profiler trace as UTF-8"
    if len(head) < HEAD_BYTES:  # the whole file: is it a JSON value other than an object or array?
        try:
            json.loads(head.removeprefix(UTF8_BOM))
            return "is JSON but not a PyTorch profiler trace, which is an object with a traceEvents array"
        except (ValueError, RecursionError):
            pass
    if path.name.endswith(NSYS_SUFFIXES):
        command = f"nsys export --type sqlite -o {shlex.quote(path.stem + '.sqlite')} {shlex.quote(path.name)}"
        return f"an Nsight Systems report, read as its SQLite export; make that with: {command}"
    return "not an SQLite database or a PyTorch profiler trace"


def readable_file(path: Path) -> Path:
    """The file to read: the report itself, or a private copy when reading it in place
    would write beside it — a WAL-mode database (its ``-wal`` pages are checkpointed into
    the copy) or one with a hot ``-journal`` (rolled back in the copy)."""
    with path.open("rb") as handle:
        header = handle.read(20)
    wal = len(header) >= 20 and header[18] == 2  # file format write version 2 = WAL
    sidecars = [path.with_name(path.name + s) for s in ("-wal", "-journal")]
    present = [s for s in sidecars if s.exists() and s.stat().st_size > 0]
    if not wal and not present:
        return path
    folder: Path | None = None
    try:
        with stop_signals_held():  # made and registered for removal with no signal in between
            folder = private_folder()  # marked with our process id: swept by a later run if we are killed
            atexit.register(shutil.rmtree, folder, True)  # at exit, a stop signal's included (asysstats.cli.main)
        copy = folder / path.name
        for source in [path] + present:
            shutil.copyfile(source, folder / source.name)
    except OSError as exc:  # a full or read-only temp folder
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        raise AsysError(f"{path}: cannot make the private copy a WAL-mode or journalled report is read from "
                        f"({exc.strerror}); set TMPDIR to a writable folder with room") from exc
    try:
        con = sqlite3.connect(copy)
        con.execute("PRAGMA journal_mode=DELETE")
        con.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged schema may not decode
        raise AsysError(f"{path}: unreadable SQLite database ({exc})") from exc
    return copy


def texts_later(numbers: dict[str, np.ndarray], texts: dict[str, Callable[[], np.ndarray]]) -> EventTable:
    """A derived table whose text columns are made when first read; at once when it has no number
    column, which alone gives a table its length."""
    return EventTable(numbers, texts) if numbers else EventTable({name: make() for name, make in texts.items()})


class SqliteReport:
    """An Nsight or asysrep SQLite export opened read-only; ``load`` returns typed tables."""

    hgtx_end: int | None = None  # ranges without an end stop at the report's last HGTX timestamp

    def __init__(self, path: str | os.PathLike[str], cache: bool = True) -> None:
        self.path = Path(path)
        check_report_file(self.path)
        self._column_cache = ColumnCache(self.path) if cache else None
        try:
            self._file = readable_file(self.path)
            uri = "file:" + urllib.parse.quote(str(self._file.resolve())) + "?mode=ro"
            self._con = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=LOCK_TIMEOUT_S)
            self._con.text_factory = lambda b: b.decode("utf-8", errors="replace")
            names = [r[0] for r in self._con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            self._reader = TableReader(self.path, self._file, self._con)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged schema may not decode
            raise AsysError(f"{self.path}: unreadable SQLite database ({exc})") from exc
        except OSError as exc:
            raise AsysError(f"{self.path}: cannot read ({exc})") from exc
        self._tables = set(names)
        self.dialect = self._detect_dialect()
        self.strings = StringPool(self._fetch_strings)
        self._cache: dict[tuple[str, tuple[str, ...]], EventTable] = {}

    def __repr__(self) -> str:
        return f"SqliteReport({str(self.path)!r}, dialect={self.dialect})"

    def close(self) -> None:
        self._con.close()

    # -- structure -------------------------------------------------------------------
    def _detect_dialect(self) -> str:
        if "META_DATA_EXPORT" in self._tables:
            rows = self._query("META_DATA_EXPORT", "SELECT value FROM META_DATA_EXPORT WHERE name='ReportFormat'")
            if any(str(v).lower() == ASYSREP for (v,) in rows):
                return ASYSREP
        for dialect in (ASYSREP, NSYS):
            if any(t in self._tables for t in DIALECT_MARKERS[dialect]):
                return dialect
        if "StringIds" in self._tables:
            return NSYS
        raise AsysError(f"{self.path}: not an asysrep or Nsight Systems export (no StringIds table)")

    def table_columns(self, table: str) -> list[str]:
        return self._reader.table_columns(table)

    def physical_tables(self, logical: str) -> list[str]:
        spec = TABLES[logical]
        present = [t for t in spec.physical.get(self.dialect, ()) if t in self._tables]
        return present if spec.concat else present[:1]

    def has(self, logical: str) -> bool:
        return bool(self.physical_tables(logical))

    def missing_message(self, logical: str) -> str:
        return missing_message(self.path, TABLES[logical], self.dialect)

    def derived(self, name: str, columns: Sequence[str], text: Sequence[str],
                build: Callable[[], Mapping[str, np.ndarray]]) -> EventTable:
        """A table of int64 ``columns`` computed from the report by ``build`` (the ``text``
        columns hold string ids), kept in the column cache so that later runs skip the work.
        The columns are stored one at a time as read from what ``build`` returns (a
        :class:`LazyColumns` computes each then), the text columns last, once the tables loaded
        only to build them are dropped; the numbers are returned as the cache maps them (only
        the columns read take memory), the text columns as later columns: the ids as built on their
        first read (:func:`given_once`), then from the cache interned."""
        if self._column_cache is None:
            return EventTable(build())
        table = f"derived{DERIVED_FORMAT}.{name}"
        types = dict.fromkeys(columns, np.dtype(np.int64))
        stored = self._column_cache.get_later(table, types, text, self.strings)
        if stored is not None and len(stored[0]) + len(stored[1]) == len(columns):
            return texts_later(*stored)
        with self.transient():
            built = build()
            found = self._column_cache.put_table(table, ((c, built[c]) for c in columns if c not in text), text,
                                                 self.strings)
            texts = {c: built[c] for c in columns if c in text}
            del built
        found |= self._column_cache.put_table(table, texts.items(), text, self.strings)  # the ids as built
        del texts
        stored = self._column_cache.get_later(table, dict.fromkeys(text, np.dtype(np.int64)), text, self.strings)
        later = {} if stored is None else {c: given_once(found.pop(c), make) for c, make in stored[1].items()}
        release_memory()
        return texts_later(found, later)

    @contextlib.contextmanager
    def transient(self) -> Iterator[None]:
        """Tables first loaded inside the block are not kept after it, when the column cache
        can map them again at once (without one, reading them again would take seconds)."""
        loaded = set(self._cache)
        try:
            yield
        finally:
            if self._column_cache is not None:
                for key in set(self._cache) - loaded:
                    del self._cache[key]
                release_memory()

    # -- loading ---------------------------------------------------------------------
    def load(self, logical: str, columns: Sequence[str] = ()) -> EventTable:
        """The logical table with the given columns (all when empty); raises MissingData."""
        spec = TABLES[logical]
        cols = tuple(columns) or tuple(c.name for c in spec.columns)
        key = (logical, cols)
        if key not in self._cache:
            physical = self.physical_tables(logical)
            if not physical:
                raise missing_data(self, logical)
            parts = [self._load_physical(spec, table, [spec.column(c) for c in cols]) for table in physical]
            self._cache[key] = derive_ids(EventTable.concat(parts))
            release_memory()
        return self._cache[key]

    def _load_physical(self, spec: TableSpec, table: str, cols: list[Col]) -> EventTable:
        columns = self._cached(table, cols)
        missing = [c for c in cols if c.name not in columns]
        if missing:
            columns.update(self._read_and_cache(table, missing))
        if len({len(v) for v in columns.values()}) > 1:  # an inconsistent cache entry: read it all again
            self._column_cache.drop(table)  # type: ignore[union-attr]
            columns = self._read_and_cache(table, cols)
        return EventTable({c.name: self._to_numpy(columns[c.name], c, table) for c in cols})

    def _read_and_cache(self, table: str, cols: list[Col]) -> dict[str, pa.ChunkedArray]:
        return self._reader.read(table, cols, None if self._column_cache is None else functools.partial(
            self._store, table))

    def _store(self, table: str, col: Col, values: pa.ChunkedArray) -> pa.ChunkedArray | None:
        """Cache a column just read; a column of numbers stored is given back as stored, mapped."""
        cache = self._column_cache
        assert cache is not None  # _read_and_cache stores only with a cache
        stored = cache.put(table, col.name, values)
        return stored if col.kind != "text" else None

    def _cached(self, table: str, cols: list[Col]) -> dict[str, pa.ChunkedArray]:
        if self._column_cache is None:
            return {}
        found = {c.name: self._column_cache.get(table, c.name) for c in cols}
        return {k: v for k, v in found.items() if v is not None}

    def _to_numpy(self, column: pa.ChunkedArray, col: Col, table: str) -> np.ndarray:
        if col.kind == "text":
            keys = None if self._column_cache is None else self._column_cache.keys(table, col.name, column)
            return self.strings.intern_texts(column, keys)
        if column.null_count == len(column):  # connectorx may type an all-NULL column as text
            column = pa.chunked_array([pa.nulls(len(column), pa.int64())])
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            raise AsysError(f"{self.path}: table {table}, column {col.name}: text where numbers are expected")
        if col.required and column.null_count:
            raise AsysError(f"{self.path}: table {table}, column {col.name}: {column.null_count} NULL values")
        dtype = np.dtype(np.float64 if col.kind == "float" else np.int64)
        target = pa.float64() if col.kind == "float" else pa.int64()
        if column.type != target:
            column = column.cast(target)
        if column.null_count:  # the fill as an Arrow scalar: a Python number would import pandas
            column = pc.fill_null(column, from_numpy(np.array([col.fill], dtype))[0])
        values = to_numpy(column, dtype)
        if col.kind == "strid" and len(values) and values.max() >= DERIVED_BASE:
            raise AsysError(f"{self.path}: table {table}, column {col.name}: string id {int(values.max())} is past "
                            f"the ids this tool reads (below 2^40)")
        return values

    def _fetch_strings(self, ids: list[int]) -> Iterable[tuple[int, str]]:
        if "StringIds" not in self._tables:
            return []
        out: list[tuple[int, str]] = []
        for lo in range(0, len(ids), 900):
            chunk = ids[lo:lo + 900]
            marks = ",".join("?" * len(chunk))
            out += self._query("StringIds", f"SELECT id, value FROM StringIds WHERE id IN ({marks})", chunk)
        return [(int(i), text_value(v)) for i, v in out]

    def _query(self, table: str, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self._reader.query(table, sql, params)

    def scalar(self, table: str, sql: str) -> object:
        return self._reader.scalar(table, sql)



def missing_message(path: Path, spec: TableSpec, dialect: str) -> str:
    what, collect = missing_words(spec, dialect)
    return f"{path.name} does not contain {what} (collect with {collect})"


def text_value(value: object) -> str:
    """The text of a ``StringIds`` value: a BLOB decoded as UTF-8 (bad bytes replaced, as TEXT
    is), NULL as empty text, a number as its digits (docs/decisions.md D16)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)
