"""The columnar cache's folder as a whole (``asys cache``): its entries, their sizes and last
use, clearing it, and the size cap (:func:`~asysstats.reading.cache.cache_limit`) that evicts
the entries used longest ago.

An entry is a folder of :class:`~asysstats.reading.cache.ColumnCache` (its ``stamp.json`` names
the report); its last use is the modification time of that stamp, which every run that opens
the entry renews. Whatever cannot be read or removed is left as it is: the cache's own checks
vouch for every file it uses (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from asysstats.core.files import write_atomically
from asysstats.reading.cache import SIZE_UNITS, cache_root

ENTRY_NAME = re.compile(r"[0-9a-f]{32}")  # ColumnCache's folder names: the only folders evicted
USAGE = "usage.json"  # the bytes the cache holds: as the last scan found them, plus what runs stored since


@dataclass(frozen=True)
class CacheEntry:
    folder: Path
    report: str  # the report's resolved path, as its stamp names it ("" when unreadable)
    size: int  # bytes of its files
    used_ns: int  # last use: the modification time of its stamp (of the folder without one)


def cache_entries(root: Path | None = None) -> list[CacheEntry]:
    """The entries of the cache folder, the one used last first."""
    root = root or cache_root()
    try:
        folders = [Path(entry.path) for entry in os.scandir(root)
                   if ENTRY_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    entries = [CacheEntry(folder, stamped_report(folder), folder_size(folder), last_use(folder)) for folder in folders]
    return sorted(entries, key=lambda entry: entry.used_ns, reverse=True)


def stamped_report(folder: Path) -> str:
    try:
        return str(json.loads((folder / "stamp.json").read_text(encoding="utf-8")).get("path", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def last_use(folder: Path) -> int:
    for path in (folder / "stamp.json", folder):
        try:
            return path.stat().st_mtime_ns
        except OSError:
            continue
    return 0


def folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed)."""
    total = 0
    for base, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                continue
    return total


def clear_cache(root: Path | None = None) -> int:
    """Remove the cache folder; the bytes its entries held."""
    root = root or cache_root()
    held = sum(entry.size for entry in cache_entries(root))
    shutil.rmtree(root, ignore_errors=True)
    return held


def trim_cache(limit: int, keep: frozenset[Path] = frozenset(), root: Path | None = None) -> list[CacheEntry]:
    """Remove the entries used longest ago until the cache holds at most ``limit`` bytes; the
    entries in ``keep`` (those the run just wrote) stay. The entries removed; the bytes left
    are recorded as the cache's :data:`USAGE`."""
    root = root or cache_root()
    entries = cache_entries(root)
    total = sum(entry.size for entry in entries)
    removed = []
    for entry in reversed(entries):
        if total <= limit:
            break
        if entry.folder in keep:
            continue
        shutil.rmtree(entry.folder, ignore_errors=True)
        total -= entry.size
        removed.append(entry)
    record_usage(root, total)
    return removed


def trim_after_writes(limit: int, written: int, keep: frozenset[Path]) -> None:
    """After a run that stored ``written`` bytes: :func:`trim_cache` when the recorded usage
    plus them may pass ``limit`` (or none is recorded), else the usage recorded grown by them.
    A scan of the folder costs a stat per stored file, so a run pays it only near the cap."""
    root = cache_root()
    try:
        recorded = json.loads((root / USAGE).read_text(encoding="utf-8"))["bytes"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if not isinstance(recorded, int) or recorded + written > limit:
        trim_cache(limit, keep, root)
    else:
        record_usage(root, recorded + written)


def record_usage(root: Path, size: int) -> None:
    """Record ``size`` as the bytes the cache holds. An estimate: an entry emptied because its
    report changed still counts (the next scan comes sooner), and of two runs ending at once
    one's bytes may go uncounted (the cap is passed by them until a later scan)."""
    with contextlib.suppress(OSError):
        write_atomically(root / USAGE, json.dumps({"bytes": size}).encode(), force=True)


def human_size(size: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    value, unit = float(size), "B"
    for each in SIZE_UNITS:
        if value < 1024:
            break
        value, unit = value / 1024, f"{each}iB"
    return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
