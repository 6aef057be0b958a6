"""The progress line: only on a terminal, only for slow work, erased afterwards."""

from __future__ import annotations

import io
import time

from asysstats import progress as progress_module
from asysstats.progress import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_shown_when_stderr_is_not_a_terminal():
    stream = io.StringIO()
    with progress("work", stream):
        time.sleep(0.05)
    assert stream.getvalue() == ""


def test_fast_work_shows_nothing_on_a_terminal():
    stream = Terminal()
    with progress("work", stream):
        pass
    assert stream.getvalue() == ""


def test_slow_work_shows_elapsed_time_then_erases_it(monkeypatch):
    monkeypatch.setattr(progress_module, "DELAY_S", 0.01)
    monkeypatch.setattr(progress_module, "REFRESH_S", 0.01)
    stream = Terminal()
    with progress("hggc_ppu_kern_sum on r.asysrep", stream):
        time.sleep(0.1)
    text = stream.getvalue()
    assert "asys: hggc_ppu_kern_sum on r.asysrep ... " in text and text.endswith("\r\x1b[2K")
