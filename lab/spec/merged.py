"""matrix.yaml's `merged`: which of our series upstream has merged since
2017, per tree (lab/spec/model.py's Merged)."""
from __future__ import annotations

import re
from pathlib import Path

from lab.spec.fields import Fields, as_named, as_names, as_str, expected
from lab.spec.model import BACKEND_KINDS, Merged, Tree
from lab.spec.yamlsrc import Node

VERSION_RE = re.compile(r"^\d+\.\d+$")


def merged_series(node: Node, trees: dict[str, Tree],
                  patches_dir: Path) -> dict[str, dict[str, Merged]]:
    def tree(name: str, child: Node) -> dict[str, Merged]:
        if name not in trees:
            raise node.error(f"tree '{name}' is not in `trees`; expected "
                             f"one of: {', '.join(trees)}", name)
        return as_named(child, f"series of {name}",
                        lambda s, n: _one(s, n, child, patches_dir / name))
    return as_named(node, "trees", tree)


def _one(series: str, node: Node, parent: Node, tree_dir: Path) -> Merged:
    if not (tree_dir / series / "series").is_file():
        raise parent.error(f"no series '{series}' in {tree_dir} (expected "
                           f"{tree_dir / series / 'series'})", series)
    fields = Fields(node, f"merged series '{series}'")
    vnode = fields.need("version")
    version = as_str(vnode, "a mainline version such as \"4.14\"")
    if not VERSION_RE.match(version):
        raise expected(vnode, "a mainline version such as \"4.14\"")
    what = as_str(fields.need("what"), "what upstream merged, in words")
    onode = fields.get("off_on")
    off_on = tuple(as_names(onode, "backend kinds")) if onode else ()
    for kind in off_on:
        if kind not in BACKEND_KINDS:
            assert onode is not None
            raise onode.error(f"'{kind}' is not a backend kind; expected "
                              f"one of: {', '.join(BACKEND_KINDS)}")
    fields.done()
    return Merged(series, version, what, off_on,
                  f"{node.file}:{node.line}")
