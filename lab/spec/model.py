"""The immutable model of the experiment that matrix.yaml declares.

Every stage reads these objects: the kernel trees and variants, the
backends, workloads and guest shape, the sub-matrices and their cells,
the counter expectations and the questions (whose dataclasses are in
lab/spec/decisions.py). lab/spec/matrix.py, expect.py and questions.py
parse and validate the file into them; this module imports nothing of
theirs, so the parsers and every later stage point back to it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import operator
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from lab.errors import MatrixError
from lab.spec.decisions import Question

OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt,
    "<=": operator.le, "==": operator.eq}


@dataclass(frozen=True)
class Condition:
    op: str
    value: int
    of: str = ""                    # value is a percentage of this counter

    def bound(self, delta: Mapping[str, int]) -> float:
        return self.value * delta.get(self.of, 0) / 100 if self.of \
            else self.value

    def holds(self, got: int, delta: Mapping[str, int]) -> bool:
        return OPS[self.op](got, self.bound(delta))

    def __str__(self) -> str:
        return f"{self.op} {self.value}% of {self.of}" if self.of \
            else f"{self.op} {self.value}"


@dataclass(frozen=True)
class Expectation:
    where: Rule
    vmstat: dict[str, Condition]
    origin: str = ""                # file:line where it is declared


RULE_KEYS = ("variant", "backend", "workload", "repeat")
# What does not change what a cell measures or how a question is
# decided: prose, file:line positions (they move whenever another part
# of the file is edited), and the time budget of one piece of a run.
PROSE = frozenset(("description", "where", "claim", "name", "budget_s"))
# A field added after studies had started: at its default it leaves a
# study's digest as it was, so the study's runs still resume.
SINCE_STUDIES = {"since_studies": True}


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
class Merged:
    """A series of ours that upstream has since merged in its own form:
    the upstream-first ranking does not rank it, it asks whether the lab
    reproduces what upstream decided."""
    series: str
    version: str                # the first mainline release with it
    what: str                   # what upstream merged, in words
    off_on: tuple[str, ...]     # backend kinds upstream left it off on
    where: str                  # file:line


# Sticky media faults, injected by the device model (any model).
FAULT_RATES = ("read_error_rate", "write_error_rate")
# Device models per kind (lab/devmodel); pmem is memory, never modelled.
BACKEND_KINDS = ("rotational", "nvme", "pmem", "zram")
MODELS = {"rotational": ("none", "disk"), "nvme": ("none", "ssd")}


@dataclass(frozen=True)
class Backend:
    name: str
    kind: str
    params: dict[str, str | int | float | bool]


@dataclass(frozen=True)
class ParsedMetric:
    """One named group of a parse rule, as a metric."""
    group: str              # the regular expression's named group
    unit: str
    better: str             # higher | lower | neutral
    aggregate: str          # over the lines that match: sum | mean | max


@dataclass(frozen=True)
class ParseRule:
    """A regular expression matched against each line of a program's
    output; its named groups are the figures (`metrics`)."""
    pattern: str
    metrics: tuple[ParsedMetric, ...]
    where: str              # file:line of the rule


# What a workload prints: swaplab's JSON document, text read by `parse`
# rules, or nothing the lab reads (the generic metrics only).
OUTPUTS = ("json", "text", "none")


@dataclass(frozen=True)
class Workload:
    name: str
    program: str
    args: tuple[str, ...]
    timeout_s: int
    sysfs: dict[str, str]
    sysctl: dict[str, str]
    trace: bool = False     # time do_swap_page with function_graph
    output: str = dataclasses.field(default="json",      # one of OUTPUTS
                                    metadata=SINCE_STUDIES)
    parse: tuple[ParseRule, ...] = dataclasses.field(   # for output "text"
        default=(), metadata=SINCE_STUDIES)
    # A program given as a path (brought by the user): where it is on
    # this host, absolute; "" for the lab's own, in workloads/build.
    path: str = dataclasses.field(default="", metadata=SINCE_STUDIES)
    # The swap size this workload's cells boot with, overriding the
    # guest's (MiB; 0 keeps the guest's): a fill that must swap out long
    # enough for a steady rate needs more swap than the other workloads.
    swap_mib: int = dataclasses.field(default=0, metadata=SINCE_STUDIES)
    # Other programs the workload runs (a server and its client, say):
    # absolute paths on this host, symbolic links kept (a multi-call
    # binary tells its personality by the name it was run by); each goes
    # into the guest at its path with its ELF interpreter and libraries.
    needs: tuple[str, ...] = dataclasses.field(default=(),
                                               metadata=SINCE_STUDIES)
    # Config fragments the workload's kernels need on top of the
    # variant's (a server needs sockets): its cells boot the variant
    # built with them, a build of its own.
    fragments: tuple[str, ...] = dataclasses.field(default=(),
                                                   metadata=SINCE_STUDIES)


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
    # Questions are tested at `repeats`, every look_every repeats after
    # it and at max_repeats (lab.results.answers.Design): fewer looks
    # leave more alpha to each.
    look_every: int = 1
    # Reference rows: variants run beside the questions' cells (on their
    # workloads and backends, at `repeats`), reported but never tested,
    # e.g. stock kernels set beside the 2017 series.
    rows: tuple[str, ...] = ()


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
class CellPlan:
    """A cell resolved against its matrix, once: the boot and the workload
    that every later stage reads (the cell spec, the store's inputs hash,
    the provenance) instead of looking the cell's parts up on its own."""
    cell: Cell
    variant: Variant
    backend: Backend
    workload: Workload
    guest: Guest
    matrix_file: Path

    @property
    def timeout_s(self) -> int:
        """The workload's timeout, stretched by a slow (debug) variant."""
        return math.ceil(self.workload.timeout_s * self.variant.timeout_scale)

    @property
    def sysfs(self) -> dict[str, str]:
        """The variant's settings, then the workload's over them."""
        return {**self.variant.sysfs, **self.workload.sysfs}

    @property
    def sysctl(self) -> dict[str, str]:
        return {**self.variant.sysctl, **self.workload.sysctl}

    def measures(self) -> dict[str, Any]:
        """What the cell measures, as the matrix pins it (the store adds
        the build key and what the matrix does not pin, and hashes it)."""
        v, b, w, g = self.variant, self.backend, self.workload, self.guest
        doc: dict[str, Any] = {
            "variant": {"cmdline": v.cmdline, "sysfs": v.sysfs,
                        "sysctl": v.sysctl},
            "backend": {"kind": b.kind, "params": b.params},
            "workload": {"program": w.program, "args": w.args,
                         "sysfs": w.sysfs, "sysctl": w.sysctl},
            "guest": [g.memory_mib, g.vcpus, g.swap_mib, g.firmware,
                      g.cmdline],
            "repeat": self.cell.repeat,
        }
        if w.trace:
            # Traced cells time do_swap_page under function_graph, which
            # slows every fault: never the same measurement as an untraced
            # one. (Only when on, so untraced cells keep the hashes stored
            # before.)
            doc["workload"]["trace"] = True
        if w.needs:
            doc["workload"]["needs"] = list(w.needs)
        if w.output != "json":
            # How the output is read is part of what the cell measures
            # (only when not swaplab's JSON, so those cells keep their
            # hashes).
            doc["workload"]["output"] = w.output
            doc["workload"]["parse"] = [
                [r.pattern, [[m.group, m.unit, m.better, m.aggregate]
                             for m in r.metrics]] for r in w.parse]
        return doc


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
    # tree -> series -> what upstream merged of it (matrix `merged`)
    merged: dict[str, dict[str, Merged]] = field(default_factory=dict)

    def series_dir(self, tree: str, series: str) -> Path:
        return self.patches_dir / tree / series

    def sub(self, name: str) -> SubMatrix:
        if name not in self.matrices:
            raise MatrixError(str(self.file), None, "matrices",
                              f"no sub-matrix named '{name}'; this file "
                              f"has: {', '.join(self.matrices)}")
        return self.matrices[name]

    def guest_for(self, workload: str) -> Guest:
        """The guest a workload's cells boot: the matrix's, with the
        workload's own swap size where it sets one."""
        swap = self.workloads[workload].swap_mib
        return dataclasses.replace(self.guest, swap_mib=swap) if swap \
            else self.guest

    def kernel_for(self, cell: Cell) -> Variant:
        """The variant a cell boots: its own, with the fragments its
        workload needs added after the variant's (each once)."""
        v = self.variants[cell.variant]
        extra = [f for f in self.workloads[cell.workload].fragments
                 if f not in v.fragments]
        return dataclasses.replace(v, fragments=v.fragments + tuple(extra)) \
            if extra else v

    def kernel_name(self, variant: Variant) -> str:
        """The name of the kernel `variant` builds: its own, with the
        fragments a workload added to its declared ones (`beyond+net`),
        so that each such kernel keeps its own build state."""
        declared = self.variants[variant.name].fragments
        return "+".join([variant.name, *(f for f in variant.fragments
                                         if f not in declared)])

    def kernels(self, name: str) -> list[Variant]:
        """The kernels sub-matrix `name`'s cells boot, each once."""
        out: dict[str, Variant] = {}
        for cell in self.cells(name, [1]):
            v = self.kernel_for(cell)
            out.setdefault(self.kernel_name(v), v)
        return list(out.values())

    def plan(self, cell: Cell) -> CellPlan:
        """The cell resolved: its variant, backend, workload and guest."""
        return CellPlan(cell=cell, variant=self.kernel_for(cell),
                        backend=self.backends[cell.backend],
                        workload=self.workloads[cell.workload],
                        guest=self.guest_for(cell.workload),
                        matrix_file=self.file)

    def study_digest(self, name: str) -> str:
        """A digest of what a run of sub-matrix `name` measures and
        decides: the sub-matrix, and the guest, variants, backends,
        workloads and questions it uses, without prose. A run resumes
        only under the same digest; edits elsewhere in the file (another
        sub-matrix, a comment, a claim's wording) leave it alone, and
        each cell's own inputs hash still guards its stored result."""
        sub = self.sub(name)
        doc = {"sub": _plain(sub), "guest": _plain(self.guest),
               "variants": {v: _plain(self.variants[v])
                            for v in sub.variants},
               "backends": {b: _plain(self.backends[b])
                            for b in sub.backends},
               "workloads": {w: _plain(self.workloads[w])
                             for w in sub.workloads},
               "questions": {q: _plain(self.questions[q])
                             for q in sub.questions}}
        blob = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

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
        with questions runs only the cells its questions compare, and
        its reference rows on those questions' workloads and backends."""
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
            cell.variant in (q.candidate, q.reference, *sub.rows) and
            cell.workload == q.workload and cell.backend in q.backends
            for q in (self.questions[n] for n in sub.questions))

    @staticmethod
    def _selected(sub: SubMatrix, cell: Cell) -> bool:
        if sub.only and not any(r.matches(cell) for r in sub.only):
            return False
        return not any(r.matches(cell) for r in sub.exclude)


def _plain(obj: Any) -> Any:
    """A model object as JSON-able data, PROSE left out, and fields added
    after studies began (SINCE_STUDIES) left out at their default."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name))
                for f in dataclasses.fields(obj) if f.name not in PROSE
                and not (f.metadata.get("since_studies")
                         and getattr(obj, f.name) == f.default)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


