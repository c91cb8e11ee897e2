"""Variant builds: tree + patches + config -> bzImage, cached by content.

A build's key hashes the tree package and version, the applied patches'
contents in order, the final .config and the compiler version. The kernel
release carries the variant name and the key's first 12 hex digits, so a
booted guest proves what it runs. A variant whose inputs are unchanged is
recognised from a small state file without touching the tree.
All variants of a tree share one worktree, and all variants with the
same config fragments share one object directory in it: switching
variants rewrites only the files their patches touch, so make recompiles
only those and what includes them. ccache (shared by all) serves the
rest, such as a second object directory or a cache rebuilt from cold.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TextIO

from lab import procs
from lab.cache import atomic_write
from lab.errors import LabError
from lab.kernel import debian, kconfig, tree
from lab.kernel.artifact import Build
from lab.progress import Progress
from lab.spec.model import Matrix, Variant

# Bump when the way a kernel is built changes, to invalidate old builds.
RECIPE = "swaplab-build-1"
OBJDIR = ".swaplab-obj"
ERROR_RE = re.compile(r"(error|Error \d+|undefined reference|"
                      r"No rule to make target)")


class BuildFailed(LabError):
    def __init__(self, variant: str, message: str, log: Path | None = None):
        self.variant = variant
        self.log = log
        super().__init__(f"{variant}: {message}")


def object_dir_name(variant: Variant) -> str:
    """The object directory of a variant inside its tree's worktree: one
    per list of config fragments, so variants that differ only in their
    patches build incrementally in it (git rewrites only the files whose
    content changes, and make rebuilds what depends on them)."""
    return f"{OBJDIR}-{'+'.join(variant.fragments) or 'none'}"


def compiler_version() -> str:
    out = subprocess.run(["gcc", "--version"], capture_output=True,
                         text=True).stdout
    return out.splitlines()[0] if out else "unknown"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def patches_of(matrix: Matrix, variant: Variant) -> list[tree.Patch]:
    out: list[tree.Patch] = []
    for series in variant.series:
        out += tree.series_patches(matrix.series_dir(variant.tree, series),
                                   series)
    return out


def input_digest(matrix: Matrix, variant: Variant, version: str,
                 compiler: str) -> str:
    """Everything the build depends on, before the tree is touched."""
    h = hashlib.sha256()
    base = matrix.trees[variant.tree].base_config
    for part in (RECIPE, variant.tree, version, base, compiler):
        h.update(part.encode() + b"\0")
    for p in patches_of(matrix, variant):
        h.update(p.sha256.encode() + b"\0")
    for name in variant.fragments:
        h.update(matrix.fragments[name].read_bytes() + b"\0")
    return h.hexdigest()


def read_bzimage_release(bzimage: Path) -> str:
    """The release string from a bzImage's setup header (kernel_version).

    The header is uncompressed: at offset 0x20e a 16-bit pointer, relative
    to 0x200, to a NUL-terminated "release (builder) #n ..." string."""
    data = bzimage.read_bytes()[:65536]
    if data[0x202:0x206] != b"HdrS":
        raise LabError(f"{bzimage} is not a bzImage (no HdrS header)")
    ptr = int.from_bytes(data[0x20e:0x210], "little") + 0x200
    text = data[ptr:data.index(b"\0", ptr)].decode(errors="replace")
    return text.split(" ", 1)[0]


def load_build(directory: Path) -> Build | None:
    """A completed build, or None if the directory holds no finished one."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
        build = Build(**meta)
    except (OSError, ValueError, TypeError):
        return None
    return build if build.bzimage.is_file() else None


class Builder:
    def __init__(self, matrix: Matrix, root: Path, jobs: int | None = None):
        self.matrix = matrix
        self.root = root
        self.jobs = jobs or os.cpu_count() or 1
        self.compiler = compiler_version()
        self._pristine: dict[str, tree.Pristine] = {}

    def state_file(self, variant: str) -> Path:
        return self.root / "state" / f"build-{variant}.json"

    def up_to_date(self, variant: Variant) -> Build | None:
        """The cached build if the variant's inputs have not changed."""
        version = debian.installed_version(variant.tree)
        if version is None:
            return None
        try:
            state = json.loads(self.state_file(
                self.matrix.kernel_name(variant)).read_text())
        except (OSError, ValueError):
            return None
        digest = input_digest(self.matrix, variant, version, self.compiler)
        if state.get("input") != digest:
            return None
        return load_build(Path(state.get("directory", "/nonexistent")))

    def pristine(self, package: str) -> tree.Pristine:
        if package not in self._pristine:
            self._pristine[package] = tree.prepare(package, self.root)
        return self._pristine[package]

    def build(self, variant: Variant, progress: Progress) -> Build:
        # An A/A twin boots its target's kernel: one build for both (with
        # the fragments a workload adds).
        variant = replace(self.matrix.variants[variant.kernel],
                          fragments=variant.fragments)
        cached = self.up_to_date(variant)
        if cached:
            return cached
        started = time.monotonic()
        progress.set("tree")
        pristine = self.pristine(variant.tree)
        progress.set("patch")
        patches = patches_of(self.matrix, variant)
        try:
            commit = tree.apply_series(pristine, patches)
        except LabError as exc:
            raise BuildFailed(variant.name, str(exc)) from None
        work = self.root / "work" / f"{variant.tree}-{pristine.version}"
        progress.set("checkout")
        tree.checkout(pristine, commit, work)
        objdir = work / object_dir_name(variant)
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        # Named as its state is: beyond+net must not overwrite beyond's.
        log = logs / f"build-{self.matrix.kernel_name(variant)}.log"
        with open(log, "w", buffering=1) as out:
            progress.set("config")
            config = self._configure(variant, work, objdir, out)
            key = _sha256(b"\0".join([
                variant.tree.encode(), pristine.version.encode(),
                *(p.sha256.encode() for p in patches), config,
                self.compiler.encode()]))[:12]
            local = f"-{variant.name}-{key}"
            progress.set("compile")
            self._make(work, objdir, out, progress, log, variant.name,
                       f"LOCALVERSION={local}", "bzImage")
        built = objdir / "arch/x86/boot/bzImage"
        release = read_bzimage_release(built)
        if not release.endswith(local):
            raise BuildFailed(variant.name, f"built release '{release}' does "
                              f"not end in '{local}'", log)
        dest = self.root / "builds" / f"{variant.name}-{key}"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        shutil.copy2(built, dest / "bzImage")
        (dest / "config").write_bytes(config)
        shutil.copy2(log, dest / "build.log")
        result = Build(
            variant=variant.name, key=key, release=release,
            tree=variant.tree, tree_version=pristine.version, commit=commit,
            patches=[{"series": p.series, "file": p.path.name,
                      "sha256": p.sha256} for p in patches],
            config_sha256=_sha256(config), compiler=self.compiler,
            seconds=round(time.monotonic() - started, 1),
            directory=str(dest))
        # meta.json last: its presence marks the build complete.
        atomic_write(dest / "meta.json", json.dumps(asdict(result),
                                                    indent=2) + "\n")
        digest = input_digest(self.matrix, variant, pristine.version,
                              self.compiler)
        atomic_write(self.state_file(self.matrix.kernel_name(variant)),
                     json.dumps({"input": digest,
                                 "directory": str(dest)}) + "\n")
        return result

    def _make_cmd(self, objdir: Path, *targets: str) -> list[str]:
        # objdir is a direct child of the tree: Kbuild then uses srctree
        # '..' and every variant compiles with the same relative paths.
        return ["make", f"O={objdir.name}", "ARCH=x86_64", "CC=ccache gcc",
                "HOSTCC=gcc", f"-j{self.jobs}", *targets]

    def _env(self) -> dict[str, str]:
        return dict(os.environ, CCACHE_DIR=str(self.root / "ccache"),
                    CCACHE_MAXSIZE="8G", KBUILD_BUILD_USER="swaplab",
                    KBUILD_BUILD_HOST="swaplab",
                    KBUILD_BUILD_TIMESTAMP="2017-03-22")

    def _run(self, work: Path, objdir: Path, out: TextIO,
             *targets: str) -> int:
        proc = subprocess.run(self._make_cmd(objdir, *targets), cwd=work,
                              env=self._env(), stdout=out,
                              stderr=subprocess.STDOUT)
        return proc.returncode

    def _configure(self, variant: Variant, work: Path, objdir: Path,
                   out: TextIO) -> bytes:
        objdir.mkdir(exist_ok=True)
        base = self.matrix.trees[variant.tree].base_config
        if self._run(work, objdir, out, base) != 0:
            raise BuildFailed(variant.name, f"'make {base}' failed",
                              Path(out.name))
        frags = [(str(self.matrix.fragments[f]),
                  self.matrix.fragments[f].read_text())
                 for f in variant.fragments]
        merged, wanted = kconfig.merge((objdir / ".config").read_text(),
                                       frags)
        (objdir / ".config").write_text(merged)
        if self._run(work, objdir, out, "olddefconfig") != 0:
            raise BuildFailed(variant.name, "'make olddefconfig' failed",
                              Path(out.name))
        final = (objdir / ".config").read_bytes()
        dropped = kconfig.check(work, wanted, kconfig.parse(final.decode()))
        if dropped:
            raise BuildFailed(variant.name, "config options did not stick:\n"
                              + "\n".join(f"  {d}" for d in dropped))
        return final

    def _make(self, work: Path, objdir: Path, out: TextIO,
              progress: Progress,
              log: Path, name: str, *args: str) -> None:
        proc = subprocess.Popen(self._make_cmd(objdir, *args), cwd=work,
                                env=self._env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors="replace")
        assert proc.stdout is not None
        counts_file = self.root / "state" / "compiled-objects.json"
        counts = read_counts(counts_file)
        # The last build of this variant is the comparable one; a variant
        # never built here is budgeted at the biggest build of its objects
        # (a cold object directory compiles everything).
        expected = counts["variant"].get(name) or \
            counts["objdir"].get(objdir.name)
        compiled = 0
        try:
            for line in proc.stdout:
                out.write(line)
                progress.note(line.strip()[:60])
                if line.lstrip().startswith(("CC ", "AS ")):
                    compiled += 1
                    progress.count(compiled, expected)
        except BaseException:
            # Ctrl-C, SIGTERM (lab.procs.Terminated), a full disk: make
            # passes SIGTERM on to its compilers and deletes half-written
            # targets; Kbuild redoes any object without its .cmd file.
            procs.stop(proc, 30)
            raise
        if proc.wait() != 0:
            out.flush()
            raise BuildFailed(name, "compile failed; last errors:\n" +
                              last_errors(log), log)
        counts["variant"][name] = compiled
        counts["objdir"][objdir.name] = max(
            compiled, counts["objdir"].get(objdir.name, 0))
        atomic_write(counts_file, json.dumps(counts, indent=1) + "\n")


def read_counts(path: Path) -> dict[str, dict[str, int]]:
    """Objects compiled by the last build of each variant, and the most
    any build compiled in each object directory."""
    try:
        doc = json.loads(path.read_text())
        return {"variant": dict(doc["variant"]), "objdir": dict(doc["objdir"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {"variant": {}, "objdir": {}}


def last_errors(log: Path, count: int = 12) -> str:
    lines = log.read_text(errors="replace").splitlines()
    errors = [ln for ln in lines if ERROR_RE.search(ln)]
    picked = (errors or lines)[-count:]
    return "\n".join(f"  {ln}" for ln in picked)
