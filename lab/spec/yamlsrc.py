"""YAML with line numbers: every value remembers where it was written.

PyYAML's composer gives nodes with marks; this turns them into a small tree
of `Node`s that keep (file, line, key path), refuses duplicate keys (which
PyYAML would silently let the last one win) and resolves scalars with the
safe loader's rules. Whatever the text holds, the result is a tree or a
MatrixError with a line: bad tags and typed values (2017-13-45, !!int x),
merge keys, aliases that contain themselves or expand past MAX_VALUES,
nesting too deep for the parser (tests/unit/test_matrix_fuzz.py).
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


# Past this many values (aliases expand: "billion laughs") the file is
# refused rather than built.
MAX_VALUES = 50_000
MERGE_TAG = "tag:yaml.org,2002:merge"


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.constructor = yaml.SafeLoader(stream="")
        self.open: set[int] = set()     # collections being built (aliases)
        self.count = 0

    def build(self, node: yaml.Node, path: str) -> Node:
        line = node.start_mark.line + 1
        self.count += 1
        if self.count > MAX_VALUES:
            raise MatrixError(self.file, line, path,
                              f"more than {MAX_VALUES} values once aliases "
                              "are expanded; refusing to read further")
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return Node(self.file, line, path,
                        self.scalar(node, line, path, "value"))
        if id(node) in self.open:
            raise MatrixError(self.file, line, path, "recursive alias: "
                              "this value contains itself")
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return Node(self.file, line, path,
                            [self.build(v, f"{path}[{i}]")
                             for i, v in enumerate(node.value)])
            return self.mapping(node, line, path)
        finally:
            self.open.discard(id(node))

    def mapping(self, node: yaml.MappingNode, line: int, path: str) -> Node:
        out: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        for knode, vnode in node.value:
            kline = knode.start_mark.line + 1
            if knode.tag == MERGE_TAG:
                raise MatrixError(self.file, kline, _join(path, "<<"),
                                  "merge keys ('<<') are not supported; "
                                  "write the keys out")
            if not isinstance(knode, yaml.ScalarNode):
                raise MatrixError(self.file, kline, path,
                                  "expected a plain key, found a "
                                  "complex key")
            key = str(self.scalar(knode, kline,
                                  _join(path, str(knode.value)), "key"))
            if key in out:
                raise MatrixError(
                    self.file, kline, _join(path, key),
                    f"duplicate key (first given on line "
                    f"{key_lines[key]})")
            key_lines[key] = kline
            out[key] = self.build(vnode, _join(path, key))
        return Node(self.file, line, path, out, key_lines)

    def scalar(self, node: yaml.Node, line: int, path: str,
               what: str) -> Any:
        """The scalar's value by the safe loader's rules; a tag it cannot
        construct or a malformed typed value (2017-13-45, !!int x) is an
        error at this line."""
        try:
            return self.constructor.construct_object(node)
        except yaml.MarkedYAMLError as exc:
            problem = exc.problem or str(exc)
        except Exception as exc:    # noqa: BLE001 - PyYAML's typed
            # constructors fail in many ways (ValueError for 2017-13-45,
            # IndexError for an empty !!int): all are a bad value here.
            problem = str(exc) or type(exc).__name__
        raise MatrixError(self.file, line, path, f"bad {what}: {problem}")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def load(text: str, file: str) -> Node:
    """Parse YAML text; syntax errors become MatrixError with a line."""
    try:
        root = _compose(text, file)
        if root is None:
            raise MatrixError(file, 1, "", "the file is empty; expected a "
                              "mapping with a 'variants' key and others")
        return _Builder(file).build(root, "")
    except RecursionError:
        # PyYAML's composer and the builder both recurse per level.
        raise MatrixError(file, 1, "", "YAML error: nested too deeply "
                          "to read") from None


def _compose(text: str, file: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = exc.problem or str(exc)
        raise MatrixError(file, line, "", f"YAML syntax error: {problem}")
    except yaml.reader.ReaderError as exc:
        # A character YAML does not allow (a control character, say).
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        char = chr(exc.character) if isinstance(exc.character, int) \
            else exc.character
        raise MatrixError(file, line, "", f"YAML error: character "
                          f"{char!r} is not allowed in YAML")
    except yaml.YAMLError as exc:
        raise MatrixError(file, 1, "", f"YAML error: {exc}")


def plain(node: Node) -> Any:
    """The node's value with positions stripped (for hashing and output)."""
    if isinstance(node.value, dict):
        return {k: plain(v) for k, v in node.value.items()}
    if isinstance(node.value, list):
        return [plain(v) for v in node.value]
    return node.value
