"""Where results go: the console, a command (``@cmd``), or files written atomically.

``%`` is the console; ``@cmd`` pipes into a shell command; ``.`` writes next to the report
as ``<report stem>_<rule>.<ext>``; anything else is ``<dir>/<prefix>`` and writes
``<dir>/<prefix>_<rule>.<ext>``. A run over several reports puts each report's label in its
files' names (``<dir>/<prefix>_<label>_<rule>.<ext>``): its stem, or, for reports of the same
stem, the stem after the fewest folders that tell them apart (``rank0/report.sqlite`` ->
``rank0_report``). A rule asked for more than once with the same output and format numbers
its files (``<rule>_<n>``: its n-th request). An output naming an ``.xlsx`` file
(``-o out/book.xlsx``) with the xlsx format is one workbook of a sheet per result. Two results that would still go to one file,
or a result that would go to a report being read, are an error before any work. Existing
files are kept unless overwriting is forced.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Iterable, Sequence

from asysstats.core.errors import AsysError, OutputClosed
from asysstats.core.files import check_output, write_each, write_output

CONSOLE = "console"
PIPE = "pipe"
FILE = "file"
BOOK = "workbook"  # an XLSX file that holds a sheet per result bound for it (``-o book.xlsx``)


@dataclass(frozen=True)
class Destination:
    kind: str
    target: str = ""
    key: str = ""  # what names the result among others of one stream (a JSON document's key)


def output_kind(output: str | None) -> str:
    """Whether ``output`` is the console, a command or files."""
    if output in (None, "", "%", "-"):
        return CONSOLE
    return PIPE if output.startswith("@") else FILE


def default_format(output: str | None) -> str:
    """The format of an output without ``--format``: CSV for files, aligned columns for the
    console and commands (streams a person usually reads: ``@less``)."""
    return "csv" if output_kind(output) == FILE else "column"


def destination(output: str | None, report: Path, rule: str, fmt: str, label: str = "") -> Destination:
    """Where ``output`` puts the result of ``rule`` on ``report`` (``label``: the report's, in
    a run that writes files for several, see :func:`report_labels`)."""
    if output is None or output_kind(output) == CONSOLE:
        return Destination(CONSOLE)
    if output.startswith("@"):
        command = output[1:].strip()
        if not command:
            raise AsysError("--output '@' needs a command after '@'")
        return Destination(PIPE, command)
    if output == ".":
        return Destination(FILE, str(report.parent / f"{report.stem}_{rule}.{fmt}"))
    directory, _, prefix = output.rpartition("/")
    folder = Path(directory or ".")
    if not folder.is_dir():
        raise AsysError(f"--output {output}: directory {folder} does not exist")
    if fmt == "xlsx" and prefix.lower().endswith(".xlsx"):  # one workbook: a sheet per result
        return Destination(BOOK, str(folder / prefix))
    name = "_".join(part for part in (prefix, label, rule) if part)
    return Destination(FILE, str(folder / f"{name}.{fmt}"))


def report_labels(reports: Sequence[Path]) -> list[str]:
    """The label each report gives its files in a run over several: its stem; reports of one
    stem are told apart by the fewest of their last folders that do, joined by ``_``
    (``a/x/report.sqlite``, ``b/x/report.sqlite`` -> ``a_x_report``, ``b_x_report``). Reports
    no folder tells apart (one given twice) keep their stem (:func:`distinct_files` refuses)."""
    paths = [Path(os.path.abspath(report)) for report in reports]
    labels = [path.stem for path in paths]
    for stem in {label for label in labels if labels.count(label) > 1}:
        same = [index for index, label in enumerate(labels) if label == stem]
        folders = [paths[index].parent.parts[1:] for index in same]  # without the root
        for depth in range(1, max(map(len, folders)) + 1):
            told = ["_".join(parts[-depth:] + (stem,)) for parts in folders]
            if len(set(told)) == len(same):
                for index, label in zip(same, told):
                    labels[index] = label
                break
    return labels


def numbered_rules(rules: Sequence[str], keys: Sequence[Hashable]) -> list[str]:
    """The name each request's files carry: its rule's, or ``<rule>_<n>`` (the n-th request of
    that rule) when another request of the rule has the same ``key`` (output and format)."""
    requests = Counter(zip(rules, keys))
    seen: Counter[str] = Counter()
    names = []
    for rule, key in zip(rules, keys):
        seen[rule] += 1
        names.append(f"{rule}_{seen[rule]}" if requests[rule, key] > 1 else rule)
    return names


def check_files(files: Sequence[tuple[Path, str]], reports: Sequence[Path], force: bool) -> None:
    """The files a run will write, checked before any work: distinct (:func:`distinct_files`),
    and each writable (:func:`~asysstats.core.files.check_output`)."""
    distinct_files(files, reports)
    for path, _ in files:
        check_output(path, force)


def distinct_files(files: Sequence[tuple[Path, str]], reports: Sequence[Path]) -> None:
    """An error when two results of a run would go to one file (one would be lost) or a result
    to a report the run reads; ``files``: each file and what it would hold."""
    reads = {os.path.realpath(report): report for report in reports}
    held: dict[str, str] = {}
    for path, what in files:
        key = os.path.realpath(path)
        if key in reads:
            raise AsysError(f"{path}: the output of {what} would overwrite the report {reads[key]}; give another -o")
        if key in held:
            raise AsysError(f"{path} would hold two results, {held[key]} and {what}; give each its own -o")
        held[key] = what


def deliver(content: str | bytes | Iterable[bytes | memoryview], dest: Destination, force: bool) -> None:
    """Write the content (text, bytes, or pieces of bytes written as they come) to ``dest``."""
    parts: Iterable[bytes | memoryview] = [content.encode("utf-8")] if isinstance(content, str) else \
        [content] if isinstance(content, bytes) else content
    if dest.kind == CONSOLE:
        try:
            sys.stdout.flush()
            out = getattr(sys.stdout, "buffer", None)
            if out is None:
                for part in parts:
                    sys.stdout.write(bytes(part).decode("utf-8", "replace"))
            else:
                write_each(out.write, parts)
            (out or sys.stdout).flush()
        except BrokenPipeError as exc:  # raised as our own error, which click does not turn into exit 1
            raise OutputClosed() from exc
        except OSError as exc:  # a full disk behind `> file`
            raise AsysError(f"cannot write the standard output: {exc.strerror or exc}") from exc
    elif dest.kind == PIPE:
        import subprocess  # only piped output needs it (its import is part of every run's start-up)

        sys.stdout.flush()
        command = subprocess.Popen(dest.target, shell=True, stdin=subprocess.PIPE)
        try:
            with command.stdin:  # type: ignore[union-attr]
                write_each(command.stdin.write, parts)  # type: ignore[union-attr]
        except BrokenPipeError:  # the command stopped reading: its exit status decides
            pass
        if command.wait() != 0:
            raise AsysError(f"output command '{dest.target}' failed with exit status {command.returncode}")
    else:
        write_output(Path(dest.target), parts, force)
