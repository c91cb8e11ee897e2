"""Patch series applied into a private index: good and broken patches."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lab import tree
from lab.errors import LabError


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
