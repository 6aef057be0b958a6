"""Write an SQLite report in the asysrep (or Nsight Systems) layout from columns.

The layout is generated from the loader's schema (``asysstats.reading.schema``), so that a
written report always reads back. Used by ``asys sample``, the benchmarks and the tests.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from asysstats.core.tables import NA as NULL
from asysstats.reading.schema import ASYSREP, MEM_KIND_LABELS, MEMCPY_KIND_LABELS, NSYS, TABLES

SQL_TYPES = {"int": "INTEGER", "strid": "INTEGER", "float": "REAL", "text": "TEXT"}
CHUNK_ROWS = 100_000  # rows converted to Python values at a time (bounded memory for millions of rows)
ENUMS = {"memcpy_kinds": MEMCPY_KIND_LABELS, "mem_kinds": MEM_KIND_LABELS}


class ReportWriter:
    """Collects rows per logical table and writes them in one transaction on ``close``."""

    def __init__(self, path: str | Path, dialect: str = ASYSREP) -> None:
        self.path = Path(path)
        self.dialect = dialect
        self._strings: dict[str, int] = {}
        self._rows: dict[tuple[str, int], list[dict[str, np.ndarray | Scalar]]] = {}  # (table, physical) -> blocks
        self._meta: list[tuple[str, str]] = [("ReportFormat", "asysrep"), ("SchemaVersion", "1")] \
            if dialect == ASYSREP else []

    def string(self, text: str) -> int:
        """The StringIds id of ``text`` (interned)."""
        return self._strings.setdefault(text, len(self._strings))

    def strings(self, texts: Iterable[str]) -> np.ndarray:
        return np.array([self.string(t) for t in texts], dtype=np.int64)

    def add(self, table: str, **columns: Sequence[object] | np.ndarray | int | float | str | None) -> None:
        """Append rows to a logical table; scalars broadcast over the longest column.

        In numeric numpy columns, ``NULL`` (int) and NaN (float) cells are written as SQL NULL.
        """
        self.add_to(table, 0, **columns)

    def add_to(self, table: str, physical: int, /,
               **columns: Sequence[object] | np.ndarray | int | float | str | None) -> None:
        """:meth:`add` to the ``physical``-th table of the dialect, for a table read from several
        (the OpenACC and OpenMP tables of an Nsight export)."""
        spec = TABLES[table]
        known = {c.name for c in spec.columns}
        unknown = set(columns) - known
        if unknown:
            raise ValueError(f"{table}: unknown columns {sorted(unknown)}")
        block: dict[str, np.ndarray | Scalar] = {}
        for name, value in columns.items():
            if isinstance(value, np.ndarray):
                block[name] = value
            elif isinstance(value, (list, tuple)):
                block[name] = np.asarray(value, dtype=object if spec.column(name).kind == "text" else None)
            else:
                block[name] = Scalar(value)
        self._rows.setdefault((table, physical), []).append(block)

    def create(self, table: str, physical: int = 0) -> None:
        """Create a logical table (its ``physical``-th table) even if it gets no rows."""
        self._rows.setdefault((table, physical), [])

    def meta(self, name: str, value: str) -> None:
        self._meta.append((name, value))

    def close(self) -> None:
        if self.path.exists():
            self.path.unlink()
        con = sqlite3.connect(self.path)
        try:
            con.execute("PRAGMA journal_mode=OFF")  # a new file: nothing to roll back to
            con.execute("PRAGMA synchronous=OFF")
            with con:
                con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
                con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
                con.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", self._meta)
                for logical, labels in ENUMS.items():
                    name = TABLES[logical].physical[self.dialect][0]
                    con.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, name TEXT, label TEXT)")
                    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)",
                                    [(k, v.upper().replace("-", "_"), v) for k, v in labels.items()])
                for (table, physical), blocks in self._rows.items():
                    self._write_table(con, table, physical, blocks)
                con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in self._strings.items()])
        finally:
            con.close()

    def _write_table(self, con: sqlite3.Connection, table: str, index: int,
                     blocks: list[dict[str, np.ndarray | Scalar]]) -> None:
        names = TABLES[table].physical[self.dialect]
        if not names:
            return
        spec, physical = TABLES[table], names[index]
        cols = spec.columns
        ddl = ", ".join(f'"{c.physical()[0]}" {SQL_TYPES[c.kind]}' for c in cols)
        con.execute(f'CREATE TABLE "{physical}" ({ddl})')
        marks = ", ".join("?" * len(cols))
        for block in blocks:
            length = max((len(v) for v in block.values() if isinstance(v, np.ndarray)), default=1)
            for lo in range(0, length, CHUNK_ROWS):
                chunk = {name: v[lo:lo + CHUNK_ROWS] if isinstance(v, np.ndarray) and len(v) == length else v
                         for name, v in block.items()}
                rows = min(CHUNK_ROWS, length - lo)
                values = [_column_values(chunk.get(c.name), rows) for c in cols]
                con.executemany(f'INSERT INTO "{physical}" VALUES ({marks})', zip(*values))


class Scalar:
    """One value repeated over every row of a block."""

    def __init__(self, value: object) -> None:
        self.value = value.item() if isinstance(value, np.generic) else value


def _column_values(values: np.ndarray | Scalar | None, length: int) -> Iterable[object]:
    """Python values for sqlite3, NULL for None, ``NULL`` ints and NaN floats."""
    if values is None or isinstance(values, Scalar):
        return itertools.repeat(None if values is None else values.value, length)
    if len(values) == 1 and length > 1:
        values = np.repeat(values, length)
    if values.dtype.kind in "iuf":
        null = np.isnan(values) if values.dtype.kind == "f" else values == NULL
        if not null.any():
            return values.tolist()
        cells = values.astype(object)
        cells[null] = None
        return cells.tolist()
    return [v.item() if isinstance(v, np.generic) else v for v in values.tolist()]


__all__ = ["ReportWriter", "ASYSREP", "NSYS", "NULL"]
