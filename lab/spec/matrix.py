"""matrix.yaml -> a validated, immutable model of the experiment.

The matrix names kernel trees (Debian source packages), config fragments,
variants (tree + ordered patch series + fragments + boot and runtime
settings), swap backends, workloads, the guest shape, the baseline and
named sub-matrices. A sub-matrix expands to cells: variant x backend x
workload x repeat, filtered by `only` and `exclude` rules. `expect`
rules say which counters each matching cell must move (lab/spec/expect.py).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import random
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from lab.errors import MatrixError
from lab.spec import expect
from lab.spec.expect import Expectation
from lab.spec.questions import (Question, as_duration_s, check_covered,
                                question)
from lab.spec.fields import (Fields, as_bool, as_int, as_number, as_list, as_name, as_names,
                        as_settings, as_size_mib, as_str, expected)
from lab.spec.yamlsrc import Node, load

BACKEND_KINDS = ("rotational", "nvme", "pmem")
FIRMWARES = ("seabios", "ovmf")
BASE_CONFIGS = ("tinyconfig", "defconfig")
TREE_RE = re.compile(r"^linux-source-\d+\.\d+$")
SYSFS_RE = re.compile(r"^[A-Za-z0-9_.:/-]+$")
SYSCTL_RE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
RULE_KEYS = ("variant", "backend", "workload", "repeat")


@dataclass(frozen=True)
class Tree:
    package: str            # Debian package, e.g. linux-source-6.1
    base_config: str        # make target the fragments go on top of
    arch: str = "x86_64"


@dataclass(frozen=True)
class Variant:
    name: str
    tree: str
    series: tuple[str, ...]
    fragments: tuple[str, ...]
    cmdline: str
    sysfs: dict[str, str]
    sysctl: dict[str, str]
    description: str
    # A slow kernel (KASAN, lockdep) multiplies every cell's workload
    # timeout and boot allowance; what it measures stays the same.
    timeout_scale: float = 1.0
    # An A/A twin: another variant's kernel (one build) under this name.
    same_as: str | None = None

    @property
    def kernel(self) -> str:
        """The variant whose build this one boots."""
        return self.same_as or self.name

    @property
    def patched(self) -> bool:
        return bool(self.series)


@dataclass(frozen=True)
class Backend:
    name: str
    kind: str
    params: dict[str, str | int | float | bool]


@dataclass(frozen=True)
class Workload:
    name: str
    program: str
    args: tuple[str, ...]
    timeout_s: int
    sysfs: dict[str, str]
    sysctl: dict[str, str]
    trace: bool = False     # time do_swap_page with function_graph


@dataclass(frozen=True)
class Guest:
    memory_mib: int
    vcpus: int
    swap_mib: int
    firmware: str
    cmdline: str


@dataclass(frozen=True)
class Rule:
    """Cells match when every named dimension is one of the given values."""
    dims: dict[str, tuple[str, ...]]

    def matches(self, cell: "Cell") -> bool:
        have = {"variant": cell.variant, "backend": cell.backend,
                "workload": cell.workload, "repeat": str(cell.repeat)}
        return all(have[k] in v for k, v in self.dims.items())


@dataclass(frozen=True)
class SubMatrix:
    name: str
    variants: tuple[str, ...]
    backends: tuple[str, ...]
    workloads: tuple[str, ...]
    repeats: int
    only: tuple[Rule, ...]
    exclude: tuple[Rule, ...]
    # what its tables compare against, when not the matrix's baseline
    baseline: str | None = None
    # The questions it answers; with them, `repeats` is the minimum per
    # arm and more repeats go to undecided questions up to max_repeats,
    # within budget_s seconds of cells (None: no limit).
    questions: tuple[str, ...] = ()
    max_repeats: int = 0
    budget_s: int | None = None
    order_seed: int = 0             # draws each block's variant order


@dataclass(frozen=True, order=True)
class Cell:
    repeat: int
    variant: str
    backend: str
    workload: str

    @property
    def id(self) -> str:
        return f"{self.variant}-{self.backend}-{self.workload}-r{self.repeat}"


@dataclass(frozen=True)
class Matrix:
    file: Path
    trees: dict[str, Tree]
    fragments: dict[str, Path]
    variants: dict[str, Variant]
    backends: dict[str, Backend]
    workloads: dict[str, Workload]
    guest: Guest
    repeats: int
    baseline: str
    matrices: dict[str, SubMatrix]
    patches_dir: Path = field(repr=False)
    expect: tuple[Expectation, ...] = ()
    questions: dict[str, Question] = field(default_factory=dict)

    def series_dir(self, tree: str, series: str) -> Path:
        return self.patches_dir / tree / series

    def sub(self, name: str) -> SubMatrix:
        if name not in self.matrices:
            raise MatrixError(str(self.file), None, "matrices",
                              f"no sub-matrix named '{name}'; this file "
                              f"has: {', '.join(self.matrices)}")
        return self.matrices[name]

    def order(self, name: str, repeat: int, workload: str,
              backend: str) -> tuple[str, ...]:
        """The sub-matrix's variants in the order one (repeat, workload,
        backend) block runs them. The first cell after a change of
        backend or workload runs slower (measured: up to a third on pmem,
        where every variant ran the same code), so no variant may own
        that place: each block starts from a permutation drawn with the
        sub-matrix's order_seed (recorded in the run), and each repeat
        rotates it one place, so over len(variants) repeats every variant
        takes every slot once."""
        sub = self.sub(name)
        rng = random.Random(f"{sub.order_seed}:{workload}:{backend}")
        perm = list(sub.variants)
        rng.shuffle(perm)
        shift = (repeat - 1) % len(perm)
        return tuple(perm[shift:] + perm[:shift])

    def cells(self, name: str,
              repeats: Iterable[int] | None = None) -> list[Cell]:
        """The sub-matrix's cells for `repeats` (default 1 to its
        `repeats`), interleaved: repeat 1 of every variant before repeat
        2 of any, so host drift hits all variants alike. A sub-matrix
        with questions runs only the cells its questions compare."""
        sub = self.sub(name)
        reps = range(1, sub.repeats + 1) if repeats is None else repeats
        out = []
        for rep, wl, be in itertools.product(reps, sub.workloads,
                                             sub.backends):
            for var in self.order(name, rep, wl, be):
                out.append(Cell(rep, var, be, wl))
        return [cell for cell in out if self._selected(sub, cell) and
                self._asked(sub, cell)]

    def _asked(self, sub: SubMatrix, cell: Cell) -> bool:
        return not sub.questions or any(
            cell.variant in (q.candidate, q.reference) and
            cell.workload == q.workload and cell.backend in q.backends
            for q in (self.questions[n] for n in sub.questions))

    @staticmethod
    def _selected(sub: SubMatrix, cell: Cell) -> bool:
        if sub.only and not any(r.matches(cell) for r in sub.only):
            return False
        return not any(r.matches(cell) for r in sub.exclude)


# ---------------------------------------------------------------- parsing

def load_matrix(path: Path) -> Matrix:
    """Read and validate a matrix file; raises MatrixError on bad input."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise MatrixError(str(path), None, "",
                          f"cannot read the matrix file: {exc.strerror}")
    return parse_matrix(text, path)


def parse_matrix(text: str, path: Path,
                 patches_dir: Path | None = None) -> Matrix:
    root = load(text, str(path))
    base = path.parent
    top = Fields(root, "the matrix")
    version = top.get("version")
    if version is not None and as_int(version, 1, 1, "version 1") != 1:
        raise expected(version, "version 1")
    trees = _trees(top.need("trees"))
    fragments = _fragments(top.need("fragments"), base)
    pdir = patches_dir or base / "patches"
    vnode = top.need("variants")
    variants = _twins(_named(vnode, "variants", lambda n, v: _variant(
        n, v, trees, fragments, pdir)), vnode)
    backends = _named(top.need("backends"), "backends", _backend)
    workloads = _named(top.need("workloads"), "workloads", _workload)
    guest = _guest(top.need("guest"))
    rep_node = top.get("repeats")
    repeats = as_int(rep_node, 1, 1000, "a repeat count") if rep_node else 1
    bnode = top.need("baseline")
    baseline = as_name(bnode, "a variant name")
    if baseline not in variants:
        raise bnode.error(f"baseline '{baseline}' is not a variant; "
                          f"expected one of: {', '.join(variants)}")
    dims = {"variant": variants, "backend": backends, "workload": workloads}
    qnode = top.get("questions")
    questions = _named(qnode, "questions", lambda n, v: question(
        n, v, dims)) if qnode else {}
    matrices = _named(top.need("matrices"), "matrices",
                      lambda n, v: _submatrix(n, v, dims, repeats,
                                              questions))
    enode = top.get("expect")
    expectations = tuple(as_list(enode, lambda n: _expectation(n, dims),
                                 "expectations")) if enode else ()
    for needed in ("quick", "full"):
        if needed not in matrices:
            raise top.node.error(f"missing sub-matrix '{needed}' (every "
                                 "matrix has 'quick' and 'full')",
                                 "matrices")
    top.done()
    return Matrix(path, trees, fragments, variants, backends, workloads,
                  guest, repeats, baseline, matrices, pdir, expectations,
                  questions)


def _twins(variants: dict[str, Variant], node: Node) -> dict[str, Variant]:
    """Each `same_as` variant becomes a copy of its target under its own
    name: the same build, settings and series (the A/A control)."""
    out = dict(variants)
    for name, v in variants.items():
        if v.same_as is None:
            continue
        target = variants.get(v.same_as)
        if target is None or target.same_as is not None:
            raise node.error(f"variant '{name}' is same_as "
                             f"'{v.same_as}', which is not a variant with "
                             "a kernel of its own", name)
        out[name] = dataclasses.replace(
            target, name=name, same_as=target.name,
            description=v.description or
            f"{target.name}'s kernel under a second name (A/A control)")
    return out


def _named(node: Node, what: str, build):
    """A mapping of name -> definition; names checked, order kept."""
    if not isinstance(node.value, dict) or not node.value:
        raise expected(node, f"a non-empty mapping of {what}")
    out = {}
    for key, child in node.value.items():
        key_node = Node(node.file, node.key_lines[key], child.path, key)
        name = as_name(key_node, f"a name for {what}")
        out[name] = build(name, child)
    return out


def _trees(node: Node) -> dict[str, Tree]:
    def tree(name: str, child: Node) -> Tree:
        if not TREE_RE.match(name):
            raise child.error("expected a Debian kernel source package "
                              "name such as linux-source-6.1")
        base_config = "tinyconfig"
        if child.value is not None:
            fields = Fields(child, f"tree '{name}'")
            bc = fields.get("base_config")
            if bc is not None:
                base_config = as_str(bc)
                if base_config not in BASE_CONFIGS:
                    raise expected(bc, " or ".join(BASE_CONFIGS))
            fields.done()
        return Tree(name, base_config)
    return _named(node, "trees", tree)


def _fragments(node: Node, base: Path) -> dict[str, Path]:
    def fragment(name: str, child: Node) -> Path:
        path = base / as_str(child, "a path to a config fragment")
        if not path.is_file():
            raise child.error(f"config fragment file {path} does not exist")
        return path
    return _named(node, "fragments", fragment)


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


def _sysfs(fields: Fields) -> dict[str, str]:
    return _settings(fields, "sysfs", SYSFS_RE,
                     "a path below /sys such as "
                     "kernel/mm/transparent_hugepage/enabled")


def _sysctl(fields: Fields) -> dict[str, str]:
    return _settings(fields, "sysctl", SYSCTL_RE,
                     "a sysctl name such as vm.page-cluster")


def _variant(name: str, node: Node, trees: dict[str, Tree],
             fragments: dict[str, Path], pdir: Path) -> Variant:
    fields = Fields(node, f"variant '{name}'")
    twin = fields.get("same_as")
    if twin is not None:
        # Resolved by _twins once every variant is read.
        desc = fields.get("description")
        fields.done()
        return Variant(name, "", (), (), "", {}, {},
                       as_str(desc) if desc else "",
                       same_as=as_name(twin, "a variant name"))
    tnode = fields.need("tree")
    tree = as_str(tnode, "a tree name")
    if tree not in trees:
        raise tnode.error(f"tree '{tree}' is not declared under 'trees'; "
                          f"expected one of: {', '.join(trees)}")
    series: list[str] = []
    snode = fields.get("series")
    if snode is not None:
        series = as_names(snode, "a patch series name")
        for i, s in enumerate(series):
            listing = pdir / tree / s / "series"
            if not listing.is_file():
                at = snode.value[i] if isinstance(snode.value, list) \
                    else snode
                raise at.error(f"patch series '{s}' not found for tree "
                               f"{tree}: expected the file {listing}")
    frag: list[str] = []
    fnode = fields.get("fragments")
    if fnode is not None:
        frag = as_names(fnode, "a fragment name")
        for i, f in enumerate(frag):
            if f not in fragments:
                at = fnode.value[i] if isinstance(fnode.value, list) \
                    else fnode
                raise at.error(f"fragment '{f}' is not declared under "
                               f"'fragments'; expected one of: "
                               f"{', '.join(fragments)}")
    cmd = fields.get("cmdline")
    desc = fields.get("description")
    snode = fields.get("timeout_scale")
    scale = 1.0
    if snode is not None:
        scale = as_number(snode)
        if not 1 <= scale <= 100:
            raise expected(snode, "a timeout scale from 1 to 100")
    variant = Variant(name, tree, tuple(series), tuple(frag),
                      as_str(cmd) if cmd else "", _sysfs(fields),
                      _sysctl(fields), as_str(desc) if desc else "", scale)
    fields.done()
    return variant


BACKEND_PARAMS: dict[str, dict[str, str]] = {
    # param -> "int" | "number" | "size" | "str" | "bool" | "dilation";
    # the device-model keys are explained in docs/devices.md.
    "rotational": {"rotation_rate": "int", "throttle_iops": "int",
                   "throttle_bps": "size", "model": "str",
                   "seek_short_ms": "number", "seek_full_ms": "number",
                   "seek_knee": "number", "rpm": "int",
                   "transfer_mb_s": "number", "stroke": "size",
                   "dilation": "dilation"},
    "nvme": {"mdts": "int", "model": "str", "read_us": "number",
             "write_us": "number", "bandwidth_mb_s": "number",
             "parallel": "int", "dilation": "dilation"},
    "pmem": {"mode": "str", "dax": "bool"},
}
# Sticky media faults, injected by the device model (any model).
FAULT_RATES = ("read_error_rate", "write_error_rate")
FAULT_PARAMS = dict.fromkeys(FAULT_RATES, "rate") | {"error_seed": "int"}
for _kind in ("rotational", "nvme"):
    BACKEND_PARAMS[_kind].update(FAULT_PARAMS)
PMEM_MODES = ("nvdimm", "memmap")
# Device models per kind (lab/devmodel); pmem is memory, never modelled.
MODELS = {"rotational": ("none", "disk"), "nvme": ("none", "ssd")}


def _backend(name: str, node: Node) -> Backend:
    fields = Fields(node, f"backend '{name}'")
    knode = fields.need("kind")
    kind = as_str(knode, "a backend kind")
    if kind not in BACKEND_KINDS:
        raise expected(knode, f"one of {', '.join(BACKEND_KINDS)}")
    params: dict[str, str | int | float | bool] = {}
    for param, typ in BACKEND_PARAMS[kind].items():
        child = fields.get(param)
        if child is None:
            continue
        if typ == "int":
            params[param] = as_int(child, 0, what=f"an integer {param}")
        elif typ == "size":
            params[param] = as_size_mib(child)
        elif typ == "bool":
            params[param] = as_bool(child)
        elif typ == "number":
            params[param] = as_number(child)
        elif typ == "rate":
            params[param] = as_number(child)
            if not 0 <= params[param] <= 1:
                raise expected(child, f"{param}: a share from 0 to 1")
        elif typ == "dilation":
            params[param] = _dilation(child)
        else:
            params[param] = as_str(child)
    if kind == "pmem" and params.get("mode", "nvdimm") not in PMEM_MODES:
        raise expected(node.value["mode"], " or ".join(PMEM_MODES))
    if "model" in params and params["model"] not in MODELS[kind]:
        raise expected(node.value["model"],
                       f"a {kind} model: {' or '.join(MODELS[kind])}")
    faulty = [p for p in FAULT_RATES if params.get(p)]
    if faulty and params.get("model", "none") == "none":
        raise expected(node.value[faulty[0]],
                       f"{faulty[0]} only with a device model (model: "
                       f"{' or '.join(MODELS[kind][1:])}): the model "
                       "injects the faults")
    fields.done()
    return Backend(name, kind, params)


def _dilation(node: Node) -> str | float:
    if node.value in ("auto", "off"):
        return str(node.value)
    value = node.value
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) and value > 0:
        return float(value)
    raise expected(node, "auto, off or a positive dilation factor")


def _workload(name: str, node: Node) -> Workload:
    fields = Fields(node, f"workload '{name}'")
    program = as_name(fields.need("program"), "a workload program name")
    anode = fields.get("args")
    args = as_list(anode, lambda n: str(_scalar(n)), "arguments") \
        if anode else []
    tnode = fields.get("timeout")
    timeout = as_int(tnode, 10, 86400, "a timeout in seconds") \
        if tnode else 600
    trace_node = fields.get("trace")
    workload = Workload(name, program, tuple(args), timeout,
                        _sysfs(fields), _sysctl(fields),
                        as_bool(trace_node) if trace_node else False)
    fields.done()
    return workload


def _scalar(node: Node) -> str | int | float:
    if isinstance(node.value, (str, int, float)) and \
            not isinstance(node.value, bool):
        return node.value
    raise expected(node, "a string or number")


def _guest(node: Node) -> Guest:
    fields = Fields(node, "guest")
    memory = as_size_mib(fields.need("memory"))
    vcpus = as_int(fields.need("vcpus"), 1, 64, "a vCPU count")
    swap = as_size_mib(fields.need("swap"))
    fw = fields.get("firmware")
    firmware = as_str(fw) if fw else "seabios"
    if fw is not None and firmware not in FIRMWARES:
        raise expected(fw, " or ".join(FIRMWARES))
    cmd = fields.get("cmdline")
    guest = Guest(memory, vcpus, swap, firmware, as_str(cmd) if cmd else "")
    fields.done()
    return guest


def _submatrix(name: str, node: Node, dims: dict[str, dict],
               default_repeats: int,
               questions: dict[str, Question]) -> SubMatrix:
    fields = Fields(node, f"sub-matrix '{name}'")

    def pick(dim: str) -> tuple[str, ...]:
        child = fields.get(dim + "s")
        if child is None:
            return tuple(dims[dim])
        names = as_names(child, f"a {dim} name")
        for i, n in enumerate(names):
            if n not in dims[dim]:
                at = child.value[i] if isinstance(child.value, list) \
                    else child
                raise at.error(f"unknown {dim} '{n}'; expected one of: "
                               f"{', '.join(dims[dim])}")
        return tuple(names)

    variants, backends, workloads = pick("variant"), pick("backend"), \
        pick("workload")
    rnode = fields.get("repeats")
    repeats = as_int(rnode, 1, 1000, "a repeat count") if rnode \
        else default_repeats
    rules = {}
    for key in ("only", "exclude"):
        child = fields.get(key)
        rules[key] = tuple(as_list(
            child, lambda n: _rule(n, dims), "rules")) if child else ()
    bnode = fields.get("baseline")
    baseline = as_name(bnode, "a variant name") if bnode else None
    if bnode and baseline not in variants:
        raise bnode.error(f"baseline '{baseline}' is not a variant of "
                          f"sub-matrix '{name}'; expected one of: "
                          f"{', '.join(variants)}")
    qnode = fields.get("questions")
    asked: tuple[str, ...] = ()
    if qnode is not None:
        asked = tuple(as_names(qnode, "a question name"))
        for q in asked:
            if q not in questions:
                raise qnode.error(
                    f"unknown question '{q}'; expected one of: "
                    f"{', '.join(questions) or '(none declared)'}")
        check_covered(tuple(questions[q] for q in asked), name, variants,
                      backends, workloads, qnode)
    mnode = fields.get("max_repeats")
    most = as_int(mnode, repeats, 1000, "a repeat count at least "
                  "'repeats'") if mnode else max(repeats, 10 if asked else 0)
    budget = fields.get("budget")
    snode = fields.get("order_seed")
    seed = as_int(snode, 0, 2 ** 32 - 1, "a seed") if snode else \
        zlib.crc32(name.encode())
    sub = SubMatrix(name, variants, backends, workloads, repeats,
                    rules["only"], rules["exclude"], baseline, asked, most,
                    as_duration_s(budget) if budget else None, seed)
    fields.done()
    return sub


def _rule(node: Node, dims: dict[str, dict]) -> Rule:
    fields = Fields(node, "a rule")
    out: dict[str, tuple[str, ...]] = {}
    for dim in RULE_KEYS:
        child = fields.get(dim)
        if child is None:
            continue
        if dim == "repeat":
            # One repeat number or a list of them (each item is a Node).
            items = child.value if isinstance(child.value, list) \
                else [child]
            out[dim] = tuple(str(as_int(item, 1, what="a repeat number"))
                             for item in items)
            continue
        names = as_names(child, f"a {dim} name")
        for n in names:
            if n not in dims[dim]:
                raise child.error(f"unknown {dim} '{n}'; expected one of: "
                                  f"{', '.join(dims[dim])}")
        out[dim] = tuple(names)
    fields.done()
    if not out:
        raise node.error("a rule names at least one of: "
                         + ", ".join(RULE_KEYS))
    return Rule(out)


def _expectation(node: Node, dims: dict[str, dict]) -> Expectation:
    fields = Fields(node, "an expectation")
    where = _rule(fields.need("where"), dims)
    vmstat = expect.counters(fields.need("vmstat"))
    fields.done()
    return Expectation(where, vmstat, f"{node.file}:{node.line}")


def describe(matrix: Matrix) -> str:
    """A short human summary, printed by `lab validate`."""
    lines = [f"{matrix.file}: {len(matrix.variants)} variants on "
             f"{len(matrix.trees)} tree(s), {len(matrix.backends)} backends,"
             f" {len(matrix.workloads)} workloads, baseline "
             f"'{matrix.baseline}'"]
    for name, sub in matrix.matrices.items():
        own = f", baseline '{sub.baseline}'" if sub.baseline else ""
        lines.append(f"  {name}: {len(matrix.cells(name))} cells{own}")
    return "\n".join(lines)

