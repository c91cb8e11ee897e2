"""Kernel source trees: Debian package -> pristine git repo -> variant tree.

A tree package (linux-source-6.1) ships one tarball in /usr/src. It is
extracted once into the cache and committed to a git repository: that
commit is the pristine tree. A variant's patch series are applied with
`git apply --cached` into a private index, one commit per patch, so a
patch that fails never touches any checked-out tree. Each variant builds
in its own git worktree checked out at its commit; switching commits only
rewrites the files that differ, which keeps incremental builds small.

A run killed half-way leaves nothing that is used as it is: the pristine
tree counts only once its `ready` marker (written last, checked first)
names a commit the repository has, else it is extracted again; a series
is cached by a ref set only after its last patch; a worktree that git
cannot check out (a stale index.lock) or that is not clean is made anew.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab.cache import atomic_write
from lab.errors import LabError
from lab.kernel import debian

SRC_DIR = Path("/usr/src")      # where linux-source-* put their tarball

# Fixed identity and dates make commit ids a function of content alone.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "swaplab", "GIT_AUTHOR_EMAIL": "swaplab@localhost",
    "GIT_COMMITTER_NAME": "swaplab",
    "GIT_COMMITTER_EMAIL": "swaplab@localhost",
    "GIT_AUTHOR_DATE": "2017-03-22T00:00:00Z",
    "GIT_COMMITTER_DATE": "2017-03-22T00:00:00Z",
}


@dataclass(frozen=True)
class Pristine:
    package: str
    version: str
    repo: Path
    commit: str


@dataclass(frozen=True)
class Patch:
    series: str
    path: Path
    sha256: str


def git(repo: Path, *args: str, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, **GIT_ENV, **(env or {}))
    proc = subprocess.run(["git", "-C", str(repo), *args], env=full_env,
                          capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError(f"git {' '.join(args[:2])} failed in {repo}: "
                       f"{proc.stderr.strip()}")
    return proc


def prepare(package: str, root: Path) -> Pristine:
    """Install the package if needed and return its pristine git repo."""
    debian.ensure_installed([package])
    version = debian.installed_version(package)
    assert version is not None
    tarball = SRC_DIR / f"{package}.tar.xz"
    if not tarball.is_file():
        raise LabError(f"{package} is installed but {tarball} is missing; "
                       f"reinstall it with: apt-get install --reinstall "
                       f"{package}")
    home = root / "trees" / package / version
    ready = home / "ready"
    repo = home / "pristine"
    if ready.is_file():
        commit = ready.read_text().strip()
        if git(repo, "cat-file", "-e", commit, check=False).returncode == 0:
            return Pristine(package, version, repo, commit)
    # Anything here without a ready marker is a killed earlier attempt.
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    staging = Path(tempfile.mkdtemp(prefix="extract.", dir=home))
    proc = subprocess.run(["tar", "-xf", str(tarball), "-C", str(staging)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"extracting {tarball} failed: {proc.stderr.strip()}")
    tops = list(staging.iterdir())
    if len(tops) != 1 or not (tops[0] / "Makefile").is_file():
        raise LabError(f"{tarball} does not hold one kernel tree")
    tops[0].rename(repo)
    staging.rmdir()
    git(repo, "init", "-q")
    for key, value in (("gc.auto", "0"), ("core.autocrlf", "false"),
                       ("advice.detachedHead", "false")):
        git(repo, "config", key, value)
    # -f: the tarball is the source of truth, even for files that the
    # tree's own .gitignore patterns would skip.
    git(repo, "add", "-f", "-A", ".")
    git(repo, "commit", "-q", "-m", f"pristine {package} {version}")
    commit = git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "tag", "-f", "pristine", commit)
    atomic_write(ready, commit + "\n")
    return Pristine(package, version, repo, commit)


def series_patches(series_dir: Path, series: str) -> list[Patch]:
    """The patches a series file lists, in order."""
    listing = series_dir / "series"
    out = []
    for n, raw in enumerate(listing.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        path = series_dir / line
        if not path.is_file():
            raise LabError(f"{listing}:{n}: patch file {line} of series "
                           f"'{series}' does not exist")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        out.append(Patch(series, path, digest))
    return out


def _subject(patch: Path) -> str:
    for line in patch.read_text(errors="replace").splitlines():
        if line.startswith("Subject:"):
            subject = line.split(":", 1)[1].strip()
            return re.sub(r"^\[PATCH[^]]*\]\s*", "", subject)
    return patch.name


def apply_series(pristine: Pristine, patches: list[Patch]) -> str:
    """Commit the patches on top of the pristine tree; return the commit.

    Uses a private index, so the pristine checkout and every worktree are
    untouched whether the patches apply or not.
    """
    if not patches:
        return pristine.commit
    chain = hashlib.sha256(("\n".join(p.sha256 for p in patches)).encode())
    ref = f"refs/swaplab/series/{chain.hexdigest()[:24]}"
    known = git(pristine.repo, "rev-parse", "-q", "--verify", ref,
                check=False)
    if known.returncode == 0:
        return known.stdout.strip()
    fd, index = tempfile.mkstemp(prefix="swaplab-index.")
    os.close(fd)
    env = {"GIT_INDEX_FILE": index}
    try:
        git(pristine.repo, "read-tree", pristine.commit, env=env)
        parent = pristine.commit
        for patch in patches:
            proc = git(pristine.repo, "apply", "--cached", str(patch.path),
                       env=env, check=False)
            if proc.returncode != 0:
                raise LabError(
                    f"series '{patch.series}': patch {patch.path} does not "
                    f"apply:\n  " +
                    "\n  ".join(proc.stderr.strip().splitlines()[:6]))
            tree = git(pristine.repo, "write-tree", env=env).stdout.strip()
            parent = git(pristine.repo, "commit-tree", tree, "-p", parent,
                         "-m", _subject(patch.path)).stdout.strip()
    finally:
        os.unlink(index)
    # The ref only saves redoing this next time: a run killed while
    # holding its lock must not fail every later build of the series.
    git(pristine.repo, "update-ref", ref, parent, check=False)
    return parent


def checkout(pristine: Pristine, commit: str, path: Path) -> None:
    """Make `path` a worktree of the pristine repo at `commit`."""
    if (path / ".git").exists() and \
            git(path, "rev-parse", "HEAD", check=False).returncode == 0 and \
            git(path, "checkout", "-q", "-f", "--detach", commit,
                check=False).returncode == 0:
        dirty = git(path, "status", "--porcelain", "--untracked-files=no",
                    check=False)
        if dirty.returncode == 0 and not dirty.stdout.strip():
            return
    # Missing, half-made by a killed run (git refuses to check out past
    # its index.lock), or not clean: make it anew.
    shutil.rmtree(path, ignore_errors=True)
    git(pristine.repo, "worktree", "prune")
    path.parent.mkdir(parents=True, exist_ok=True)
    git(pristine.repo, "worktree", "add", "-q", "-f", "--detach",
        str(path), commit)
