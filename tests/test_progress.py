"""The progress line: only on a terminal, only for slow work, erased afterwards."""

from __future__ import annotations

import io
import time
from contextlib import contextmanager
from pathlib import Path

from asysstats.cli import progress as progress_module
from asysstats.cli import runs
from asysstats.cli.progress import progress

from conftest import run_cli

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"


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


def test_rules_and_file_writes_are_the_work_shown(monkeypatch, tmp_path):
    """A rule's computation and the writing of a file (a trace's CSV takes seconds) show the
    progress line; output to the console does not (the line would mix with it)."""
    shown = []

    @contextmanager
    def recorded(what, stream=None):
        shown.append(what)
        yield

    monkeypatch.setattr(runs, "progress", recorded)
    out = tmp_path / "run"
    assert run_cli("stats", "-r", "osrt_sum", "--format", "csv", "-o", out, SAMPLE).code == 0
    assert shown == ["osrt_sum on sample.asysrep", f"writing {out}_osrt_sum.csv"]
    shown.clear()
    assert run_cli("stats", "-r", "osrt_sum", SAMPLE).code == 0
    assert shown == ["osrt_sum on sample.asysrep"]
