"""The tables of a parsed Kineto trace in the columnar cache (:class:`asysstats.reading.cache.ColumnCache`),
so that a second run does not parse the JSON again.

Each logical table is stored as cache table ``kineto<FORMAT>.<logical>``, one Arrow column per
schema column. String-id columns (schema kinds ``text`` and ``strid``) are stored as text
(dictionary-encoded), never as the run's ids, and interned again on reading. The top-level
members, the number of unlinked activities and the list of tables go into
``kineto<FORMAT>.meta``, written last and read first: a cache entry without it, or with a
missing or inconsistent column, is ignored and the trace parsed again. The cache's stamp (size,
modification time) makes a modified trace parse again. Bump :data:`FORMAT` whenever the
tables built from a trace change.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from asysstats.compute.arrow import from_numpy, from_texts
from asysstats.core.strings import StringPool
from asysstats.reading.cache import ColumnCache
from asysstats.reading.schema import TABLES

FORMAT = 3
PREFIX = f"kineto{FORMAT}"
META = f"{PREFIX}.meta"
TEXT_KINDS = ("text", "strid")
Table = dict[str, np.ndarray]


def store(cache: ColumnCache, tables: dict[str, Table], metadata: dict[str, Any], unlinked: int,
          strings: StringPool) -> None:
    """Write the tables (schema columns only), then the meta entry that marks them complete."""
    for logical, table in tables.items():
        columns = {c.name: table[c.name] for c in TABLES[logical].columns if c.name in table}
        cache.put_table(f"{PREFIX}.{logical}", columns.items(), text_columns(logical), strings)
    cache.put(META, "metadata", pa.chunked_array([from_texts([json.dumps(metadata)])]))
    cache.put(META, "unlinked", pa.chunked_array([from_numpy(np.array([unlinked], np.int64))]))
    cache.put(META, "tables", pa.chunked_array([from_texts(list(tables))]))


def load(cache: ColumnCache, strings: StringPool) -> tuple[dict[str, Table], dict[str, Any], int] | None:
    """The cached tables, top-level members and unlinked count, or None when the cache lacks any."""
    names = cache.get(META, "tables")
    metadata = cache.get(META, "metadata")
    unlinked = cache.get(META, "unlinked")
    if names is None or metadata is None or unlinked is None or len(metadata) != 1 or len(unlinked) != 1:
        return None
    tables: dict[str, Table] = {}
    for logical in names.to_pylist():
        if logical not in TABLES:
            return None
        dtypes = {c.name: np.dtype(np.float64 if c.kind == "float" else np.int64) for c in TABLES[logical].columns}
        table = cache.get_table(f"{PREFIX}.{logical}", dtypes, text_columns(logical), strings)
        if table is None:
            return None
        tables[logical] = table
    try:
        return tables, json.loads(metadata[0].as_py()), int(unlinked[0].as_py())
    except (ValueError, TypeError):
        return None


def text_columns(logical: str) -> tuple[str, ...]:
    return tuple(c.name for c in TABLES[logical].columns if c.kind in TEXT_KINDS)
