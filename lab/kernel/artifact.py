"""A finished kernel build: what the guest stage needs of the build stage
(a leaf, so that booting a kernel does not load the builder)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Build:
    """A finished kernel build, as recorded in its meta.json."""
    variant: str
    key: str
    release: str
    tree: str
    tree_version: str
    commit: str
    patches: list[dict[str, str]]
    config_sha256: str
    compiler: str
    seconds: float
    directory: str

    @property
    def bzimage(self) -> Path:
        return Path(self.directory) / "bzImage"

    @property
    def config(self) -> Path:
        return Path(self.directory) / "config"
