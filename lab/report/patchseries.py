"""A patch series in its stack: which pairs of variants differ only by
it, what it is built on, its patch files and what it costs in code
lines. Read from matrix.yaml's variants and the series files.
"""
from __future__ import annotations

from lab.spec.model import Matrix, Variant


def _same_build_but_series(a: Variant, b: Variant) -> bool:
    return (a.tree, a.fragments, a.cmdline, a.sysfs, a.sysctl) == \
        (b.tree, b.fragments, b.cmdline, b.sysfs, b.sysctl)


def added(with_: Variant, without: Variant) -> tuple[str, ...] | None:
    """The series `with_` adds to `without`, when `without`'s series are
    `with_`'s with some left out (order kept) and nothing else differs."""
    if not _same_build_but_series(with_, without):
        return None
    rest = iter(with_.series)
    if not all(s in rest for s in without.series):
        return None
    extra = tuple(s for s in with_.series if s not in without.series)
    return extra or None


def needs(matrix: Matrix, tree: str, series: str) -> tuple[str, ...]:
    """The series that every variant of the matrix with `series` applies
    before it: what it is built on."""
    stacks = [v.series for v in matrix.variants.values()
              if v.tree == tree and series in v.series]
    if not stacks:
        return ()
    common = set(stacks[0][:stacks[0].index(series)])
    for stack in stacks[1:]:
        common &= set(stack[:stack.index(series)])
    return tuple(s for s in stacks[0] if s in common)


def code_lines(patch: str) -> int:
    """Added plus removed lines of one patch's hunks that hold code: not
    the commit message, the diffstat or a file header, and not a line
    left blank. (A bare `line[:1] in "+-"` also counted every empty line
    of the message: '' is in every string.)"""
    total = 0
    in_hunk = False
    for line in patch.splitlines():
        if line == "-- ":
            break               # the signature: the diff is over
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line[:1] in ("+", "-") and line[1:].strip():
            total += 1
    return total


def patch_files(matrix: Matrix, tree: str, series: str) -> list[str]:
    """The series' patch files, in the order its `series` file gives."""
    d = matrix.series_dir(tree, series)
    names = [line.strip() for line in (d / "series").read_text().splitlines()]
    return [n for n in names if n and not n.startswith("#")
            and (d / n).is_file()]


def lines_changed(matrix: Matrix, tree: str, series: str) -> int:
    """Code lines added and removed by the series' patches."""
    d = matrix.series_dir(tree, series)
    return sum(code_lines((d / name).read_text(errors="replace"))
               for name in patch_files(matrix, tree, series))
