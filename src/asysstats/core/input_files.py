"""Files the tool reads (reports, ``--device-spec``, ``@file`` option values): only regular files.

A FIFO, a device, a socket or a folder is refused by its ``stat`` before it is opened: opening a
FIFO waits for a writer forever, and a device such as ``/dev/zero`` never ends (docs/reliability.md).
Small files read whole are also bounded in size and opened without blocking, then checked again
on the open file (a FIFO put in the file's place meanwhile is refused, not waited on).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from asysstats.core.errors import AsysError

SMALL_FILE_LIMIT = 16 << 20  # bytes of a file read whole (option values, a device table)
KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
REASONS = {errno.ENOENT: "no such file", errno.ELOOP: "symbolic link loop",
           errno.ENOTDIR: "a folder on its path is a file", errno.EACCES: "permission denied",
           errno.ENAMETOOLONG: "file name too long"}


def check_input_file(path: Path, label: str | None = None) -> os.stat_result:
    """The ``stat`` of a regular file to read (symbolic links followed); else a one-line error
    starting with ``label`` (the path by default) that says what is there instead."""
    label = str(path) if label is None else label
    try:
        info = os.stat(path)
    except OSError as exc:
        reason = reason_of(exc)
        if exc.errno == errno.ENOENT and os.path.islink(path):
            reason = "symbolic link to a missing file"
        raise AsysError(f"{label}: {reason}") from exc
    except ValueError as exc:  # a NUL byte in the name
        raise AsysError(f"{label}: not a usable file name ({exc})") from exc
    refuse_unless_regular(info, label)
    return info


def refuse_unless_regular(info: os.stat_result, label: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise AsysError(f"{label}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in KINDS if test(info.st_mode)), "a special file")
        raise AsysError(f"{label}: is {kind}, not a regular file")


def read_small_file(path: Path, label: str | None = None, limit: int = SMALL_FILE_LIMIT) -> bytes:
    """The bytes of a small regular file (:func:`check_input_file`), at most ``limit`` of them."""
    label = str(path) if label is None else label
    check_input_file(path, label)
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(handle, "rb") as stream:
            refuse_unless_regular(os.fstat(stream.fileno()), label)
            data = stream.read(limit + 1)
    except OSError as exc:
        raise AsysError(f"{label}: {reason_of(exc)}") from exc
    if len(data) > limit:
        raise AsysError(f"{label}: larger than {limit >> 20} MiB, not a file of this kind")
    return data


def reason_of(exc: OSError) -> str:
    """An OS error in plain words (``symbolic link loop`` for ELOOP, not a bare ``no such file``)."""
    return REASONS.get(exc.errno or 0, exc.strerror or str(exc))
