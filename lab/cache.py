"""The cache directory: trees, builds, ccache, images and results.

Everything large lives here, never in the repository. The root is, in
order: the --cache flag, $SWAPLAB_CACHE, $XDG_CACHE_HOME/swaplab,
~/.cache/swaplab. One lock per cache serialises lab processes that change
it; a second process waits (printing who holds it) or refuses.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from lab.errors import LabError


def cache_root(flag: str | None = None) -> Path:
    if flag:
        return Path(flag).expanduser().resolve()
    env = os.environ.get("SWAPLAB_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return (base / "swaplab").resolve()


@contextmanager
def locked(root: Path, wait: bool = True) -> Iterator[None]:
    """Hold the cache's lock for the duration of the block."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            if not wait:
                raise LabError(f"the cache {root} is in use by another lab "
                               f"process ({holder or 'unknown pid'}); "
                               "try again when it has finished")
            print(f"waiting for the cache lock {path} held by "
                  f"{holder or 'another process'} ...", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} since {time.ctime()}\n".encode(),
                  0)
        yield
    finally:
        os.close(fd)


# Write errors that mean "no room for this file": the disk, the quota or
# the file size limit (RLIMIT_FSIZE, `ulimit -f`) is exhausted.
NO_SPACE = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "no space left: disk quota exceeded",
    errno.EFBIG: "no space left for it: file too large (the file size "
                 "limit, ulimit -f, or the file system's)",
}


class DiskFull(LabError):
    """A write failed for want of space. A matrix run stops on it rather
    than failing every remaining cell the same way."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(message)


def write_error(path: Path, exc: OSError) -> LabError:
    """The LabError for a failed write of `path` (DiskFull when it was
    for want of space)."""
    why = NO_SPACE.get(exc.errno or 0)
    if why:
        return DiskFull(path, f"cannot write {path}: {why}; free some space "
                        "and run again (finished results are kept, a run "
                        "resumes with its unfinished cells)")
    return LabError(f"cannot write {path}: {exc.strerror or exc}")


def temp_name(path: Path) -> Path:
    """Where atomic_write stages `path` (a hidden name the result store
    recognises and ignores: `.NAME.tmp.PID`)."""
    return path.with_name(f".{path.name}.tmp.{os.getpid()}")


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write via a temporary file and rename: readers see all or nothing.

    Whatever stops the write (a full disk, Ctrl-C) the temporary file is
    removed; a process killed outright leaves one behind, under a name
    nobody reads as a result (temp_name)."""
    tmp = temp_name(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, mode) as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise write_error(path, exc) from exc
        raise
