"""Patch series applied into a private index: good and broken patches."""
from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lab.errors import LabError
from lab.kernel import tree

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return tree.git(repo, *args).stdout.strip()


@pytest.fixture
def pristine(tmp_path: Path) -> tree.Pristine:
    repo = tmp_path / "pristine"
    (repo / "mm").mkdir(parents=True)
    (repo / "mm" / "swap_state.c").write_text(
        "int a;\nint b;\nint c;\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pristine")
    return tree.Pristine("linux-source-0.0", "0.0-1", repo,
                         git(repo, "rev-parse", "HEAD"))


def make_patch(tmp: Path, pristine: tree.Pristine, name: str, old: str,
               new: str) -> Path:
    """A real format-patch file changing one line of mm/swap_state.c."""
    work = tmp / f"w-{name}"
    subprocess.run(["git", "clone", "-q", str(pristine.repo), str(work)],
                   check=True)
    f = work / "mm" / "swap_state.c"
    f.write_text(f.read_text().replace(old, new))
    git(work, "commit", "-q", "-am", f"mm, swap: {name}")
    out = git(work, "format-patch", "-1", "-o", str(tmp / "patches"))
    return Path(out)


def series(tmp: Path, name: str, patches: list[Path]) -> list[tree.Patch]:
    d = tmp / "series" / name
    d.mkdir(parents=True)
    for p in patches:
        (d / p.name).write_bytes(p.read_bytes())
    (d / "series").write_text("# order matters\n" +
                              "\n".join(p.name for p in patches) + "\n")
    return tree.series_patches(d, name)


def test_apply_series_commits_each_patch(tmp_path: Path,
                                         pristine: tree.Pristine) -> None:
    p1 = make_patch(tmp_path, pristine, "one", "int a;", "int a1;")
    patches = series(tmp_path, "s1", [p1])
    commit = tree.apply_series(pristine, patches)
    assert commit != pristine.commit
    shown = git(pristine.repo, "show", f"{commit}:mm/swap_state.c")
    assert shown.startswith("int a1;")
    assert git(pristine.repo, "log", "-1", "--format=%s", commit) == \
        "mm, swap: one"
    # Same patches, same commit (content-addressed), and cached by ref.
    assert tree.apply_series(pristine, patches) == commit
    # The pristine checkout itself is untouched.
    assert (pristine.repo / "mm" / "swap_state.c").read_text().startswith(
        "int a;")


def test_broken_patch_names_series_file_and_hunk(
        tmp_path: Path, pristine: tree.Pristine) -> None:
    p1 = make_patch(tmp_path, pristine, "one", "int b;", "int b1;")
    broken = tmp_path / "0001-broken.patch"
    broken.write_text(p1.read_text().replace("-int b;", "-int zz;"))
    patches = series(tmp_path, "bad", [broken])
    with pytest.raises(LabError) as info:
        tree.apply_series(pristine, patches)
    msg = str(info.value)
    assert "series 'bad'" in msg and "0001-broken.patch" in msg
    assert "mm/swap_state.c" in msg
    assert git(pristine.repo, "status", "--porcelain") == ""


def test_checkout_worktree_and_switch(tmp_path: Path,
                                      pristine: tree.Pristine) -> None:
    p1 = make_patch(tmp_path, pristine, "one", "int c;", "int c1;")
    commit = tree.apply_series(pristine, series(tmp_path, "s", [p1]))
    work = tmp_path / "work" / "v"
    tree.checkout(pristine, commit, work)
    assert "int c1;" in (work / "mm" / "swap_state.c").read_text()
    # A local edit (a killed run, a human) is reset on the next checkout.
    (work / "mm" / "swap_state.c").write_text("garbage\n")
    tree.checkout(pristine, pristine.commit, work)
    assert (work / "mm" / "swap_state.c").read_text() == \
        "int a;\nint b;\nint c;\n"


def test_missing_patch_file_in_series(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    (d / "series").write_text("0001-there.patch\n")
    with pytest.raises(LabError, match=r"series:1: patch file "
                       r"0001-there.patch of series 'x' does not exist"):
        tree.series_patches(d, "x")


def test_checkout_past_a_stale_index_lock(tmp_path: Path,
                                          pristine: tree.Pristine) -> None:
    """A run killed during `git checkout` leaves the worktree's index.lock:
    the next checkout makes the worktree anew instead of failing."""
    p1 = make_patch(tmp_path, pristine, "one", "int c;", "int c1;")
    commit = tree.apply_series(pristine, series(tmp_path, "s", [p1]))
    work = tmp_path / "work" / "v"
    tree.checkout(pristine, pristine.commit, work)
    lock = Path(git(work, "rev-parse", "--git-path", "index.lock"))
    lock = lock if lock.is_absolute() else work / lock
    lock.write_text("")
    (work / "mm" / "swap_state.c").write_text("half-written\n")
    tree.checkout(pristine, commit, work)
    assert "int c1;" in (work / "mm" / "swap_state.c").read_text()
    assert git(work, "status", "--porcelain", "--untracked-files=no") == ""


def test_series_ref_lock_left_by_a_killed_run(tmp_path: Path,
                                              pristine: tree.Pristine) -> None:
    p1 = make_patch(tmp_path, pristine, "one", "int a;", "int a2;")
    patches = series(tmp_path, "s", [p1])
    refs = pristine.repo / ".git" / "refs" / "swaplab" / "series"
    refs.mkdir(parents=True)
    chain = hashlib.sha256(p1.read_bytes()).hexdigest()
    name = hashlib.sha256(chain.encode()).hexdigest()[:24]
    (refs / f"{name}.lock").write_text("")
    commit = tree.apply_series(pristine, patches)
    assert git(pristine.repo, "show", f"{commit}:mm/swap_state.c") \
        .startswith("int a2;")


# ------------------------------------------ a tree extracted half-way

@pytest.fixture
def tarball(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for linux-source-0.0: /usr/src/linux-source-0.0.tar.xz
    holding one tree, 'installed' at version 0.0-1."""
    src = tmp_path / "usr-src"
    top = src / "linux-source-0.0"
    (top / "mm").mkdir(parents=True)
    (top / "Makefile").write_text("VERSION = 0\n")
    for i in range(50):
        (top / "mm" / f"f{i}.c").write_text(f"int f{i};\n" * 100)
    subprocess.run(["tar", "-cJf", str(src / "linux-source-0.0.tar.xz"),
                    "-C", str(src), "linux-source-0.0"], check=True)
    monkeypatch.setattr(tree, "SRC_DIR", src)
    monkeypatch.setattr(tree.debian, "ensure_installed", lambda pkgs: None)
    monkeypatch.setattr(tree.debian, "installed_version",
                        lambda pkg: "0.0-1")
    return src / "linux-source-0.0.tar.xz"


def home_of(root: Path) -> Path:
    return root / "trees" / "linux-source-0.0" / "0.0-1"


def test_prepare_marks_ready_last_and_reuses(tmp_path: Path,
                                             tarball: Path) -> None:
    root = tmp_path / "cache"
    first = tree.prepare("linux-source-0.0", root)
    home = home_of(root)
    assert (home / "ready").read_text().strip() == first.commit
    assert sorted(p.name for p in home.iterdir()) == ["pristine", "ready"]
    (first.repo / "kept").write_text("")     # a reused tree keeps this
    assert tree.prepare("linux-source-0.0", root) == first
    assert (first.repo / "kept").exists()


@pytest.mark.parametrize("damage", ["no-marker", "staging-left", "marker-"
                                    "names-missing-commit", "empty-marker"])
def test_half_extracted_tree_is_redone(tmp_path: Path, tarball: Path,
                                       damage: str) -> None:
    good = tree.prepare("linux-source-0.0", tmp_path / "good")
    root = tmp_path / "cache"
    home = home_of(root)
    (home / "pristine" / "mm").mkdir(parents=True)
    (home / "pristine" / "Makefile").write_text("VERSION = 0\n")
    (home / "pristine" / "mm" / "f0.c").write_text("int f0")   # cut short
    if damage == "staging-left":
        (home / "extract.abc123" / "linux-source-0.0").mkdir(parents=True)
    elif damage == "marker-names-missing-commit":
        (home / "ready").write_text("0" * 40 + "\n")
    elif damage == "empty-marker":
        (home / "ready").write_text("")
    again = tree.prepare("linux-source-0.0", root)
    assert again.commit == good.commit, "the same tree, extracted anew"
    assert sorted(p.name for p in home.iterdir()) == ["pristine", "ready"]
    assert (again.repo / "mm" / "f0.c").read_text() == "int f0;\n" * 100
    assert git(again.repo, "status", "--porcelain") == ""


KILL_AT_COMMIT = """\
import os, signal, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from lab.kernel import tree
tree.SRC_DIR = Path({src!r})
tree.debian.ensure_installed = lambda pkgs: None
tree.debian.installed_version = lambda pkg: "0.0-1"
real = tree.git
def git(repo, *args, **kw):
    if args[:1] == ("commit",):            # killed mid-way, for real
        os.kill(os.getpid(), signal.SIGKILL)
    return real(repo, *args, **kw)
tree.git = git
tree.prepare("linux-source-0.0", Path({cache!r}))
"""


def test_tree_of_a_killed_prepare_is_redone(tmp_path: Path,
                                            tarball: Path) -> None:
    root = tmp_path / "cache"
    child = subprocess.run(
        [sys.executable, "-c", KILL_AT_COMMIT.format(
            root=str(ROOT), src=str(tarball.parent), cache=str(root))],
        capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    home = home_of(root)
    assert (home / "pristine" / "Makefile").exists()
    assert not (home / "ready").exists()
    again = tree.prepare("linux-source-0.0", root)
    assert (home / "ready").read_text().strip() == again.commit
    assert git(again.repo, "rev-parse", "pristine") == again.commit
