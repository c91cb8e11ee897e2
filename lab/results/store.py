"""The result store: runs of a sub-matrix, one JSON file per cell.

    <cache>/results/<run-id>/manifest.json    what was run, where, when
    <cache>/results/<run-id>/matrix.yaml      the matrix file as it was
    <cache>/results/<run-id>/<cell-id>.json   one cell's result + provenance
    <cache>/results/<run-id>/<cell-id>/       that cell's logs

Every file is written whole (temp + rename), so a killed run leaves only
complete cell files and its finished cells count on resume; a write that
fails (a full disk) raises lab.cache.DiskFull naming the file and leaves
nothing behind. Loading never fails on a bad cell file: it warns
(StoreWarning, naming the file) and leaves the file out. A cell's "inputs hash" identifies what it measured;
a result with the same hash makes rerunning the cell unnecessary.
"""
from __future__ import annotations

import calendar
import hashlib
import json
import os
import platform
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from lab.cache import atomic_write
from lab.errors import LabError
from lab.results.record import CellRecord
from lab.spec.model import Cell, CellPlan, Matrix

RUN_SCHEMA = "swaplab-run/1"
CELL_SCHEMA = "swaplab-result/1"
MANIFEST = "manifest.json"

# The provenance block the runner fills for every cell: key -> (accepted
# types, may be null). Null is allowed only for what the guest reports,
# since a cell that failed to boot never learns it.
PROVENANCE: dict[str, tuple[tuple[type, ...], bool]] = {
    "tree": ((dict,), False),            # {"package", "version"}
    "patches": ((list,), False),         # [{"series", "file", "sha256"}]
    "config_sha256": ((str,), False),    # the final .config
    "build_key": ((str,), False),
    "kernel_release": ((str,), True),    # what the guest's uname said
    "qemu_version": ((str,), False),
    "qemu_argv": ((list,), False),       # the full command line
    "accel": ((str,), False),            # kvm | tcg
    "dilation": ((int, float), True),    # guest time per host time
    "backend": ((dict,), False),         # {"name", "kind", "params"}
    "guest_device": ((dict,), True),     # what the guest saw
    "workload": ((dict,), False),        # {"name", "argv", "seed"}
    "matrix_sha256": ((str,), False),
    "started": ((str,), False),          # ISO 8601 UTC
    "ended": ((str,), False),
}


class StoreWarning(UserWarning):
    """A result file that could not be used; the run goes on without it."""


STAMP = "%Y-%m-%dT%H:%M:%SZ"        # a run's and a cell's UTC times


def now_utc() -> str:
    return time.strftime(STAMP, time.gmtime())


def seconds(iso: str) -> float:
    """Seconds since the epoch of a time stamp in now_utc's form."""
    return float(calendar.timegm(time.strptime(iso, STAMP)))


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_provenance(prov: Mapping[str, Any]) -> None:
    """Raise LabError naming every missing or ill-typed provenance key."""
    problems = []
    for key, (types, nullable) in PROVENANCE.items():
        if key not in prov:
            problems.append(f"missing '{key}'")
        elif prov[key] is None:
            if not nullable:
                problems.append(f"'{key}' is null")
        elif not isinstance(prov[key], types) or isinstance(prov[key], bool):
            problems.append(f"'{key}' is a {type(prov[key]).__name__}, "
                            f"expected {'/'.join(t.__name__ for t in types)}")
    if problems:
        raise LabError("incomplete provenance: " + "; ".join(problems))


def inputs_hash(plan: CellPlan, build_key: str,
                extra: Mapping[str, Any] | None = None) -> str:
    """What a cell measures: what its plan pins (the variant's runtime
    settings, the backend, the workload, the guest shape and the repeat
    number), the variant's build, and `extra`: what the matrix does not
    pin, e.g. the workload binary's hash."""
    doc = {**plan.measures(), "build_key": build_key,
           "extra": dict(extra or {})}
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def host_cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_info() -> dict[str, str]:
    """This machine, as a run's manifest and a cell's provenance name it
    (a cell may run on another machine than its controller, --tx ssh)."""
    return {"cpu_model": host_cpu_model(), "kernel": platform.release(),
            "node": platform.node()}


@dataclass
class Run:
    root: Path
    manifest: dict[str, Any]
    problems: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        # A run's raw results committed under reports/<id>/raw keep its id.
        return str(self.manifest.get("id") or self.root.name)

    def cell_file(self, cell_id: str) -> Path:
        return self.root / f"{cell_id}.json"

    def log_dir(self, cell_id: str) -> Path:
        """Where the runner puts the cell's console log and other files."""
        return self.root / cell_id

    def save(self, cell: Cell, inputs: str, provenance: Mapping[str, Any],
             result: Mapping[str, Any]) -> Path:
        check_provenance(provenance)
        doc = {"schema": CELL_SCHEMA,
               "cell": {"id": cell.id, "variant": cell.variant,
                        "backend": cell.backend, "workload": cell.workload,
                        "repeat": cell.repeat},
               "inputs_hash": inputs, "provenance": dict(provenance),
               "result": dict(result)}
        path = self.cell_file(cell.id)
        atomic_write(path, json.dumps(doc, indent=1) + "\n")
        return path

    def plan(self, cells: list[Cell]) -> None:
        """Add cells to the run's plan (an adaptive round)."""
        planned = self.manifest.setdefault("cells", [])
        planned += [c.id for c in cells if c.id not in planned]
        atomic_write(self.root / MANIFEST,
                     json.dumps(self.manifest, indent=1) + "\n")

    def adopt_matrix(self, matrix: Matrix) -> None:
        """Keep `matrix`'s file as the run's copy (a resumed run whose
        study is unchanged, Matrix.study_digest)."""
        text = matrix.file.read_bytes()
        digest = hashlib.sha256(text).hexdigest()
        if self.manifest["matrix"].get("sha256") == digest:
            return
        atomic_write(self.root / "matrix.yaml", text)
        self.manifest["matrix"]["sha256"] = digest
        atomic_write(self.root / MANIFEST,
                     json.dumps(self.manifest, indent=1) + "\n")

    def finish(self) -> None:
        self.manifest["ended"] = now_utc()
        atomic_write(self.root / MANIFEST,
                     json.dumps(self.manifest, indent=1) + "\n")

    def records(self) -> dict[str, CellRecord]:
        """Every usable cell file by cell id; bad ones are warned about,
        listed in `problems` and left out."""
        self.problems = []
        out: dict[str, CellRecord] = {}
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") and ".tmp." in path.name:
                self._problem(path, "partial write left by a killed "
                              "process, ignored")
            elif path.suffix == ".json" and path.name != MANIFEST:
                rec = self._load(path)
                if rec is not None:
                    out[rec.cell.id] = rec
        return out

    def remove_partial(self) -> list[Path]:
        """Delete the temporary files of writers that were killed (their
        process is gone); a live writer's stay. Returns what went."""
        removed = []
        for path in sorted(self.root.glob(".*.tmp.*")):
            pid = path.name.rsplit(".", 1)[-1]
            if pid.isdigit() and not _alive(int(pid)):
                path.unlink(missing_ok=True)
                removed.append(path)
        return removed

    def is_done(self, cell: Cell, inputs: str) -> bool:
        """True when the cell has a finished result with the same inputs
        (the caller reruns anyway when the user asks)."""
        path = self.cell_file(cell.id)
        rec = self._load(path) if path.exists() else None
        return rec is not None and rec.finished and \
            rec.inputs_hash == inputs

    def _load(self, path: Path) -> CellRecord | None:
        try:
            return _record(path)
        except (OSError, ValueError, KeyError, TypeError, LabError) as exc:
            self._problem(path, f"unusable result file, ignored: {exc}")
            return None

    def _problem(self, path: Path, text: str) -> None:
        message = f"{path}: {text}"
        self.problems.append(message)
        warnings.warn(message, StoreWarning, stacklevel=3)

    def status(self) -> tuple[list[str], list[str]]:
        """(finished, unfinished) planned cell ids, in the planned order."""
        records = self.records()
        planned = self.manifest.get("cells", [])
        done = [c for c in planned if c in records and records[c].finished]
        return done, [c for c in planned if c not in done]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _record(path: Path) -> CellRecord:
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or doc.get("schema") != CELL_SCHEMA:
        raise ValueError(f"not a {CELL_SCHEMA} document")
    c = doc["cell"]
    cell = Cell(int(c["repeat"]), str(c["variant"]), str(c["backend"]),
                str(c["workload"]))
    if cell.id != path.stem:
        raise ValueError(f"holds cell {cell.id}, not {path.stem}")
    check_provenance(doc["provenance"])
    if not isinstance(doc["result"], dict):
        raise ValueError("'result' is not an object")
    return CellRecord(path, cell, str(doc["inputs_hash"]), doc["provenance"],
                      doc["result"])


class Store:
    """The runs under <cache>/results."""

    def __init__(self, cache: Path) -> None:
        self.root = cache / "results"

    def create(self, matrix: Matrix, submatrix: str,
               cells: list[Cell]) -> Run:
        """A new run of `cells` (the sub-matrix's, in run order)."""
        sub = matrix.sub(submatrix)
        started = now_utc()
        stem = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + \
            f"-{submatrix}"
        self.root.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            root = self.root / (stem if n == 1 else f"{stem}-{n}")
            try:
                root.mkdir()        # atomic: two labs never share a run
                break
            except FileExistsError:
                continue
        else:
            raise LabError(f"cannot create a run directory in {self.root}")
        text = matrix.file.read_bytes()
        atomic_write(root / "matrix.yaml", text)
        manifest = {
            "schema": RUN_SCHEMA, "id": root.name,
            "matrix": {"file": str(matrix.file),
                       "sha256": hashlib.sha256(text).hexdigest(),
                       "submatrix": submatrix,
                       "baseline": sub.baseline or matrix.baseline,
                       "repeats": sub.repeats, "variants": list(sub.variants),
                       "backends": list(sub.backends),
                       "workloads": list(sub.workloads),
                       "questions": list(sub.questions),
                       "max_repeats": sub.max_repeats,
                       "look_every": sub.look_every,
                       "budget_s": sub.budget_s,
                       "order_seed": sub.order_seed},
            "cells": [c.id for c in cells],
            "started": started, "ended": None,
            "host": host_info(),
        }
        atomic_write(root / MANIFEST, json.dumps(manifest, indent=1) + "\n")
        return Run(root, manifest)

    def ids(self) -> list[str]:
        """Run ids, oldest first (ids start with their UTC start time)."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if (p / MANIFEST).is_file())

    def open(self, ref: str = "latest") -> Run:
        """A run by id, unique id prefix, or "latest"."""
        ids = self.ids()
        if not ids:
            raise LabError(f"no runs in {self.root}")
        if ref == "latest":
            matches = ids[-1:]
        else:
            matches = [i for i in ids if i == ref] or \
                [i for i in ids if i.startswith(ref)]
        if len(matches) != 1:
            what = "no run" if not matches else "several runs"
            raise LabError(f"{what} matching '{ref}' in {self.root}; "
                           f"runs: {', '.join(ids[-10:])}")
        return open_results_dir(self.root / matches[0])


@dataclass(frozen=True)
class Source:
    """What every table says it rests on."""
    run_id: str
    matrix_file: str
    matrix_sha256: str
    submatrix: str
    baseline: str
    repeats: int
    variants: tuple[str, ...]
    backends: tuple[str, ...]
    workloads: tuple[str, ...]

    @classmethod
    def of(cls, run: Run) -> "Source":
        m = run.manifest["matrix"]
        return cls(run.id, Path(m["file"]).name, m["sha256"], m["submatrix"],
                   m["baseline"], m["repeats"], tuple(m["variants"]),
                   tuple(m["backends"]), tuple(m["workloads"]))

    @property
    def compared(self) -> bool:
        """Whether the run has its baseline variant: without it (a
        sub-matrix that leaves the baseline out, such as a debug run) the
        tables show each variant's own values and no %change."""
        return self.baseline in self.variants

    def no_baseline(self) -> str:
        return (f"No comparison: the baseline variant '{self.baseline}' is "
                f"not in sub-matrix {self.submatrix}; cells are means with "
                "their coefficient of variation")

    def line(self) -> str:
        return (f"matrix {self.matrix_file} (sha256 {self.matrix_sha256[:12]}"
                f"), sub-matrix {self.submatrix}, run {self.run_id}, "
                f"{self.repeats} repeat{'s' if self.repeats != 1 else ''} "
                f"planned")


def open_results_dir(root: Path) -> Run:
    """A run directory outside the cache (raw results committed beside a
    reference report)."""
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise LabError(f"cannot read {root / MANIFEST}: {exc} (a run "
                       "directory holds one)") from None
    return Run(root, manifest)
