"""YAML with line numbers: every value remembers where it was written.

PyYAML's composer gives nodes with marks; this turns them into a small tree
of `Node`s that keep (file, line, key path), refuses duplicate keys (which
PyYAML would silently let the last one win) and resolves scalars with the
safe loader's rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from lab.errors import MatrixError


@dataclass
class Node:
    """One YAML value with its position; `value` is a scalar, list or dict."""
    file: str
    line: int
    path: str
    value: Any
    # For mappings: key -> line of the key itself.
    key_lines: dict[str, int] = field(default_factory=dict)

    def error(self, message: str, key: str | None = None) -> MatrixError:
        path = f"{self.path}.{key}" if key and self.path else (key or self.path)
        line = self.key_lines.get(key, self.line) if key else self.line
        return MatrixError(self.file, line, path, message)


def kind_name(value: Any) -> str:
    """How a YAML value's type is named in error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.constructor = yaml.SafeLoader(stream="")

    def build(self, node: yaml.Node, path: str) -> Node:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Node] = {}
            key_lines: dict[str, int] = {}
            for knode, vnode in node.value:
                kline = knode.start_mark.line + 1
                if not isinstance(knode, yaml.ScalarNode):
                    raise MatrixError(self.file, kline, path,
                                      "expected a plain key, found a "
                                      "complex key")
                key = str(self.constructor.construct_object(knode))
                if key in out:
                    raise MatrixError(
                        self.file, kline, _join(path, key),
                        f"duplicate key (first given on line "
                        f"{key_lines[key]})")
                key_lines[key] = kline
                out[key] = self.build(vnode, _join(path, key))
            return Node(self.file, line, path, out, key_lines)
        if isinstance(node, yaml.SequenceNode):
            items = [self.build(v, f"{path}[{i}]")
                     for i, v in enumerate(node.value)]
            return Node(self.file, line, path, items)
        try:
            value = self.constructor.construct_object(node)
        except yaml.YAMLError as exc:
            raise MatrixError(self.file, line, path, f"bad value: {exc}")
        return Node(self.file, line, path, value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def load(text: str, file: str) -> Node:
    """Parse YAML text; syntax errors become MatrixError with a line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise MatrixError(file, line, "", f"YAML syntax error: {problem}")
    except yaml.YAMLError as exc:
        raise MatrixError(file, None, "", f"YAML error: {exc}")
    if root is None:
        raise MatrixError(file, 1, "", "the file is empty; expected a "
                          "mapping with a 'variants' key and others")
    return _Builder(file).build(root, "")


def plain(node: Node) -> Any:
    """The node's value with positions stripped (for hashing and output)."""
    if isinstance(node.value, dict):
        return {k: plain(v) for k, v in node.value.items()}
    if isinstance(node.value, list):
        return [plain(v) for v in node.value]
    return node.value
