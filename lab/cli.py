"""The `lab` command: python3 -m lab SUBCOMMAND.

User errors (LabError) print one clear message and exit 1 (2 for usage);
only bugs in the lab itself produce a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from lab import procs
from lab.cache import cache_root, locked
from lab.calibrate import dilation
from lab.errors import LabError
from lab.guest import runner
from lab.kernel.build import BuildFailed, Builder
from lab.paths import REPO
from lab.progress import Progress
from lab.results.store import Store
from lab.spec.matrix import Matrix, describe, load_matrix

DEFAULT_MATRIX = REPO / "matrix.yaml"
CELLS = REPO / "lab" / "cells"
STOP_GRACE_S = 60      # for an interrupted matrix session to stop


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="lab", description="swaplab: kernel variants x swap devices "
        "x workloads, measured in QEMU guests")
    top.add_argument("--cache", help="cache directory (default: "
                     "$SWAPLAB_CACHE or ~/.cache/swaplab)")
    sub = top.add_subparsers(dest="command", required=True)

    val = sub.add_parser("validate", help="check matrix files")
    val.add_argument("files", nargs="*", type=Path,
                     help=f"matrix files (default: {DEFAULT_MATRIX.name})")

    for name, text in (("build", "build kernel variants"),
                       ("run", "build, boot and measure a sub-matrix")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("variants", nargs="*",
                         help="variants (default: the sub-matrix's)")
        cmd.add_argument("--file", type=Path, default=DEFAULT_MATRIX,
                         help="matrix file")
        cmd.add_argument("--matrix", default="quick",
                         help="sub-matrix name (default: quick)")
        cmd.add_argument("--all", action="store_true",
                         help="every variant in the file")
        cmd.add_argument("-j", "--jobs", type=int, default=None,
                         help="make jobs (default: CPU count)")
        cmd.add_argument("--no-wait", action="store_true",
                         help="refuse instead of waiting for a busy cache")
        if name == "run":
            cmd.add_argument("--pytest", dest="pytest_args", default=[],
                             action="append", metavar="ARG",
                             help="extra pytest argument (-k, -n 2, "
                             "--rerun ...), repeatable")

    boot = sub.add_parser("boot", help="boot a built variant with a swap "
                          "backend and run a command on its console")
    boot.add_argument("variant")
    boot.add_argument("--backend", required=True, help="backend name")
    boot.add_argument("--file", type=Path, default=DEFAULT_MATRIX,
                      help="matrix file")
    boot.add_argument("--trace", action="store_true",
                      help="time do_swap_page with function_graph")
    boot.add_argument("--timeout", type=int, default=600,
                      help="seconds before the guest is killed")
    # Not dest "command": that is the subcommand's name. The words after
    # `--` are added by parse().
    boot.add_argument("guest_command", nargs="*", metavar="CMD",
                      help="after --: run in the guest (busybox sh)")

    cmp = sub.add_parser("compare", help="lkp-style table: variants "
                         "against BASE in one run")
    cmp.add_argument("base", help="the baseline variant")
    cmp.add_argument("others", nargs="+", help="variants to compare")
    rep = sub.add_parser("report", help="tables, figures, slides and the "
                         "upstream-first ranking of a run, with an index")
    sld = sub.add_parser("slides", help="the figures and the slide deck "
                         "(HTML and PDF) of a run")
    for cmd in (cmp, rep, sld):
        cmd.add_argument("--run", default="latest",
                         help="run id, unique prefix or 'latest'")
    for cmd in (cmp, rep):
        cmd.add_argument("--all", action="store_true",
                         help="every metric, not only the headline ones")
    for cmd in (rep, sld):
        cmd.add_argument("--out", type=Path, help="directory (default: "
                         "reports/<run-id>)")
        cmd.add_argument("--no-pdf", action="store_true",
                         help="skip printing the deck to PDF (Chromium)")
    return top


def _validate(files: list[Path]) -> int:
    for file in files or [DEFAULT_MATRIX]:
        matrix = load_matrix(file)
        print(describe(matrix))
    return 0


def _chosen(matrix: Matrix, args: argparse.Namespace) -> list[str]:
    if args.variants:
        unknown = [v for v in args.variants if v not in matrix.variants]
        if unknown:
            raise LabError(f"unknown variant(s) {', '.join(unknown)}; "
                           f"{matrix.file} has: {', '.join(matrix.variants)}")
        return list(args.variants)
    if args.all:
        return list(matrix.variants)
    return list(matrix.sub(args.matrix).variants)


def _build(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.file)
    names = _chosen(matrix, args)
    root = cache_root(args.cache)
    failed = []
    started = time.monotonic()
    with locked(root, wait=not args.no_wait):
        builder = Builder(matrix, root, args.jobs)
        for name in names:
            progress = Progress(name)
            try:
                build = builder.build(matrix.variants[name], progress)
            except BuildFailed as exc:
                progress.finish("FAILED")
                print(str(exc), file=sys.stderr)
                if exc.log:
                    print(f"  log: {exc.log}", file=sys.stderr)
                failed.append(name)
                continue
            progress.finish(f"built {build.release} -> {build.bzimage}")
    total = time.monotonic() - started
    print(f"{len(names) - len(failed)} of {len(names)} variants built "
          f"in {total:.1f} s (cache {root})")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _run(args: argparse.Namespace) -> int:
    """Build, then run the sub-matrix's cells as a pytest session (each
    cell a test item), then write the report of the run."""
    if _build(args):
        # The rest of the matrix goes on: the session tries each failed
        # variant once more (make resumes where it stopped, so it fails
        # again in seconds) and fails its cells with the build log.
        print("lab run: the cells of the variants that failed to build "
              "will fail; running the others", file=sys.stderr)
    _make_workloads()
    # The session names its run: another lab session on the same cache
    # may have started a later one, so "latest" is not necessarily ours.
    id_file = Path(tempfile.mkdtemp(prefix="swaplab-run-")) / "run-id"
    command = [sys.executable, "-m", "pytest", str(CELLS), "-p",
               "no:cacheprovider", "--matrix", args.matrix,
               "--matrix-file", str(args.file),
               "--run-id-file", str(id_file), *args.pytest_args]
    if args.cache:
        command += ["--lab-cache", args.cache]
    print("lab run:", shlex.join(command), file=sys.stderr)
    # The session gets a process group of its own: Ctrl-C (or SIGTERM)
    # reaches it once, from here, and it stops its QEMU and nbdkit
    # children itself; killing it outright would orphan them.
    session = subprocess.Popen(command, cwd=CELLS.parent.parent,
                               process_group=0)
    try:
        cells = session.wait()
    except KeyboardInterrupt as exc:
        _stop(session, procs.signal_of(exc))
        raise
    finally:
        run_id = id_file.read_text().strip() if id_file.is_file() else None
        shutil.rmtree(id_file.parent, ignore_errors=True)
    if cells not in (0, 1):      # 1: some cells failed, still reportable
        raise LabError(f"the matrix session stopped (pytest exit {cells})")
    if run_id is None:
        raise LabError("the matrix session did not name its run; see "
                       "'lab report --run ID'")
    report = argparse.Namespace(cache=args.cache, run=run_id, out=None,
                                all=False, no_pdf=False)
    _report(report)
    return cells


def _make_workloads() -> None:
    """Bring the guest's programs up to date, as the kernels are: a fresh
    clone then runs, and a changed workload source is never measured with
    an old binary (make does nothing when nothing changed)."""
    source = runner.WORKLOADS_BUILD.parent
    if subprocess.run(["make", "-s", "-C", str(source)]).returncode != 0:
        raise LabError(f"building the guest's programs failed: "
                       f"'make -C {source}' (its output is above)")


def _stop(session: subprocess.Popen, signum: int) -> None:
    """Pass the signal on to the matrix session and wait for it to stop
    its guests; a second Ctrl-C, or STOP_GRACE_S, ends it with SIGKILL."""
    try:
        os.killpg(session.pid, signum)
        session.wait(timeout=STOP_GRACE_S)
    except ProcessLookupError:
        pass
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session.pid, signal.SIGKILL)
        session.wait()
    print("lab: the matrix session stopped; finished cells are stored, "
          "and the same command resumes with the unfinished ones",
          file=sys.stderr)


def _boot(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.file)
    if args.variant not in matrix.variants:
        raise LabError(f"unknown variant '{args.variant}'; {matrix.file} "
                       f"has: {', '.join(matrix.variants)}")
    if args.backend not in matrix.backends:
        raise LabError(f"unknown backend '{args.backend}'; {matrix.file} "
                       f"has: {', '.join(matrix.backends)}")
    command = args.guest_command[1:] if args.guest_command[:1] == ["--"] \
        else args.guest_command
    if not command:
        raise LabError("lab boot: give the guest command after '--'")
    root = cache_root(args.cache)
    variant = matrix.variants[args.variant]
    with locked(root):
        build = Builder(matrix, root).build(variant, Progress(variant.name))
    backend = matrix.backends[args.backend]
    return runner.boot(build, backend, matrix.guest, shlex.join(command),
                       cache=root, timeout_s=args.timeout, variant=variant,
                       trace=args.trace, dilated=dilation.factor_for(
                           build, backend, matrix.guest, root))


# The report stage loads numpy, scipy and matplotlib (about 1.5 s):
# only the commands that report import it.

def _compare(args: argparse.Namespace) -> int:
    from lab.report import tables
    run = Store(cache_root(args.cache)).open(args.run)
    print(tables.compare_run(run, args.base, args.others, args.all))
    return 0


def _report(args: argparse.Namespace) -> int:
    from lab.report import reportdir
    run = Store(cache_root(args.cache)).open(args.run)
    paths = reportdir.build_report(run, args.out, args.all,
                                   pdf=not args.no_pdf)
    print(f"report of run {run.id}: {paths[0]}")
    return 0


def _slides(args: argparse.Namespace) -> int:
    from lab.report import reportdir
    run = Store(cache_root(args.cache)).open(args.run)
    for path in reportdir.slides_run(run, args.out, pdf=not args.no_pdf):
        print(path)
    return 0


def _warn(message, *_args, **_kwargs) -> None:
    print(f"lab: warning: {message}", file=sys.stderr)


COMMANDS = {"validate": lambda a: _validate(a.files), "build": _build,
            "run": _run, "boot": _boot, "compare": _compare,
            "report": _report, "slides": _slides}


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line; `lab boot VARIANT --backend B -- CMD...` takes
    everything after the first `--` as the guest command, options and
    all, while options may still follow the variant."""
    parser = _parser()
    if "--" in argv and "boot" in argv[:argv.index("--")]:
        cut = argv.index("--")
        head = parser.parse_args(argv[:cut])
        if head.command == "boot":
            head.guest_command = head.guest_command + argv[cut + 1:]
            return head
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else list(argv))
    # Store warnings (a corrupt result file, say) read as one line each.
    warnings.showwarning = _warn
    # SIGTERM and SIGHUP unwind like Ctrl-C, so guests are stopped.
    procs.interrupt_on()
    try:
        return COMMANDS[args.command](args)
    except LabError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        signum = procs.signal_of(exc)
        print(f"lab: interrupted ({signal.Signals(signum).name})",
              file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        # `lab compare ... | head`: the reader has all it wanted.
        sys.stderr.close()
        return 0
