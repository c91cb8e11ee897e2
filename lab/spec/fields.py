"""Typed reading of YAML nodes: every mismatch names file, line and key.

Small helpers used by the matrix model: `Fields` consumes a mapping key by
key and rejects whatever key nobody asked for; the `as_*` functions check a
scalar's type and shape.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, TypeVar

from lab.errors import MatrixError
from lab.spec.yamlsrc import Node, kind_name

T = TypeVar("T")

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{0,31}$")
SIZE_RE = re.compile(r"^(\d{1,18})\s*([KMGT]?)i?B?$", re.IGNORECASE)
_UNIT_BYTES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _found(node: Node) -> str:
    if isinstance(node.value, (dict, list)):
        return f"a {kind_name(node.value)}"
    return f"{kind_name(node.value)} {node.value!r}"


def expected(node: Node, what: str) -> MatrixError:
    return node.error(f"expected {what}, found {_found(node)}")


class Fields:
    """The keys of one mapping node, each to be taken at most once."""

    def __init__(self, node: Node, what: str) -> None:
        if not isinstance(node.value, dict):
            raise expected(node, f"a mapping ({what})")
        self.node = node
        self.what = what
        self.allowed: list[str] = []

    def get(self, key: str) -> Node | None:
        self.allowed.append(key)
        return self.node.value.get(key)

    def need(self, key: str) -> Node:
        child = self.get(key)
        if child is None:
            raise self.node.error(f"missing required key '{key}' "
                                  f"in {self.what}")
        return child

    def done(self) -> None:
        for key in self.node.value:
            if key not in self.allowed:
                raise self.node.error(
                    f"unknown key '{key}' in {self.what}; expected one of: "
                    f"{', '.join(self.allowed)}", key)


def as_str(node: Node, what: str = "a string") -> str:
    if not isinstance(node.value, str):
        raise expected(node, what)
    return node.value


def as_name(node: Node, what: str = "a name") -> str:
    value = node.value
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise expected(node, f"{what} (lower-case letters, digits, '-' "
                       "and '.', at most 32 characters)")
    return value


def as_int(node: Node, low: int, high: int | None = None,
           what: str = "an integer") -> int:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise expected(node, what)
    if value < low or (high is not None and value > high):
        top = f" and at most {high}" if high is not None else ""
        raise node.error(f"expected {what} of at least {low}{top}, "
                         f"found {value}")
    return value


def as_number(node: Node) -> float:
    """A non-negative, finite number (integer or decimal)."""
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise expected(node, "a non-negative number")
    return float(value)


def as_bool(node: Node) -> bool:
    if not isinstance(node.value, bool):
        raise expected(node, "true or false")
    return node.value


def as_size_mib(node: Node) -> int:
    """A size like 512M, 1G or a bare number of MiB; returned in MiB."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        match = SIZE_RE.match(value.strip())
        if match:
            size = int(match.group(1)) * _UNIT_BYTES[match.group(2).upper()]
            if size >= 1 << 20 and size % (1 << 20) == 0:
                return size >> 20
    raise expected(node, "a size in whole MiB such as 512M, 2G or 768")


def as_list(node: Node, item: Callable[[Node], T], what: str) -> list[T]:
    if not isinstance(node.value, list):
        raise expected(node, f"a list of {what}")
    return [item(child) for child in node.value]


def as_names(node: Node, what: str) -> list[str]:
    """A name or a list of distinct names."""
    if isinstance(node.value, str):
        return [as_name(node, what)]
    names = as_list(node, lambda n: as_name(n, what), what)
    for i, name in enumerate(names):
        if name in names[:i]:
            raise node.value[i].error(f"'{name}' is listed twice")
    return names


def as_settings(node: Node, what: str) -> dict[str, str]:
    """A mapping of setting name to scalar value (kept as text)."""
    fields = Fields(node, what)
    out: dict[str, str] = {}
    for key, child in node.value.items():
        fields.get(key)
        if isinstance(child.value, (dict, list)) or child.value is None:
            raise expected(child, "a scalar value (string or number)")
        value: Any = child.value
        if isinstance(value, bool):
            value = int(value)
        out[key] = str(value)
    return out


def as_named(node: Node, what: str,
             build: Callable[[str, Node], T]) -> dict[str, T]:
    """A mapping of name -> definition; names checked, order kept."""
    if not isinstance(node.value, dict) or not node.value:
        raise expected(node, f"a non-empty mapping of {what}")
    out: dict[str, T] = {}
    for key, child in node.value.items():
        key_node = Node(node.file, node.key_lines[key], child.path, key)
        name = as_name(key_node, f"a name for {what}")
        out[name] = build(name, child)
    return out
