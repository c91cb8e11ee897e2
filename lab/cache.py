"""The cache directory: trees, builds, ccache, images and results.

Everything large lives here, never in the repository. The root is, in
order: the --cache flag, $SWAPLAB_CACHE, $XDG_CACHE_HOME/swaplab,
~/.cache/swaplab. One lock per cache serialises lab processes that change
it; a second process waits (printing who holds it) or refuses.
"""
from __future__ import annotations

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


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write via a temporary file and rename: readers see all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        with open(tmp, mode) as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LabError(f"cannot write {path}: {exc.strerror}") from exc
