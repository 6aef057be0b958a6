"""A progress line on stderr for work that takes longer than about a second.

Shown only when stderr is a terminal (never in pipelines, files or tests): after
``DELAY_S`` a line ``asys: <what> ... 3.2 s`` is redrawn in place every few tenths of a
second by a daemon thread, and erased when the work is done.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, TextIO

DELAY_S = 1.0
REFRESH_S = 0.25


@contextmanager
def progress(what: str, stream: TextIO | None = None) -> Iterator[None]:
    """Show ``what`` with the elapsed time while the body runs, if it runs long."""
    stream = stream or sys.stderr
    if not stream.isatty():
        yield
        return
    done = threading.Event()
    shown = threading.Event()
    begin = time.monotonic()

    def draw() -> None:
        if done.wait(DELAY_S):
            return
        while not done.is_set():
            stream.write(f"\r\x1b[2Kasys: {what} ... {time.monotonic() - begin:.1f} s")
            stream.flush()
            shown.set()
            done.wait(REFRESH_S)

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if shown.is_set():
            stream.write("\r\x1b[2K")
            stream.flush()
