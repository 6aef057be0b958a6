"""Files written atomically: through a temporary file in the target's folder, renamed over
it when complete, never over an existing file unless forced."""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

from asysstats.core.errors import AsysError


def refuse_overwrite(path: Path, force: bool) -> None:
    """An error when ``path`` exists and overwriting is not forced."""
    if path.exists() and not force:
        raise AsysError(f"{path} exists; use -f true to overwrite it")


def write_atomically(path: Path, data: bytes | Iterable[bytes | memoryview], force: bool) -> None:
    """Write through a temporary file in the same folder, then rename over the target."""
    refuse_overwrite(path, force)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            write_each(out.write, [data] if isinstance(data, bytes) else data)
        os.chmod(temp, 0o666 & ~current_umask())  # mkstemp makes the file private (0600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_each(write: Callable[[bytes | memoryview], object], parts: Iterable[bytes | memoryview]) -> None:
    """Write the parts in order, streamed (a large trace never sits in memory whole): each on a
    thread while the next is made (the write releases the GIL), so that the file system's
    copy overlaps the formatting."""
    with ThreadPoolExecutor(1) as writer:
        pending: Future | None = None
        for part in parts:
            if pending is not None:
                pending.result()
            pending = writer.submit(write, part)
        if pending is not None:
            pending.result()


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
