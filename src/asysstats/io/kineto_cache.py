"""The tables of a parsed Kineto trace in the columnar cache (:class:`asysstats.io.cache.ColumnCache`),
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

from asysstats.io.arrow import from_numpy, from_texts, text_ids, to_numpy
from asysstats.io.cache import ColumnCache
from asysstats.io.schema import TABLES
from asysstats.io.strings import StringPool, distinct

FORMAT = 1
PREFIX = f"kineto{FORMAT}"
META = f"{PREFIX}.meta"
TEXT_KINDS = ("text", "strid")
Table = dict[str, np.ndarray]


def store(cache: ColumnCache, tables: dict[str, Table], metadata: dict[str, Any], unlinked: int,
          strings: StringPool) -> None:
    """Write the tables (schema columns only), then the meta entry that marks them complete."""
    for logical, table in tables.items():
        for col in TABLES[logical].columns:
            if col.name in table:
                values = table[col.name]
                array = as_text(strings, values) if col.kind in TEXT_KINDS else from_numpy(values)
                cache.put(f"{PREFIX}.{logical}", col.name, pa.chunked_array([array]))
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
        table: Table = {}
        for col in TABLES[logical].columns:
            column = cache.get(f"{PREFIX}.{logical}", col.name)
            if column is not None:
                table[col.name] = text_ids(strings, column) if col.kind in TEXT_KINDS else \
                    to_numpy(column, np.dtype(np.float64 if col.kind == "float" else np.int64))
        if not table or len({len(v) for v in table.values()}) != 1:
            return None
        tables[logical] = table
    try:
        return tables, json.loads(metadata[0].as_py()), int(unlinked[0].as_py())
    except (ValueError, TypeError):
        return None


def as_text(strings: StringPool, ids: np.ndarray) -> pa.DictionaryArray:
    """String ids as dictionary-encoded text (a missing id, -1, as null)."""
    valid = ids >= 0
    uniq, inverse = distinct(np.where(valid, ids, 0))
    dictionary = from_texts(list(strings.lookup(uniq)))
    indices = pa.Array.from_buffers(pa.int32(), len(ids), [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                          pa.py_buffer(inverse.astype(np.int32))])
    return pa.DictionaryArray.from_arrays(indices, dictionary)
