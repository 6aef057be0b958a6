"""Reading a report's tables as Arrow columns from its SQLite file (opened read-only).

Bulk columns are read with connectorx (Arrow, no Python rows), a large table in rowid slices
on parallel threads; metadata, strings and any table connectorx cannot read (mixed column
types, a column absent from the table) go through the ``sqlite3`` module. Inline text is
dictionary-encoded per slice as it arrives, so that the read never holds more than a few
slices' text at once.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, one_chunk
from asysstats.core.errors import AsysError
from asysstats.core.memory import release_memory
from asysstats.reading.schema import Col

SLICE_ROWS = 1 << 18  # a table of more rows is read in rowid slices of this many, on parallel threads
JOINERS = min(os.cpu_count() or 1, 2)  # columns joined into one chunk and cached at once (both release the GIL)
Store = Callable[[Col, pa.ChunkedArray], "pa.ChunkedArray | None"]  # caches a column read; may give it back mapped


class TableReader:
    """Columns of the tables of one SQLite file (``file``: what is read; ``path``: the report, for messages)."""

    def __init__(self, path: Path, file: Path, con: sqlite3.Connection) -> None:
        self.path = path
        self._file = file
        self._con = con
        self._columns: dict[str, list[str]] = {}

    def query(self, table: str, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        try:
            return self._con.execute(sql, params).fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged schema may not decode
            raise AsysError(f"{self.path}: cannot read table {table} ({exc})") from exc

    def scalar(self, table: str, sql: str) -> object:
        rows = self.query(table, sql)
        return rows[0][0] if rows else None

    def table_columns(self, table: str) -> list[str]:
        if table not in self._columns:
            self._columns[table] = [r[1] for r in self.query(table, f"PRAGMA table_info('{table}')")]
        return self._columns[table]

    def read(self, table: str, cols: list[Col], store: Store | None = None) -> dict[str, pa.ChunkedArray]:
        """The columns of ``table``: numbers in one chunk (the cache maps it without a copy),
        text dictionary-encoded, a chunk per slice read. ``store`` is given each column as it
        is made (to cache it) and may give it back mapped from the stored file, the copy read then
        freed at once: a cold run holds what a warm one holds, pages the system drops and reads
        again, not memory of the process. Columns are joined and stored two at a time, on threads:
        done one at a time on the main thread, after the read, they left a core idle."""
        query = self._select(table, cols)
        arrow = None
        if self._declared_in_utf8(table):  # else connectorx panics, its backtrace on stderr
            try:
                arrow = self._read_connectorx(table, query, cols)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException:  # mixed-type columns and NULL literals rejected; a panic on other
                pass               # damage is pyo3's PanicException, not an Exception
        if arrow is None or arrow.num_columns != len(cols):
            arrow = self._read_sqlite3(table, query, cols)
        slices = {c.name: arrow.column(c.name) for c in cols}
        del arrow

        def made(col: Col) -> pa.ChunkedArray:
            values = slices.pop(col.name)  # its slices freed once it is made
            column = values if col.kind == "text" else pa.chunked_array([one_chunk(values)])
            mapped = None if store is None else store(col, column)
            return column if mapped is None else mapped

        with ThreadPoolExecutor(JOINERS) as pool:
            columns = dict(zip((c.name for c in cols), pool.map(made, cols)))
        release_memory()  # what the reading threads freed (the slices' plain text): out of the peak of what follows
        return columns

    def _declared_in_utf8(self, table: str) -> bool:
        """Whether the table's declaration (its column types) is valid UTF-8."""
        declared = cast("bytes | None",
                        self.scalar(table, f"SELECT CAST(sql AS BLOB) FROM sqlite_master WHERE name = '{table}'"))
        try:
            bytes(declared or b"").decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    def _select(self, table: str, cols: list[Col]) -> str:
        present = set(self.table_columns(table))
        select = []
        for col in cols:
            source = col.source(present)
            if source is None and (col.required or col.present):
                raise AsysError(f"{self.path}: table {table} has no column {col.physical()[0]}")
            select.append(f'"{source}"' if source else "NULL")
        return f'SELECT {", ".join(f"{s} AS {c.name}" for s, c in zip(select, cols))} FROM "{table}"'

    def _read_connectorx(self, table: str, query: str, cols: list[Col]) -> pa.Table:
        """Read with connectorx; a large table in rowid slices on parallel threads, kept in order."""
        import connectorx

        uri = "sqlite://" + urllib.parse.quote(str(self._file.resolve()))
        text = [c.name for c in cols if c.kind == "text"]

        def read(sql: str) -> pa.Table:
            return encoded(connectorx.read_sql(uri, sql, return_type="arrow"), text)

        # separate queries: SQLite answers a lone min() or max() of the rowid from the b-tree,
        # but both in one query scans the table
        lo, hi = (cast("int | None", self.scalar(table, f'SELECT {end}(rowid) FROM "{table}"'))
                  for end in ("min", "max"))
        threads = min(os.cpu_count() or 1, 4)
        if lo is None or hi is None or hi - lo < SLICE_ROWS or threads < 2:  # both None in an empty table
            return read(query)
        queries = [f"{query} WHERE rowid >= {at} AND rowid < {at + SLICE_ROWS}" for at in range(lo, hi + 1, SLICE_ROWS)]
        with ThreadPoolExecutor(threads) as pool:
            return pa.concat_tables(list(pool.map(read, queries)))

    def _read_sqlite3(self, table: str, query: str, cols: list[Col]) -> pa.Table:
        rows = self.query(table, query)
        arrays = list(zip(*rows)) if rows else [()] * len(cols)
        return pa.table({c.name: self._typed(table, c, values) for c, values in zip(cols, arrays)})

    def _typed(self, table: str, col: Col, values: Sequence[object]) -> pa.Array:
        """One column's values as Arrow (from buffers: ``pa.array`` of Python values imports
        pandas); an error naming the column when they are not of its kind."""
        wrong = set(map(type, values)) - {type(None)} - ACCEPTED.get(col.kind, ACCEPTED["int"])
        try:
            if wrong:
                raise TypeError(", ".join(sorted(t.__name__ for t in wrong)))
            if col.kind == "text":
                return from_texts(cast("list[str | None]", list(values)))
            objects = np.array(values, dtype=object).reshape(-1)
            valid = objects != None  # noqa: E711 (element-wise)
            objects[~valid] = 0
            return from_numpy(objects.astype(np.float64 if col.kind == "float" else np.int64), valid)
        except (TypeError, ValueError, OverflowError) as exc:
            raise AsysError(f"{self.path}: table {table}, column {col.name}: values of the wrong type ({exc})") from exc


def encoded(table: pa.Table, text: list[str]) -> pa.Table:
    """``table`` with its ``text`` columns dictionary-encoded (one dictionary, one chunk), their
    plain text freed."""
    for name in text:
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, pa.chunked_array([pc.dictionary_encode(table.column(index)).combine_chunks()]))
    return table


# The Python types of the SQLite values each kind takes (a string id: int's)
ACCEPTED: dict[str, set[type]] = {"text": {str}, "float": {int, float}, "int": {int, bool}}


def arrow_type(col: Col) -> pa.DataType:
    if col.kind == "text":
        return pa.string()
    return pa.float64() if col.kind == "float" else pa.int64()
