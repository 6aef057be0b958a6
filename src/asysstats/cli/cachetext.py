"""``asys cache``: the columnar cache's folder, size, cap and entries, or its clearing."""

from __future__ import annotations

import datetime

from asysstats.reading.cache import CACHE_MAX_ENV, cache_limit, cache_root
from asysstats.reading.cache_folder import cache_entries, clear_cache, human_size


def cache_text() -> str:
    """The folder, its size against the cap, then an entry a line, the one used last first:
    its size, last use and report."""
    root, limit = cache_root(), cache_limit()
    entries = cache_entries(root)
    total = sum(entry.size for entry in entries)
    lines = [f"cache folder: {root}{'' if root.is_dir() else ' (not made yet)'}",
             f"size: {human_size(total)} in {len(entries)} {'entry' if len(entries) == 1 else 'entries'}",
             f"cap: {human_size(limit)} ({CACHE_MAX_ENV}, e.g. 20G): past it, a run removes the entries used longest ago "
             "once done; asys cache --clear empties it"]
    if entries:
        width = max(len(human_size(entry.size)) for entry in entries)
        lines += ["", f"{'Size'.rjust(width)}  Last use          Report"]
        for entry in entries:
            used = datetime.datetime.fromtimestamp(entry.used_ns / 1e9).strftime("%Y-%m-%d %H:%M")
            lines.append(f"{human_size(entry.size).rjust(width)}  {used}  {entry.report or '(unreadable stamp)'}")
    return "\n".join(lines) + "\n"


def clear_text() -> str:
    """Remove the cache folder; what was removed."""
    root = cache_root()
    held = clear_cache(root)
    return f"removed {root} ({human_size(held)})\n"
