"""Where results go: the console, a command (``@cmd``), or files written atomically.

``%`` is the console; ``@cmd`` pipes into a shell command; ``.`` writes next to the report
as ``<report stem>_<rule>.<ext>``; anything else is ``<dir>/<prefix>`` and writes
``<dir>/<prefix>_<rule>.<ext>``. Existing files are kept unless overwriting is forced.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from asysstats.core.errors import AsysError, OutputClosed
from asysstats.core.files import write_atomically, write_each

CONSOLE = "console"
PIPE = "pipe"
FILE = "file"


@dataclass(frozen=True)
class Destination:
    kind: str
    target: str = ""


def destination(output: str | None, report: Path, rule: str, fmt: str) -> Destination:
    if output in (None, "", "%", "-"):
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
    name = f"{prefix}_{rule}.{fmt}" if prefix else f"{rule}.{fmt}"
    return Destination(FILE, str(folder / name))


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
        write_atomically(Path(dest.target), parts, force)
