"""Writing a run's files so that a full disk is a clear error, never a traceback or a half-written file.

A file is written under a temporary name beside it and renamed over its target in one step once whole
(`replaced`): a failure on the way (a full disk, a quota, a read-only remount, an I/O error, a kill) leaves
the earlier file or none, never a 0-byte or half-written one, and the temporary file is removed. An
`OSError` while writing becomes an `OutputError` (`write_failure`) that names the file, says what the device
did (no space left, over quota, read-only, an I/O error) and the way on: free space, or another folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ascend_eval.errors import OutputError

OUT_FIX = "write the results to another folder (--out, or out= in Python)"
"""The way on for a file of a results folder, named in `write_failure`'s message."""

_QUOTA = getattr(errno, "EDQUOT", None)  # not on every platform


def write_failure(e: OSError, path: Path, fix: str = OUT_FIX) -> OutputError:
    """What an `OSError` while writing `path` means, and what to do: an `OutputError` naming `path`.

    The error of a write to a full device names no file (the write was to an open file), so `path` is
    the file that was being written, the one a user would look for.
    """
    if e.errno == errno.ENOSPC:
        return OutputError(f"No space left on the device holding {path}. Free space there, or {fix}.")
    if _QUOTA is not None and e.errno == _QUOTA:
        return OutputError(
            f"Disk quota exceeded on the device holding {path}. Free space within your quota (or have it "
            f"raised), or {fix}."
        )
    if e.errno == errno.EROFS:
        return OutputError(f"{path} is on a read-only file system. Remount it read-write, or {fix}.")
    if e.errno == errno.EIO:
        return OutputError(
            f"I/O error while writing {path}: the device holding it failed or went away (a disk error, a "
            f"network file system that dropped). Check the device (dmesg, df), or {fix}."
        )
    return OutputError(f"Cannot write {path} ({e.strerror or e}). Make it writable, or {fix}.")


def _temporary(path: Path) -> Path:
    """The temporary name `path` is written under: one per process and thread, since the server's request
    and worker threads may update one file at once."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.part")


def replace_text(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step, so a reader (or a kill) never sees half a file or an empty
    one. An `OSError` passes as it is (where the caller has no `--out` to name; `write_text` translates)."""
    tmp = _temporary(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def replaced(path: Path, *, encoding: str = "utf-8", newline: str | None = None) -> Iterator[IO[str]]:
    """A text file to write `path` through: it takes `path`'s place, in one step, when the block ends
    without an error; on any error it is removed and `path` is left as it was.

    Raises:
        OutputError: writing failed (`write_failure` says why and what to do); other errors pass as
            they are.
    """
    tmp = _temporary(path)
    try:
        with tmp.open("w", encoding=encoding, newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, OSError):
            raise write_failure(e, path) from None
        raise


def write_text(path: Path, text: str) -> Path:
    """`path.write_text(text)` in one step (`replaced`): the whole text or the file as it was."""
    with replaced(path) as f:
        f.write(text)
    return path


def free_bytes(path: Path) -> int | None:
    """Bytes this process may still write on the device holding `path` (its folder, if `path` does not
    exist yet), or None where the system cannot say."""
    where = path if path.exists() else path.parent
    try:
        stat = os.statvfs(where)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        try:
            return shutil.disk_usage(where).free
        except OSError:
            return None
    # Root may also write into the blocks a file system keeps in reserve; everyone else may not.
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return (stat.f_bfree if root else stat.f_bavail) * stat.f_frsize
