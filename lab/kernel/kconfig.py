"""Kernel config: base target + fragments -> .config, then prove it stuck.

olddefconfig silently drops an option whose dependencies are missing, so
after it every option a fragment asked for is compared with the final
.config; each one that changed is reported with its `depends on` lines
and which of their symbols are off.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lab.errors import LabError

SET_RE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
UNSET_RE = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
SYMBOL_RE = re.compile(r"(!?)\b([A-Z][A-Z0-9_]+)\b")


def parse(text: str, origin: str = "") -> dict[str, str]:
    """Options of a .config or fragment; 'n' for '# CONFIG_X is not set'.

    Unknown line shapes in a fragment are an error naming the line."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        m = SET_RE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
            continue
        m = UNSET_RE.match(line)
        if m:
            out[m.group(1)] = "n"
            continue
        if line and not line.startswith("#") and origin:
            raise LabError(f"{origin}:{n}: expected 'CONFIG_NAME=value' or "
                           f"'# CONFIG_NAME is not set', found {raw!r}")
    return out


@dataclass(frozen=True)
class Dropped:
    option: str
    wanted: str
    got: str
    depends: tuple[str, ...]
    unmet: tuple[str, ...]

    def __str__(self) -> str:
        got = "not set" if self.got == "n" else self.got
        text = f"{self.option}={self.wanted} did not stick (final: {got})"
        if self.depends:
            text += "; depends on " + " && ".join(
                f"({d})" for d in self.depends)
        if self.unmet:
            text += "; unmet: " + ", ".join(self.unmet)
        elif not self.depends:
            text += "; no such option in this tree, or it has no prompt"
        return text


def merge(base: str, fragments: list[tuple[str, str]]) -> tuple[str, dict]:
    """Base .config text with fragments appended in order (later wins).

    Returns the merged text and the options the fragments request."""
    wanted: dict[str, str] = {}
    parts = [base.rstrip("\n")]
    for origin, text in fragments:
        wanted.update(parse(text, origin))
        parts.append(f"# --- {origin}\n{text.rstrip()}")
    return "\n".join(parts) + "\n", wanted


def dependencies(srctree: Path, option: str) -> list[str]:
    """The `depends on` expressions of a Kconfig symbol (all definitions)."""
    name = option.removeprefix("CONFIG_")
    start = re.compile(rf"^\s*(menu)?config\s+{name}\s*$")
    block_end = re.compile(r"^\s*(menu)?config\s|^(menu|endmenu|choice|"
                           r"endchoice|if|endif|source|comment)\b")
    out: list[str] = []
    for kconfig in srctree.rglob("Kconfig*"):
        try:
            lines = kconfig.read_text(errors="replace").splitlines()
        except OSError:
            continue
        inside = False
        for line in lines:
            if start.match(line):
                inside = True
                continue
            if inside and block_end.match(line):
                inside = False
            if inside:
                stripped = line.strip()
                if stripped.startswith("depends on"):
                    out.append(stripped.removeprefix("depends on").strip())
    return out


def check(srctree: Path, wanted: dict[str, str],
          final: dict[str, str]) -> list[Dropped]:
    """Every requested option whose final value differs, explained."""
    dropped = []
    for option, value in wanted.items():
        got = final.get(option, "n")
        if got == value:
            continue
        deps = dependencies(srctree, option)
        unmet = []
        for expr in deps:
            for negated, sym in SYMBOL_RE.findall(expr):
                state = final.get(f"CONFIG_{sym}", "n")
                if (state == "n") == bool(negated):
                    continue
                if f"{sym}={state}" not in unmet:
                    unmet.append(f"{sym}={state}")
        dropped.append(Dropped(option, value, got, tuple(deps),
                               tuple(unmet)))
    return dropped
