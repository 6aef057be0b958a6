"""Trust at the edges (issue 26): output files. Two results never share a file name, two runs
at once never both succeed on one output, a signal or an OS error leaves nothing behind and
is a one-line error (exit 2, a signal 128 + its number), stale temporaries of dead runs are
swept, and ``asys sample`` is bounded and leaves no partial report."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from asysstats.cli import runs
from asysstats.core import files
from asysstats.core.errors import AsysError
from asysstats.core.files import write_atomically, write_output
from asysstats.synth import generator
from asysstats.synth.writer import ReportWriter
from asysstats.writing.outputs import report_labels

from conftest import fingerprint, run_cli

KERN_SUM = "hggc_ppu_kern_sum"
MEMORY_LIMIT = 3 << 30  # bytes of address space a subprocess of these tests may take
WAIT_S = 30  # for a subprocess to reach the state a test signals it in, or to finish


def small_report(path: Path, name: str = "plain") -> Path:
    """A report of three kernels: ``name`` (its base name ``short``, mangled ``_Z1k``) twice, ``other`` once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = ReportWriter(path)
    names = writer.strings([f"{name}(int)", "short", "_Z1k", "other"])
    writer.add("kernels", start=[0, 10, 30], end=[5, 20, 60], deviceId=0,
               demangledName=[names[0], names[0], names[3]], shortName=[names[1], names[1], names[3]],
               mangledName=[names[2], names[2], names[3]])
    writer.close()
    return path


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def names_in(csv: Path) -> list[str]:
    """The Name column of a kernel summary's CSV."""
    return [line.split(",")[-2].strip('"') for line in csv.read_text().splitlines()[1:]]


def one_line_error(run, text: str) -> None:
    """Exit 2, one line on stderr holding ``text``, no traceback, nothing on stdout."""
    assert (run.code, run.out, run.err.count("\n")) == (2, "", 1), run.err
    assert run.err.startswith("error: ") and text in run.err and "Traceback" not in run.err, run.err


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A report a trace rule takes about a second on: still running when a test signals it."""
    path = tmp_path_factory.mktemp("big") / "big.asysrep"
    assert run_cli("sample", path, "--scale", "20").code == 0
    return path


def asys(*args: object, env: dict[str, str] | None = None, file_limit: int | None = None, **popen) -> subprocess.Popen:
    """``python -m asysstats ARGS`` in a subprocess of bounded memory (and file size, with
    SIGXFSZ left at its default: the CLI turns it into the EFBIG error itself)."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}
    return subprocess.Popen([sys.executable, "-m", "asysstats", *map(str, args)], env={**os.environ, **(env or {})},
                            preexec_fn=limits, text=True, **streams)


def signalled_when(process: subprocess.Popen, appeared, signum: int) -> tuple[int, str]:
    """Send ``signum`` once ``appeared()`` (the run is mid-way), then its exit status and stderr."""
    deadline = time.monotonic() + WAIT_S
    while not appeared():
        assert process.poll() is None, f"finished before it was signalled: {process.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.001)
    process.send_signal(signum)
    _, err = process.communicate(timeout=WAIT_S)
    return process.returncode, err


def temporaries(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if files.TEMPORARY.fullmatch(name)]


def dead_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


# -- two results, one file name -----------------------------------------------------------------
def test_reports_of_one_name_in_two_folders_get_one_file_each(tmp_path):
    ranks = [small_report(tmp_path / f"rank{k}" / "report.sqlite", f"kernel{k}") for k in range(2)]
    before = [fingerprint(p) for p in ranks]
    (tmp_path / "out").mkdir()
    run = run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", tmp_path / "out" / "p", *ranks)
    assert (run.code, run.err) == (0, ""), run.err
    assert listing(tmp_path / "out") == [f"p_rank0_report_{KERN_SUM}.csv", f"p_rank1_report_{KERN_SUM}.csv"]
    assert names_in(tmp_path / "out" / f"p_rank1_report_{KERN_SUM}.csv") == ["other", "kernel1(int)"]
    assert names_in(tmp_path / "out" / f"p_rank0_report_{KERN_SUM}.csv") == ["other", "kernel0(int)"]
    assert [fingerprint(p) for p in ranks] == before


def test_report_labels_take_the_fewest_folders_that_tell_reports_apart(tmp_path):
    paths = [tmp_path / "a" / "x" / "report.sqlite", tmp_path / "b" / "x" / "report.sqlite",
             tmp_path / "a" / "other.sqlite", tmp_path / "c" / "y" / "report.json"]
    assert report_labels(paths) == ["a_x_report", "b_x_report", "other", "c_y_report"]
    assert report_labels([tmp_path / "rank0" / "r.db", tmp_path / "rank1" / "r.db"]) == ["rank0_r", "rank1_r"]
    assert report_labels([tmp_path / "one.sqlite", tmp_path / "one.sqlite"]) == ["one", "one"]  # refused later


def test_one_rule_twice_with_other_options_numbers_its_files(tmp_path):
    report = small_report(tmp_path / "in" / "r.sqlite")
    run = run_cli("stats", "-r", f"{KERN_SUM}:base,{KERN_SUM}:mangled", "--format", "csv", "-o", tmp_path / "p", report)
    assert (run.code, run.err) == (0, ""), run.err
    assert listing(tmp_path) == ["in", f"p_{KERN_SUM}_1.csv", f"p_{KERN_SUM}_2.csv"]
    assert names_in(tmp_path / f"p_{KERN_SUM}_1.csv") == ["other", "plain"]
    assert names_in(tmp_path / f"p_{KERN_SUM}_2.csv") == ["other", "_Z1k"]
    # to other outputs, or in other formats, the names stay plain
    run = run_cli("stats", "-r", f"{KERN_SUM}:base,{KERN_SUM}:mangled", "--format", "csv", "--format", "json",
                  "-o", tmp_path / "q", report)
    assert run.code == 0 and sorted(p.name for p in tmp_path.glob("q_*")) == [f"q_{KERN_SUM}.csv", f"q_{KERN_SUM}.json"]


@pytest.mark.parametrize("how", ["same report twice", "one folder written two ways", "output is a report"])
def test_results_that_would_still_share_a_file_are_refused_before_any_work(tmp_path, monkeypatch, how):
    from asysstats.api import reports as session

    report = small_report(tmp_path / "r.sqlite")
    monkeypatch.setattr(session, "run_rule", lambda *a: pytest.fail("a rule ran"))
    if how == "same report twice":
        args = ("-r", KERN_SUM, "--format", "csv", "-o", tmp_path / "p", report, report)
        message = f"{tmp_path}/p_r_{KERN_SUM}.csv would hold two results, {KERN_SUM} on {report} and {KERN_SUM} on"
    elif how == "one folder written two ways":
        monkeypatch.chdir(tmp_path)
        args = ("-r", f"{KERN_SUM}:base,{KERN_SUM}:mangled", "--format", "csv", "-o", "p", "-o", "./p", report)
        message = f"p_{KERN_SUM}.csv would hold two results"
    else:
        report = report.rename(tmp_path / f"p_{KERN_SUM}.json")  # an SQLite report, read by its first bytes
        args = ("-r", KERN_SUM, "--format", "json", "-o", tmp_path / "p", "-f", "true", report)
        message = f"would overwrite the report {report}"
    run = run_cli("stats", *args)
    one_line_error(run, message)
    assert listing(tmp_path) == [report.name]


def test_compare_names_reports_of_one_stem_by_their_folders(tmp_path, monkeypatch):
    reports = []
    for seed in (1, 2):
        reports.append(tmp_path / f"rank{seed}" / "report.asysrep")
        reports[-1].parent.mkdir()
        generator.write_sample(reports[-1], seed=seed)
    monkeypatch.chdir(tmp_path)
    run = run_cli("compare", *reports)
    assert run.code == 0, run.err
    written = sorted(p.name for p in tmp_path.glob("*.csv"))
    assert written and all(name.startswith("rank1_report_vs_rank2_report_") for name in written)
    assert "  rank1_report_vs_rank2_report_ppu_kernel_summary_compare.csv" in run.out.splitlines()
    run = run_cli("compare", *reports, "-o", tmp_path / "rank1" / "report")
    assert run.code == 0
    assert listing(tmp_path / "rank1") == ["report.asysrep"] + [f"report_{name[29:]}" for name in written]


# -- two runs at once -------------------------------------------------------------------------------
def test_a_file_that_appears_while_writing_is_kept_and_the_run_fails(tmp_path):
    target = tmp_path / "out.csv"

    def parts():
        yield b"mine, part 1\n"
        target.write_text("the other run's\n")  # it finished first
        yield b"mine, part 2\n"

    with pytest.raises(AsysError, match=f"^{target} exists; use -f true to overwrite it$"):
        write_output(target, parts(), force=False)
    assert target.read_text() == "the other run's\n" and listing(tmp_path) == ["out.csv"]
    write_atomically(target, b"forced\n", force=True)
    assert target.read_text() == "forced\n" and listing(tmp_path) == ["out.csv"]


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_without_hard_links_creation_stays_exclusive(tmp_path, monkeypatch):
    def no_links(*args):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    target = tmp_path / "out.csv"
    write_output(target, [b"a\n", b"b\n"], force=False)
    assert target.read_text() == "a\nb\n" and oct(target.stat().st_mode & 0o777) == oct(0o666 & ~umask())
    target.unlink()

    def parts():
        yield b"mine\n"
        target.write_text("theirs\n")

    with pytest.raises(AsysError, match="exists; use -f true"):
        write_output(target, parts(), force=False)
    assert target.read_text() == "theirs\n" and listing(tmp_path) == ["out.csv"]


def test_two_runs_at_once_on_one_output_one_wins_one_is_told(big, tmp_path):
    out = tmp_path / "t"
    both = [asys("stats", "-r", "hggc_kern_exec_trace", "--format", "json", "-o", out, "--no-cache", big)
            for _ in range(2)]
    done = sorted((p.wait(timeout=WAIT_S * 2), p.stderr.read()) for p in both)
    target = f"{out}_hggc_kern_exec_trace.json"
    assert done == [(0, ""), (2, f"error: {target} exists; use -f true to overwrite it\n")]
    assert listing(tmp_path) == [Path(target).name] and Path(target).read_text().endswith("}\n]\n")


# -- signals ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_while_writing_leaves_no_temporary(big, tmp_path, signum):
    before = fingerprint(big)
    run = asys("stats", "-r", "hggc_kern_exec_trace", "--format", "json", "-o", tmp_path / "t", "--no-cache", big)
    code, err = signalled_when(run, lambda: temporaries(tmp_path), signum)
    assert (code, err) == (128 + signum, f"aborted ({signal.Signals(signum).name})\n")
    assert listing(tmp_path) == [] and fingerprint(big) == before


def test_a_stop_signal_removes_the_private_copy_of_a_wal_report(big, tmp_path):
    report = tmp_path / "wal" / "report.sqlite"
    report.parent.mkdir()
    report.write_bytes(big.read_bytes())
    with sqlite3.connect(report) as con:
        con.execute("PRAGMA journal_mode=WAL")
    before = listing(report.parent), fingerprint(report)
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = asys("stats", "-r", "hggc_kern_exec_trace", "--format", "json", "-o", tmp_path / "t", "--no-cache", report,
               env={"TMPDIR": str(temp)})
    code, err = signalled_when(run, lambda: os.listdir(temp), signal.SIGTERM)
    assert (code, err) == (143, "aborted (SIGTERM)\n")
    assert listing(temp) == [] and listing(tmp_path) == ["tmp", "wal"]
    assert (listing(report.parent), fingerprint(report)) == before


def test_a_stop_signal_while_a_spreadsheet_is_built_removes_its_sheet_file(big, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = asys("stats", "-r", "hggc_kern_exec_trace", "--format", "xlsx", "-o", tmp_path / "t", "--no-cache", big,
               env={"TMPDIR": str(temp)})
    code, err = signalled_when(run, lambda: os.listdir(temp), signal.SIGTERM)  # openpyxl's sheet, rows written
    assert (code, err) == (143, "aborted (SIGTERM)\n") and listing(temp) == [] and listing(tmp_path) == ["tmp"]


def test_a_stop_signal_during_asys_sample_leaves_no_partial_report(tmp_path):
    run = asys("sample", tmp_path / "s.asysrep", "--scale", "20")
    code, err = signalled_when(run, lambda: temporaries(tmp_path), signal.SIGTERM)
    assert (code, err) == (143, "aborted (SIGTERM)\n") and listing(tmp_path) == []


def test_stale_temporaries_of_dead_runs_are_swept_and_no_others(tmp_path, monkeypatch):
    report = small_report(tmp_path / "in" / "r.sqlite")
    out = tmp_path / "out"
    out.mkdir()
    old = time.time() - files.STALE_AFTER_S - 60
    dead, alive = dead_pid(), os.getpid()
    made = {f".x.csv.asysstats-{dead}-abcdefgh.tmp": old,    # a dead run's, old: swept
            f".x.csv.asysstats-{dead}-ijklmnop.tmp": None,   # a dead run's, recent: it may be another host's
            f".x.csv.asysstats-{alive}-qrstuvwx.tmp": old,   # a live run's: kept
            ".notes.tmp": old, f"x.asysstats-{dead}-abcdefgh.tmp": old}  # not ours
    for name, mtime in made.items():
        (out / name).write_text("partial")
        if mtime:
            os.utime(out / name, (mtime, mtime))
    temp = tmp_path / "tmp"
    for name in (f"asysstats-{dead}-abcdefgh", f"asysstats-{alive}-abcdefgh", f"asysstats-{dead}-recent00"):
        (temp / name).mkdir(parents=True)
        (temp / name / "r.sqlite").write_text("copy")
        if "recent" not in name:
            os.utime(temp / name, (old, old))
    assert run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", out / "p", report).code == 0
    assert listing(out) == sorted([f"p_{KERN_SUM}.csv"] + list(made)[1:])
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with sqlite3.connect(report) as con:
        con.execute("PRAGMA journal_mode=WAL")  # read from a private copy in the temp folder
    assert run_cli("stats", "-r", KERN_SUM, report).code == 0
    assert {name for name in listing(temp) if "abcdefgh" in name or "recent" in name} == {
        f"asysstats-{dead}-recent00", f"asysstats-{alive}-abcdefgh"}


# -- OS errors on outputs --------------------------------------------------------------------------------
@pytest.mark.parametrize("code, text", [(errno.ENOSPC, "No space left on device"), (errno.EFBIG, "File too large")])
def test_a_full_disk_or_too_large_file_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, code, text):
    report = small_report(tmp_path / "in" / "r.sqlite")

    def write_some(write, parts):
        write(next(iter(parts)))
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files, "write_each", write_some)
    for command in (("stats", "-r", KERN_SUM, "--format", "xlsx", "-o", tmp_path / "p", report),
                    ("compare", report, report, "-o", tmp_path / "p")):
        run = run_cli(*command)
        one_line_error(run, f"error: cannot write {tmp_path}/p_")
        assert run.err.endswith(f".{'xlsx' if command[0] == 'stats' else 'csv'}: {text}\n")
        assert listing(tmp_path) == ["in"]


def test_a_file_size_limit_is_an_error_not_a_killed_process(big, tmp_path):
    run = asys("stats", "-r", "hggc_kern_exec_trace", "--format", "csv", "-o", tmp_path / "t", "--no-cache", big,
               file_limit=1 << 20)
    _, err = run.communicate(timeout=WAIT_S)
    assert (run.returncode, err) == (2, f"error: cannot write {tmp_path}/t_hggc_kern_exec_trace.csv: File too large\n")
    assert listing(tmp_path) == []
    run = asys("sample", tmp_path / "s.asysrep", file_limit=1 << 16)
    _, err = run.communicate(timeout=WAIT_S)
    assert run.returncode == 2 and err.count("\n") == 1
    assert err.startswith(f"error: cannot write {tmp_path}/s.asysrep: ")
    assert listing(tmp_path) == []


def test_a_full_console_is_one_line_exit_2(tmp_path):
    report = small_report(tmp_path / "r.sqlite")
    with open("/dev/full", "w") as full:
        run = asys("stats", "-r", KERN_SUM, report, stdout=full)
        _, err = run.communicate(timeout=WAIT_S)
    assert (run.returncode, err) == (2, "error: cannot write the standard output: No space left on device\n")


def test_a_read_only_folder_is_refused_before_the_work_and_while_writing(tmp_path, monkeypatch):
    report = small_report(tmp_path / "in" / "r.sqlite")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == tmp_path else real_access(path, mode))
    one_line_error(run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", tmp_path / "p", report),
                   f"cannot write {tmp_path}/p_{KERN_SUM}.csv: its folder {tmp_path} is not writable")
    monkeypatch.setattr(os, "access", real_access)

    real_open = os.open

    def read_only(path, *args, **kwargs):
        if Path(path).parent == tmp_path:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)  # the file system turned read-only mid-run
    one_line_error(run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", tmp_path / "p", report),
                   f"cannot write {tmp_path}/p_{KERN_SUM}.csv: Read-only file system")
    assert listing(tmp_path) == ["in"]


def test_an_output_folder_removed_mid_run_is_one_line(tmp_path, monkeypatch):
    report = small_report(tmp_path / "r.sqlite")
    out = tmp_path / "out"
    out.mkdir()
    real = runs.render_parts

    def removed_after_the_first_part(*args):
        parts = real(*args)
        yield next(parts)
        shutil.rmtree(out)  # its temporary file with it
        yield from parts

    monkeypatch.setattr(runs, "render_parts", removed_after_the_first_part)
    one_line_error(run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", out / "p", report),
                   f"cannot write {out}/p_{KERN_SUM}.csv: No such file or directory")
    assert listing(tmp_path) == ["r.sqlite"]
    out.mkdir()
    monkeypatch.setattr(runs, "render_parts", lambda *args: out.rmdir() or real(*args))  # before the file is begun
    one_line_error(run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", out / "p", report),
                   f"cannot write {out}/p_{KERN_SUM}.csv: its folder {out} does not exist")
    assert listing(tmp_path) == ["r.sqlite"]


@pytest.mark.parametrize("force", ["false", "true"])
def test_a_folder_where_the_file_goes_is_refused_with_or_without_force(tmp_path, force):
    report = small_report(tmp_path / "r.sqlite")
    (tmp_path / f"p_{KERN_SUM}.csv").mkdir()
    one_line_error(run_cli("stats", "-r", KERN_SUM, "--format", "csv", "-o", tmp_path / "p", "-f", force, report),
                   f"error: cannot write {tmp_path}/p_{KERN_SUM}.csv: it is a directory\n")
    (tmp_path / "s.asysrep").mkdir()
    one_line_error(run_cli("sample", tmp_path / "s.asysrep", "-f", force), "s.asysrep' is a directory")
    with pytest.raises(AsysError, match="s.asysrep: it is a directory$"):
        generator.write_sample(tmp_path / "s.asysrep", force=force == "true")
    assert listing(tmp_path) == [f"p_{KERN_SUM}.csv", "r.sqlite", "s.asysrep"]
    assert listing(tmp_path / f"p_{KERN_SUM}.csv") == listing(tmp_path / "s.asysrep") == []


# -- asys sample ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale, message", [
    (10 ** 12, "--scale must be an integer from 1 to 10000, got '1000000000000'"),
    ("9" * 5000, "--scale must be an integer from 1 to 10000, got '999"),
    (0, "--scale must be an integer from 1 to 10000, got '0'"),
])
def test_absurd_scales_are_refused_before_any_work(tmp_path, monkeypatch, scale, message):
    monkeypatch.setattr(generator, "build", lambda *a: pytest.fail("the sample was built"))
    run = run_cli("sample", tmp_path / "s.asysrep", "--scale", scale)
    one_line_error(run, message)
    assert len(run.err) < 200 and listing(tmp_path) == []


def test_a_sample_the_disk_or_memory_cannot_hold_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(generator, "build", lambda *a: pytest.fail("the sample was built"))
    monkeypatch.setattr(generator.shutil, "disk_usage", lambda path: SimpleNamespace(free=5_000_000))
    one_line_error(run_cli("sample", tmp_path / "s.asysrep", "--scale", "100"),
                   f"--scale 100 makes a report of about 90 MB; {tmp_path} has 5 MB free")
    monkeypatch.setattr(generator, "MEMORY_PER_SCALE", 1 << 50)
    one_line_error(run_cli("sample", tmp_path / "s.asysrep"), "--scale 1 needs about 1,125,899.9 GB of memory")
    assert listing(tmp_path) == []


def test_a_failed_sample_leaves_no_partial_report_and_keeps_the_old_one(tmp_path, monkeypatch):
    out = tmp_path / "s.asysrep"
    out.write_text("an older report")

    def full(self):
        self.path.write_bytes(b"half a report")
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ReportWriter, "close", full)
    one_line_error(run_cli("sample", out, "-f", "true"), f"cannot write {out}: database or disk is full")
    assert listing(tmp_path) == ["s.asysrep"] and out.read_text() == "an older report"
    out.unlink()
    monkeypatch.undo()

    def other_run_first(self, real=ReportWriter.close):
        real(self)
        out.write_text("the other run's")

    monkeypatch.setattr(ReportWriter, "close", other_run_first)
    one_line_error(run_cli("sample", out), f"{out} exists; use -f true to overwrite it")
    assert listing(tmp_path) == ["s.asysrep"] and out.read_text() == "the other run's"


def test_the_temp_folder_is_found_with_stop_signals_held(tmp_path, monkeypatch):
    """Python finds the temp folder by creating and removing a probe file: a stop signal waits
    until it is removed (a signal in between left a file like '62w45xpq' in TMPDIR)."""
    from asysstats.cli import settle_temp_folder

    caught = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: caught.append(signum))

    def probe() -> str:
        signal.raise_signal(signal.SIGTERM)
        assert caught == []  # held while the probe file exists
        return str(tmp_path)

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_get_default_tempdir", probe)
    try:
        settle_temp_folder()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert caught == [signal.SIGTERM] and tempfile.gettempdir() == str(tmp_path)


def test_a_stop_signal_another_thread_receives_waits_for_the_hold_too():
    """The kernel hands a process's signal to any thread not blocking it (connectorx's own threads):
    inside stop_signals_held the CLI's handler, which Python runs in the main thread, puts the signal
    off until the hold ends (an openpyxl sheet file made but not yet registered was left in TMPDIR)."""
    from asysstats.cli import Stopped, stop, stop_signals_unwind

    release = threading.Event()
    receiver = threading.Thread(target=release.wait)  # a thread with the stop signals unblocked
    receiver.start()
    stopped_inside = False
    try:
        with pytest.raises(Stopped):
            with stop_signals_unwind(), files.stop_signals_held():
                assert signal.getsignal(signal.SIGTERM) is stop
                os.kill(os.getpid(), signal.SIGTERM)  # blocked here: the receiver takes it
                for _ in range(100):  # the main thread runs Python's handler at once: it waits instead
                    time.sleep(0.001)
                stopped_inside = True
        assert stopped_inside
    finally:
        release.set()
        receiver.join()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
