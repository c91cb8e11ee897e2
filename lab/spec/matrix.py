"""matrix.yaml -> a validated, immutable model of the experiment
(lab/spec/model.py).

The matrix names kernel trees (Debian source packages), config fragments,
variants (tree + ordered patch series + fragments + boot and runtime
settings), swap backends, workloads, the guest shape, the baseline and
named sub-matrices. A sub-matrix expands to cells: variant x backend x
workload x repeat, filtered by `only` and `exclude` rules. `expect`
rules say which counters each matching cell must move (lab/spec/expect.py).
"""
from __future__ import annotations

import dataclasses
import os
import re
import zlib
from pathlib import Path
from typing import Any

from lab import elf
from lab.errors import MatrixError
from lab.spec import expect
from lab.spec.fields import (Fields, as_bool, as_int, as_list, as_name,
                             as_named, as_names, as_number, as_size_mib,
                             as_str, expected)
from lab.spec.model import (RULE_KEYS, Expectation, Guest, Matrix,
                            Question, Rule, SubMatrix, Tree, Variant,
                            Workload)
from lab.spec.merged import merged_series
from lab.spec.parserules import output_and_rules
from lab.spec.questions import as_duration_s, check_covered, question
from lab.spec.settings import fragment_names, sysctl, sysfs
from lab.spec.swapdev import backend
from lab.spec.yamlsrc import Node, load


FIRMWARES = ("seabios", "ovmf")
BASE_CONFIGS = ("tinyconfig", "defconfig")
TREE_RE = re.compile(r"^linux-source-\d+\.\d+$")
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
    variants = _twins(as_named(vnode, "variants", lambda n, v: _variant(
        n, v, trees, fragments, pdir)), vnode)
    backends = as_named(top.need("backends"), "backends", backend)
    workloads = as_named(top.need("workloads"), "workloads",
                         lambda n, v: _workload(n, v, fragments))
    guest = _guest(top.need("guest"))
    rep_node = top.get("repeats")
    repeats = as_int(rep_node, 1, 1000, "a repeat count") if rep_node else 1
    bnode = top.need("baseline")
    baseline = as_name(bnode, "a variant name")
    if baseline not in variants:
        raise bnode.error(f"baseline '{baseline}' is not a variant; "
                          f"expected one of: {', '.join(variants)}")
    dims: dict[str, dict[str, Any]] = {
        "variant": variants, "backend": backends, "workload": workloads}
    qnode = top.get("questions")
    questions = as_named(qnode, "questions", lambda n, v: question(
        n, v, dims)) if qnode else {}
    matrices = as_named(top.need("matrices"), "matrices",
                      lambda n, v: _submatrix(n, v, dims, repeats,
                                              questions))
    enode = top.get("expect")
    expectations = tuple(as_list(enode, lambda n: _expectation(n, dims),
                                 "expectations")) if enode else ()
    mnode = top.get("merged")
    merged = merged_series(mnode, trees, pdir) if mnode else {}
    for needed in ("quick", "full"):
        if needed not in matrices:
            raise top.node.error(f"missing sub-matrix '{needed}' (every "
                                 "matrix has 'quick' and 'full')",
                                 "matrices")
    top.done()
    matrix = Matrix(path, trees, fragments, variants, backends, workloads,
                    guest, repeats, baseline, matrices, pdir, expectations,
                    questions, merged)
    zram_kernels(matrix, top.need("matrices"))
    return matrix


def zram_kernels(matrix: Matrix, node: Node) -> None:
    """Every cell on a zram backend boots a kernel with zram: one of its
    variant's fragments sets CONFIG_ZRAM=y."""
    has: dict[str, bool] = {}
    for name, sub in matrix.matrices.items():
        if not any(matrix.backends[b].kind == "zram" for b in sub.backends):
            continue
        for cell in matrix.cells(name, [1]):
            v = matrix.kernel_for(cell)
            if matrix.backends[cell.backend].kind != "zram":
                continue
            key = matrix.kernel_name(v)
            if key not in has:
                has[key] = any("CONFIG_ZRAM=y" in matrix.fragments[f]
                               .read_text().split() for f in v.fragments)
            if not has[key]:
                raise node.error(
                    f"sub-matrix '{name}' runs variant '{v.name}' on zram "
                    f"backend '{cell.backend}', but none of its fragments "
                    f"({', '.join(v.fragments)}) sets CONFIG_ZRAM=y: add "
                    "the zram fragment", name)


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
    return as_named(node, "trees", tree)


def _fragments(node: Node, base: Path) -> dict[str, Path]:
    def fragment(name: str, child: Node) -> Path:
        path = base / as_str(child, "a path to a config fragment")
        if not path.is_file():
            raise child.error(f"config fragment file {path} does not exist")
        return path
    return as_named(node, "fragments", fragment)


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
    frag = fragment_names(fields.get("fragments"), fragments)
    cmd = fields.get("cmdline")
    desc = fields.get("description")
    snode = fields.get("timeout_scale")
    scale = 1.0
    if snode is not None:
        scale = as_number(snode)
        if not 1 <= scale <= 100:
            raise expected(snode, "a timeout scale from 1 to 100")
    variant = Variant(name, tree, tuple(series), tuple(frag),
                      as_str(cmd) if cmd else "", sysfs(fields),
                      sysctl(fields), as_str(desc) if desc else "", scale)
    fields.done()
    return variant


def _program(node: Node) -> tuple[str, str]:
    """`program:` as the name of one of the lab's programs (workloads/
    build), or as a path, absolute or relative to the matrix file, to an
    x86-64 executable that runs in the guest with its libraries:
    (program, absolute path or "")."""
    if not isinstance(node.value, str) or "/" not in node.value:
        return as_name(node, "a workload program name, or a path to an "
                       "executable (with a '/')"), ""
    path = Path(node.file).parent / node.value
    try:
        elf.closure(path)
    except elf.ElfError as exc:
        raise node.error(f"{exc}") from None
    return node.value, str(path.resolve())


def _needs(node: Node) -> tuple[str, ...]:
    """`needs:` paths, absolute or relative to the matrix file, to the
    other x86-64 executables a workload runs; kept unresolved, so that a
    symbolic link goes into the guest under its own name."""
    out = []
    for item in as_list(node, lambda n: n, "paths to executables"):
        if not isinstance(item.value, str) or "/" not in item.value:
            raise expected(item, "a path to an executable (with a '/')")
        path = Path(os.path.abspath(Path(node.file).parent / item.value))
        try:
            elf.closure(path)
        except elf.ElfError as exc:
            raise item.error(f"{exc}") from None
        out.append(str(path))
    return tuple(out)


def _workload(name: str, node: Node, fragments: dict[str, Path]
              ) -> Workload:
    fields = Fields(node, f"workload '{name}'")
    program, path = _program(fields.need("program"))
    anode = fields.get("args")
    args = as_list(anode, lambda n: str(_scalar(n)), "arguments") \
        if anode else []
    tnode = fields.get("timeout")
    timeout = as_int(tnode, 10, 86400, "a timeout in seconds") \
        if tnode else 600
    trace_node = fields.get("trace")
    output, rules = output_and_rules(fields, program)
    snode = fields.get("swap")
    nnode = fields.get("needs")
    frag = fragment_names(fields.get("fragments"), fragments)
    workload = Workload(name, program, tuple(args), timeout,
                        sysfs(fields), sysctl(fields),
                        as_bool(trace_node) if trace_node else False,
                        output, rules, path,
                        as_size_mib(snode) if snode else 0,
                        _needs(nnode) if nnode else (), tuple(frag))
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
        if not names:
            raise child.error(f"'{dim}s' is empty; expected at least one "
                              f"{dim} name")
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
    lnode = fields.get("look_every")
    step = as_int(lnode, 1, max(most - repeats, 1), "a repeat count "
                  "from 1 to max_repeats - repeats") if lnode else 1
    budget = fields.get("budget")
    rows = _rows(fields.get("rows"), name, variants, asked)
    snode = fields.get("order_seed")
    seed = as_int(snode, 0, 2 ** 32 - 1, "a seed") if snode else \
        zlib.crc32(name.encode())
    sub = SubMatrix(name, variants, backends, workloads, repeats,
                    rules["only"], rules["exclude"], baseline, asked, most,
                    as_duration_s(budget) if budget else None, seed, step,
                    rows)
    fields.done()
    return sub


def _rows(node: Node | None, name: str, variants: tuple[str, ...],
          asked: tuple[str, ...]) -> tuple[str, ...]:
    """A sub-matrix's reference rows: its own variants, and only beside
    questions (without questions every variant runs everywhere)."""
    if node is None:
        return ()
    if not asked:
        raise node.error(f"sub-matrix '{name}': 'rows' run beside its "
                         f"questions; expected a 'questions' list too")
    rows = tuple(as_names(node, "a variant name"))
    for r in rows:
        if r not in variants:
            raise node.error(f"row '{r}' is not a variant of sub-matrix "
                             f"'{name}'; expected one of: "
                             f"{', '.join(variants)}")
    return rows


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
        lines.append(f"  {name}: {len(matrix.cells(name))} cells{own}"
                     f"{idle_note(matrix, name)}")
    return "\n".join(lines)


def idle_note(matrix: Matrix, name: str) -> str:
    """What a sub-matrix with questions lists but never boots, as a clause
    to print: such a sub-matrix runs only their arms and its `rows`
    (Matrix.cells), so a variant it lists besides them would drop out
    without a word."""
    sub = matrix.sub(name)
    if not sub.questions:
        return ""
    booted = {cell.variant for cell in matrix.cells(name)}
    idle = [v for v in sub.variants if v not in booted]
    return f"; listed but not run: {', '.join(idle)}" if idle else ""

