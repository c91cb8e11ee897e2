"""The package's floors: each stage imports only from the stages before
it (and the shared helpers), and no chain of imports runs deep.

Read from the source with ast. The direction counts every import, a
function-level one too (cli.py's lazy loads only defer it); the depth
counts what importing a module loads, its module-level imports."""
from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

from lab.paths import REPO

LAB = REPO / "lab"
# The flow, in order (lab/__init__.py); a stage may import from itself
# and from those before it.
STAGES = ("spec", "kernel", "guest", "calibrate", "results", "session",
          "report", "cells")
# Shared helpers (leaves for the stages) and the entry points.
SHARED = ("errors", "cache", "paths", "procs", "progress", "elf")
ENTRY = ("cli", "__main__")
MAX_DEPTH = 8


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, lazy: bool = True) -> set[str]:
    """The lab modules `path` imports: anywhere in the file, or (lazy
    False) at module level only."""
    tree = ast.parse(path.read_text())
    nodes = ast.walk(tree) if lazy else iter(tree.body)
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "lab":
            out.add(node.module)
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if (REPO / (sub.replace(".", "/") + ".py")).is_file():
                    out.add(sub)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names
                    if a.name.split(".")[0] == "lab"}
    return out


GRAPH = {module_name(p): imports_of(p) for p in LAB.rglob("*.py")}
LOADS = {module_name(p): imports_of(p, lazy=False) for p in LAB.rglob("*.py")}


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@functools.lru_cache(maxsize=None)
def depth(module: str) -> int:
    """Modules on the longest chain of module-level imports from
    `module`, itself included (a package's __init__ counts when a module
    imports the package itself, not when it imports one of its modules)."""
    deps = [d for d in LOADS.get(module, ()) if d in LOADS and d != module
            and not module.startswith(d + ".")]
    return 1 + max((depth(d) for d in deps), default=0)


def test_each_stage_imports_only_from_the_stages_before_it() -> None:
    backward = []
    for module, deps in GRAPH.items():
        stage = top(module)
        if stage not in STAGES:
            continue
        for dep in deps:
            other = top(dep)
            if other in SHARED or other == "" or other == stage:
                continue
            if other in ENTRY or \
                    STAGES.index(other) > STAGES.index(stage):
                backward.append(f"{module} imports {dep}")
    assert not backward, backward


def test_no_import_chain_is_deeper_than_eight_modules() -> None:
    deepest = max(LOADS, key=depth)
    assert depth(deepest) <= MAX_DEPTH, \
        f"{deepest}: {depth(deepest)} modules deep"


def test_the_depth_counts_a_real_chain() -> None:
    # errors imports nothing of the lab; the model imports errors only;
    # the report directory sits on top of the report stage.
    assert depth("lab.errors") == 1
    assert depth("lab.spec.model") == 2
    assert depth("lab.report.reportdir") > depth("lab.report.slide")


MAX_LINES = 450


def test_no_import_cycle_even_through_a_function_level_import() -> None:
    """A function-level import defers a load, it does not make a cycle
    harmless: the runner booting calibration guests through dilation,
    which booted them through the runner, was one."""
    cycles = []
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(GRAPH.get(module, ())):
            if dep not in GRAPH or module.startswith(dep + "."):
                continue
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles


def test_no_module_is_longer_than_450_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in LAB.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_build_validate_and_boot_load_no_plotting_or_statistics() -> None:
    """`lab build`, `lab validate` and `lab boot` never need matplotlib
    or scipy: what they load at start (the CLI and the modules they reach
    at module level) reaches no report or statistics module."""
    def reach(module: str, seen: set[str]) -> set[str]:
        for dep in LOADS.get(module, ()):
            if dep in LOADS and dep not in seen:
                seen.add(dep)
                reach(dep, seen)
        return seen

    loaded = reach("lab.cli", {"lab.cli"})
    heavy = {m for m in loaded if top(m) in ("report", "results")
             and m not in ("lab.results.store", "lab.results.record")}
    assert not heavy, sorted(heavy)
    # and in a real process: validate the repository's matrix
    probe = ("import sys; from lab import cli; rc = cli.main(['validate']); "
             "print(rc, sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('matplotlib', 'scipy')))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO,
                         capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "0 []", out.stdout
