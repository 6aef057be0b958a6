"""Files written atomically and exclusively: through a temporary file in the target's folder,
made the target when complete, never over an existing file unless forced.

A temporary's name carries a fixed marker and the owning process id
(``.<name>.asysstats-<pid>-<random>.tmp``): one left by a run that died without unwinding
(SIGKILL, power loss) is recognised and removed by a later run writing in that folder, once
its owner is gone and it is :data:`STALE_AFTER_S` old (docs/reliability.md).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from asysstats.core.errors import AsysError

MARKER = "asysstats"
# the names of an output's temporary file, and of a private folder in the temp folder
TEMPORARY = re.compile(rf"\..*\.{MARKER}-(?P<pid>[0-9]{{1,10}})-[a-z0-9_]+\.tmp", re.DOTALL)
PRIVATE_FOLDER = re.compile(rf"{MARKER}-(?P<pid>[0-9]{{1,10}})-[a-z0-9_]+")
STALE_AFTER_S = 3600  # untouched that long, and its owner gone: left by a dead run
TEMPORARY_TRIES = 100  # names drawn before giving up (each of 2^32 is rarely taken)
NAME_CHARS = 100  # of the target's name in its temporary's (a long name stays under the 255 bytes of a name)
NO_HARD_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS)
swept: set[Path] = set()  # the folders swept by this process: once each


def check_output(path: Path, force: bool) -> None:
    """An error when ``path`` cannot be written: a folder is there (even with ``force``), a
    file is there and overwriting is not forced, or its folder is not writable."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise AsysError(f"cannot write {path}: {exc.strerror}") from exc
    if mode is not None and stat.S_ISDIR(mode):
        raise AsysError(f"cannot write {path}: it is a directory")
    if mode is not None and not force:
        raise AsysError(f"{path} exists; use -f true to overwrite it")
    if not path.parent.is_dir():
        raise AsysError(f"cannot write {path}: its folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise AsysError(f"cannot write {path}: its folder {path.parent} is not writable")


def write_output(path: Path, data: bytes | Iterable[bytes | memoryview], force: bool) -> None:
    """An output file: checked (:func:`check_output`), then written atomically and exclusively;
    an OS error writing it (a full disk, a file too large, a folder read-only or removed) is a
    one-line error naming it."""
    with output_errors(path):
        check_output(path, force)
        write_atomically(path, data, force)


@contextmanager
def output_errors(path: Path) -> Iterator[None]:
    """OS errors raised inside as one-line errors naming the output ``path``: bad
    circumstances (exit 2), not a bug (exit 3)."""
    try:
        yield
    except OSError as exc:
        raise AsysError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_atomically(path: Path, data: bytes | Iterable[bytes | memoryview], force: bool) -> None:
    """Write through a temporary file in the same folder, then make it the target
    (:func:`publish`). On any failure or signal the temporary is removed; OS errors are raised
    as they are (the cache ignores them; outputs go through :func:`write_output`)."""
    with temporary_beside(path) as temp:
        with open(temp, "r+b") as out:  # not "wb": see temporary_beside
            write_each(out.write, [data] if isinstance(data, bytes) else data)
        publish(temp, path, force)


@contextmanager
def temporary_beside(path: Path) -> Iterator[Path]:
    """A new, empty, marked temporary file in ``path``'s folder, with the permissions a new
    file gets from the umask; removed on leaving unless :func:`publish` moved it. Its name is
    chosen before the file is made, so that a signal between the two leaves nothing behind.
    Write it without truncating (``r+b``, not ``wb``): ext4 flushes a file truncated and rewritten
    to disk when it is closed (``auto_da_alloc``), 0.05–0.66 s a large output.
    Stale temporaries of dead runs in that folder are removed first."""
    sweep_stale(path.parent, TEMPORARY)
    for _ in range(TEMPORARY_TRIES):
        temp = path.parent / f".{path.name[:NAME_CHARS]}.{MARKER}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        ours = True  # unless the name turns out to be taken
        try:
            try:
                os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                ours = False
                continue
            yield temp
            return
        finally:
            if ours:
                temp.unlink(missing_ok=True)
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {path}")


def publish(temp: Path, path: Path, force: bool) -> None:
    """Make the complete ``temp`` the file ``path``. With ``force`` it replaces what is there
    (atomically); without, the last step is exclusive — a hard link, which fails when ``path``
    appeared meanwhile (another run on the same output) — so that one of two runs at once
    gets the 'exists' error rather than both succeeding and one result being lost."""
    if force:
        os.replace(temp, path)
        return
    try:
        os.link(temp, path)
    except FileExistsError:
        raise AsysError(f"{path} exists; use -f true to overwrite it") from None
    except OSError as exc:
        if exc.errno not in NO_HARD_LINKS:
            raise
        publish_without_links(temp, path)
    else:
        temp.unlink()


def publish_without_links(temp: Path, path: Path) -> None:
    """:func:`publish` where the file system has no hard links: ``path`` is created exclusively
    (empty), then replaced by ``temp``; the empty file is removed if that fails."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise AsysError(f"{path} exists; use -f true to overwrite it") from None
    try:
        os.replace(temp, path)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


STOP_SIGNALS_HELD = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


class Held:
    """The main thread's :func:`stop_signals_held` blocks under way, and the first stop signal
    a handler put off (:func:`put_off`) until the outermost ends."""

    depth = 0
    signum: int | None = None


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """Within, a stop signal waits (it is delivered on leaving): a temporary created and
    registered for removal inside cannot be left behind by a signal landing in between.
    Signal masks are per thread, and the kernel hands a signal to any thread that does not
    block it (connectorx's, a writer's): the Python handlers, which run in the main thread,
    put a signal off by :func:`put_off` while the main thread holds, and it is raised again on
    leaving."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS_HELD)
    Held.depth += main
    try:
        yield
    finally:
        Held.depth -= main
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if main and not Held.depth and Held.signum is not None:
            signum, Held.signum = Held.signum, None
            signal.raise_signal(signum)


def put_off(signum: int) -> bool:
    """For a stop signal's handler: whether the main thread holds stop signals; then the signal
    is raised again when the hold ends, and the handler should return at once."""
    if Held.depth and Held.signum is None:
        Held.signum = signum
    return bool(Held.depth)


def private_folder() -> Path:
    """A new private folder in the temp folder, marked as a temporary of this process, after
    removing those of dead runs (the caller removes it when done)."""
    sweep_stale(Path(tempfile.gettempdir()), PRIVATE_FOLDER)
    return Path(tempfile.mkdtemp(prefix=f"{MARKER}-{os.getpid()}-"))


def sweep_stale(folder: Path, marked: re.Pattern[str]) -> None:
    """Remove, once per process and folder, the ``marked`` temporaries in ``folder`` that dead
    runs left: ours (same user), their owner's process gone, untouched for
    :data:`STALE_AFTER_S`. Never another live run's; a failure leaves them (best effort)."""
    if folder in swept:
        return
    swept.add(folder)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        found = marked.fullmatch(entry.name)
        if found is None or process_alive(int(found["pid"])):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid != os.getuid() or now - info.st_mtime < STALE_AFTER_S:
                continue
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user counts); an impossible id is not."""
    if not 0 < pid < 1 << 31:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as someone else
        return True
    return True


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
