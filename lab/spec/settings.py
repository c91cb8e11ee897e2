"""Keys variants and workloads share: runtime settings (`sysfs`,
`sysctl`), checked by name, and the config fragments they name."""
from __future__ import annotations

import re
from pathlib import Path

from lab.spec.fields import Fields, as_names, as_settings
from lab.spec.yamlsrc import Node

SYSFS_RE = re.compile(r"^[A-Za-z0-9_.:/-]+$")
SYSCTL_RE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")


def _settings(fields: Fields, key: str, pattern: re.Pattern[str],
              what: str) -> dict[str, str]:
    node = fields.get(key)
    if node is None:
        return {}
    out = as_settings(node, f"{key} settings")
    for name in out:
        if not pattern.match(name) or ".." in name.split("/"):
            raise node.error(f"'{name}' is not {what}", name)
    return out


def sysfs(fields: Fields) -> dict[str, str]:
    return _settings(fields, "sysfs", SYSFS_RE,
                     "a path below /sys such as "
                     "kernel/mm/transparent_hugepage/enabled")


def sysctl(fields: Fields) -> dict[str, str]:
    return _settings(fields, "sysctl", SYSCTL_RE,
                     "a sysctl name such as vm.page-cluster")


def fragment_names(node: Node | None, fragments: dict[str, Path]
                    ) -> list[str]:
    """`fragments:` of a variant or a workload: names declared under the
    matrix's `fragments`."""
    if node is None:
        return []
    names = as_names(node, "a fragment name")
    for i, f in enumerate(names):
        if f not in fragments:
            at = node.value[i] if isinstance(node.value, list) else node
            raise at.error(f"fragment '{f}' is not declared under "
                           f"'fragments'; expected one of: "
                           f"{', '.join(fragments)}")
    return names
