"""Trust at the edges (issue 26): hostile input files. A trace or ``--device-spec`` nested too deep,
with a string or a number too long, is a one-line error in linear time and memory; what is not a
regular file (a FIFO, ``/dev/zero``, a symbolic link loop) is refused before it is opened, as a
report, as ``--device-spec`` and as an ``@file``; a file that is not a report says what it is."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asysstats.synth.writer import ReportWriter

from conftest import fingerprint, run_cli

MEMORY_LIMIT = 2 << 30  # bytes of address space a subprocess of these tests may take
WAIT_S = 15  # for a subprocess that must not hang
KERN_SUM = "hggc_ppu_kern_sum"
MAX_DEPTH, MAX_STRING, MAX_DIGITS = 100, 256 << 10, 1024  # the bounds of asysstats.core.json_bounds
EVENT = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
         "args": {"device": 0, "stream": 7, "correlation": 1}}


def asys(*args: object) -> subprocess.CompletedProcess:
    """``python -m asysstats ARGS`` in a subprocess of bounded memory; a hang fails the test."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    try:
        return subprocess.run([sys.executable, "-m", "asysstats", *map(str, args)], capture_output=True, text=True,
                              preexec_fn=limits, timeout=WAIT_S, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"asys {' '.join(map(str, args))} hung for {WAIT_S} s")


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def refused(run, *texts: str) -> None:
    """Exit 2, one line ``error: ...`` holding each text, no traceback."""
    code = run.returncode if hasattr(run, "returncode") else run.code
    err = run.stderr if hasattr(run, "stderr") else run.err
    assert (code, err.count("\n"), err.startswith("error: ")) == (2, 1, True), (code, err)
    assert "Traceback" not in err and all(text in err for text in texts), err


def untouched(path: Path, state: tuple[str, int], before: list[str], run, *texts: str) -> None:
    """The run refused with ``texts``, the report kept its bytes and time, nothing new in its folder."""
    refused(run, *texts)
    assert fingerprint(path) == state and listing(path.parent) == before


def trace_file(path: Path, text: bytes) -> tuple[Path, tuple[str, int], list[str]]:
    path.write_bytes(text)
    return path, fingerprint(path), listing(path.parent)


def small_report(path: Path) -> Path:
    path.parent.mkdir(exist_ok=True)
    writer = ReportWriter(path)
    writer.add("kernels", start=[0], end=[10], deviceId=[0], demangledName=[writer.string("k")])
    writer.close()
    return path


# -- Kineto traces: bounds on the JSON, linear time and memory ---------------------------------------------
@pytest.mark.parametrize("where, text, words", [
    ("in an event, 100,000 deep (200 KB)",  # was 24 GB of memory
     b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", f"nested deeper than {MAX_DEPTH} levels"),
    ("in a member before traceEvents",  # was a RecursionError (exit 3)
     b'{"deviceProperties": ' + b"[" * 1000 + b"]" * 1000 + b', "traceEvents": []}', "nested deeper than"),
    ("in a member after traceEvents",  # was a RecursionError (exit 3)
     b'{"traceEvents": [], "x": ' + b"{\"a\": " * 1000 + b"1" + b"}" * 1000 + b"}", "nested deeper than"),
    ("a 64 MB string",  # was 27 s
     b'{"traceEvents": [{"ph": "X", "name": "' + b"a" * (64 << 20) + b'"}]}',
     f"string longer than {MAX_STRING >> 10} KiB"),
    ("a 5,000-digit number",  # was a segmentation fault (ijson, Python's int digit limit)
     b'{"traceEvents": [{"ph": "X", "ts": ' + b"7" * 5000 + b"}]}", f"number of more than {MAX_DIGITS:,} digits"),
])
def test_a_hostile_trace_is_one_line_in_linear_time_and_memory(tmp_path, where, text, words):
    path, state, before = trace_file(tmp_path / "hostile.json", text)
    started = time.monotonic()
    run = asys("stats", "-r", KERN_SUM, path)
    assert time.monotonic() - started < 10, where
    refused(run, "hostile.json: ", words)
    assert fingerprint(path) == state and listing(tmp_path) == before


def test_the_bounds_hold_in_a_gzip_trace_on_its_uncompressed_bytes(tmp_path):
    text = gzip.compress(b'{"traceEvents": [' + b"[" * 50_000 + b"]" * 50_000 + b"]}")
    path, state, before = trace_file(tmp_path / "deep.json.gz", text)
    untouched(path, state, before, run_cli("stats", "-r", KERN_SUM, path), "deep.json.gz: JSON nested deeper")


def test_brackets_quotes_and_digits_inside_strings_are_not_structure(tmp_path):
    """No false refusal: a long name (under the bound) full of brackets, escaped quotes, backslashes and digits."""
    name = "k<" + "[{" * 300 + '\\"' * 100 + "\\\\" * 50 + "7" * 5000 + ">" + "x" * (MAX_STRING - 20_000)
    event = {**EVENT, "name": name}
    path, state, before = trace_file(tmp_path / "ok.json", json.dumps({"traceEvents": [event]}).encode())
    run = run_cli("stats", "-r", KERN_SUM, "--format", "json", path)
    assert run.code == 0 and "Traceback" not in run.err, run.err
    assert json.loads(run.out)[0]["Name"] == name and json.loads(run.out)[0]["Instances"] == 1
    assert fingerprint(path) == state and listing(tmp_path) == before


def test_top_level_members_are_read_in_linear_time(tmp_path):
    """Thousands of nested "traceEvents" keys before the real one, and thousands of array members
    after it: each was tried as the array's end with a parse of the rest (quadratic, hours)."""
    nested = ", ".join(['{"traceEvents": 1}'] * 4000)
    pad = ", ".join(['"' + "p" * 1000 + '"'] * 4000)
    after = ", ".join(['"x": [1]'] * 100_000)
    text = (f'{{"schemaVersion": 1, "pad": [{pad}], "noise": [{nested}], "traceEvents": [{json.dumps(EVENT)}], '
            f'{after}, "baseTimeNanoseconds": 1700000000000000000}}')
    path, state, before = trace_file(tmp_path / "members.json", text.encode())
    started = time.monotonic()
    run = asys("stats", "-r", KERN_SUM, "--format", "json", path)
    assert time.monotonic() - started < 10
    assert (run.returncode, json.loads(run.stdout)[0]["Instances"], "Traceback" in run.stderr) == (0, 1, False)
    from asysstats.reading.kineto.report import KinetoReport  # this layout's

    metadata = KinetoReport(path, cache=False).metadata
    assert (metadata["schemaVersion"], metadata["baseTimeNanoseconds"]) == (1, 1700000000000000000)
    assert fingerprint(path) == state and listing(tmp_path) == before


# -- not a regular file: refused before it is opened, in each of the three places ---------------------------
def special(tmp_path: Path, kind: str) -> Path:
    """A FIFO, ``/dev/zero`` behind a report's name, or a symbolic link loop."""
    path = tmp_path / "input.sqlite"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        (tmp_path / "other.sqlite").symlink_to(path)
        path.symlink_to(tmp_path / "other.sqlite")
    return path


MESSAGES = {"fifo": "is a FIFO (named pipe), not a regular file",
            "device": "is a character device, not a regular file", "loop": "symbolic link loop"}


@pytest.mark.parametrize("kind", ["fifo", "device", "loop"])
@pytest.mark.parametrize("place", ["report", "--device-spec", "@file"])
def test_what_is_not_a_regular_file_is_refused_before_it_is_opened(tmp_path, kind, place):
    """A FIFO hung forever, /dev/zero was read until memory ran out, a loop was 'no such file'."""
    path = special(tmp_path, kind)
    report = small_report(tmp_path / "good" / "report.asysrep")
    state, before = fingerprint(report), listing(tmp_path)
    args = {"report": ("stats", "-r", KERN_SUM, path),
            "--device-spec": ("stats", "-r", KERN_SUM, "--device-spec", path, report),
            "@file": ("stats", "-r", KERN_SUM, "--kernel-group-config", f"@{path}", report)}[place]
    run = asys(*args) if kind != "loop" else run_cli(*args)
    label = {"report": f"{path}: ", "--device-spec": f"--device-spec {path}: ",
             "@file": f"--kernel-group-config @{path}: "}[place]
    refused(run, label + MESSAGES[kind])
    assert fingerprint(report) == state and listing(tmp_path) == before and listing(report.parent) == [report.name]


def test_dev_zero_given_directly_is_refused(tmp_path):
    report = small_report(tmp_path / "report.asysrep")
    state = fingerprint(report)
    refused(asys("stats", "/dev/zero"), "/dev/zero: is a character device")
    refused(asys("stats", "--device-spec", "/dev/zero", report), "--device-spec /dev/zero: is a character device")
    assert fingerprint(report) == state and listing(tmp_path) == ["report.asysrep"]


def test_a_dangling_link_and_a_huge_at_file_are_one_line(tmp_path):
    report = small_report(tmp_path / "report.asysrep")
    (tmp_path / "gone.json").symlink_to(tmp_path / "missing.json")
    huge = tmp_path / "groups.txt"
    with huge.open("wb") as handle:
        handle.truncate(17 << 20)  # sparse: no disk used
    state, before = fingerprint(report), listing(tmp_path)
    untouched(report, state, before, run_cli("stats", tmp_path / "gone.json"),
              "gone.json: symbolic link to a missing file")
    untouched(report, state, before, run_cli("stats", "--kernel-group-config", f"@{huge}", report),
              "groups.txt: larger than 16 MiB")


def test_a_device_spec_nested_too_deep_is_one_line(tmp_path):
    """Was a RecursionError from json (exit 3)."""
    report = small_report(tmp_path / "report.asysrep")
    spec = tmp_path / "devices.json"
    spec.write_text("[" * 100_000 + "]" * 100_000)
    state, before = fingerprint(report), listing(tmp_path)
    untouched(report, state, before, run_cli("stats", "-r", KERN_SUM, "--device-spec", spec, report),
              f"--device-spec {spec}: JSON nested deeper than {MAX_DEPTH} levels at byte {MAX_DEPTH:,}")


# -- what a file that is not a report is -----------------------------------------------------------------
@pytest.mark.parametrize("name, content, words", [
    ("list.json", b"[1, 2]", "list.json: is JSON but not a PyTorch profiler trace (its first trace event is a number"),
    ("events.json", b'{"traceEvents": ["x"]}', "events.json: is JSON but not a PyTorch profiler trace"),
    ("text.json", b'"x"', "text.json: is JSON but not a PyTorch profiler trace, which is an object with a traceEvents"),
    ("wide.json", '{"traceEvents": []}'.encode("utf-16"), "wide.json: is UTF-16 text, not a report; save a PyTorch "
                                                          "profiler trace as UTF-8"),
    ("wide_no_bom.json", '{"traceEvents": []}'.encode("utf-16-le"), "wide_no_bom.json: is UTF-16 text"),
    ("my run.nsys-rep", b"\x00NSYS binary",
     "my run.nsys-rep: an Nsight Systems report, read as its SQLite export; make that with: "
     "nsys export --type sqlite -o 'my run.sqlite' 'my run.nsys-rep'"),
    ("report.nsys-rep", b"NSYS binary", "nsys export --type sqlite -o report.sqlite report.nsys-rep"),
])
def test_a_file_that_is_not_a_report_says_what_it_is(tmp_path, name, content, words):
    path, state, before = trace_file(tmp_path / name, content)
    run = run_cli("stats", "-r", KERN_SUM, path)
    untouched(path, state, before, run, words)
    assert "not an SQLite database" not in run.err or name.endswith(".nsys-rep")
    assert "asys export" not in run.err


def test_an_ordinary_trace_of_many_chunks_reads_whole(tmp_path):
    """No false refusal over many read chunks: 20,000 ordinary events, each one a kernel."""
    events = [{**EVENT, "ts": 10 * k, "args": {**EVENT["args"], "correlation": k, "Input Dims": [[4, 8], [8, 2]]}}
              for k in range(20_000)]
    path, state, before = trace_file(tmp_path / "big.json", json.dumps({"traceEvents": events}).encode())
    run = run_cli("stats", "-r", KERN_SUM, "--format", "json", "--no-cache", path)
    assert (run.code, json.loads(run.out)[0]["Instances"], "Traceback" in run.err) == (0, 20_000, False), run.err
    assert fingerprint(path) == state and listing(tmp_path) == before
