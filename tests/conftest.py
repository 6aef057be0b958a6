"""Shared test helpers: running the CLI in-process, building small reports, the corpus."""

from __future__ import annotations

import hashlib
import io
import os
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from asysstats.cli import main
from asysstats.synth.writer import ReportWriter

SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
REAL_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real"  # a small part of it, in the repository
CORPUS = SHARED_CORPUS if SHARED_CORPUS.is_dir() else REAL_FIXTURES
NSYS_CORPUS = CORPUS / "nsys"
NSYS_FILES = sorted(NSYS_CORPUS.glob("*.sqlite")) if NSYS_CORPUS.is_dir() else []


@dataclass
class Run:
    code: int
    out: str
    err: str


REPORT_SUFFIXES = (".asysrep", ".sqlite", ".sqlite3", ".db", ".json", ".gz")


def run_cli(*args: str | os.PathLike) -> Run:
    """Run ``asys`` in-process; the exit status, stdout and stderr. Every report given is
    checked to be untouched afterwards (bytes and modification time), whatever the outcome."""
    writes_report = args and args[0] == "sample"  # `asys sample OUT` writes its argument
    reports = [] if writes_report else [Path(a) for a in args
                                        if str(a).endswith(REPORT_SUFFIXES) and Path(a).is_file()]
    before = {path: fingerprint(path) for path in reports}
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    for path, state in before.items():
        assert fingerprint(path) == state, f"{path} was modified by asys {' '.join(map(str, args))}"
    return Run(code, out.getvalue(), err.getvalue())


def fingerprint(path: Path) -> tuple[str, int]:
    """Bytes and modification time of a report, to check that nothing touched it."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory):
    """Keep the columnar cache of test runs out of the user's cache folder."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture
def writer(tmp_path: Path):
    """A ReportWriter on a fresh path; call ``.close()`` and use ``.path``."""
    return ReportWriter(tmp_path / "report.asysrep")


CORPUS_ABSENT = pytest.mark.skip(reason="../shared/corpus/nsys is absent")


def corpus_params():
    """One pytest param per Nsight corpus file (one skipped param when absent)."""
    if not NSYS_FILES:
        return [pytest.param(None, marks=CORPUS_ABSENT)]
    return [pytest.param(p, id=p.stem) for p in NSYS_FILES]
