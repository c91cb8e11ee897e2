"""The `lab` command: python3 -m lab SUBCOMMAND.

User errors (LabError) print one clear message and exit 1 (2 for usage);
only bugs in the lab itself produce a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import json
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
from lab.errors import LabError
from lab.guest import cellspec
from lab.kernel.build import BuildFailed, Builder
from lab.paths import REPO
from lab.progress import Progress
from lab.results.store import Run, Store, open_results_dir
from lab.spec.matrix import describe, load_matrix
from lab.spec.model import Matrix, Variant
from lab.spec.questions import as_duration_s
from lab.spec.yamlsrc import Node

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
            cmd.add_argument("--budget", type=_duration, default=None,
                             help="stop starting cells after this long "
                             "(45m, 1h30m; default: the sub-matrix's "
                             "budget, else none)")

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
    boot.add_argument("--bring", type=Path, action="append", default=[],
                      help="a program to put on the guest's PATH (repeat)")
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
        which = cmd.add_mutually_exclusive_group()
        which.add_argument("--run", default="latest",
                           help="run id, unique prefix or 'latest'")
        which.add_argument("--results", type=Path, help="a directory of "
                           "raw cell results (a committed reference run)")
    for cmd in (cmp, rep):
        cmd.add_argument("--all", action="store_true",
                         help="every metric, not only the headline ones")
    rep.add_argument("--raw", action="store_true", help="also copy the "
                     "run's cell results (no logs) into raw/, so that the "
                     "report regenerates from the checkout (reference runs)")
    rep.add_argument("--replicate-with", metavar="RUNS", help="other runs "
                     "of the same questions (run ids or directories of raw "
                     "cell results, comma-separated): each answer is "
                     "marked replicated or not, with replication.md")
    for cmd in (rep, sld):
        cmd.add_argument("--out", type=Path, help="directory (default: "
                         "reports/<run-id>)")
        cmd.add_argument("--no-pdf", action="store_true",
                         help="skip printing the deck to PDF (Chromium)")
    ans = sub.add_parser("answers", help="the verdict of each question "
                         "of a run (Markdown), or of runs side by side")
    which = ans.add_mutually_exclusive_group()
    which.add_argument("--run", default="latest",
                       help="run id, unique prefix or 'latest'")
    which.add_argument("--runs", help="comma-separated run ids: each run's "
                       "verdicts, heterogeneity, pooled estimate, "
                       "replication")
    which.add_argument("--results", help="directories of raw cell results "
                       "(a committed reference run), comma-separated")
    return top


def _duration(text: str) -> int:
    try:
        return as_duration_s(Node("--budget", 0, "", text))
    except LabError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1])


def _validate(files: list[Path]) -> int:
    for file in files or [DEFAULT_MATRIX]:
        matrix = load_matrix(file)
        print(describe(matrix))
    return 0


def _chosen(matrix: Matrix, args: argparse.Namespace) -> list[Variant]:
    """The kernels to build: the variants named, or every variant, as
    declared; else those the sub-matrix's cells boot (a workload's
    fragments added)."""
    if args.variants:
        unknown = [v for v in args.variants if v not in matrix.variants]
        if unknown:
            raise LabError(f"unknown variant(s) {', '.join(unknown)}; "
                           f"{matrix.file} has: {', '.join(matrix.variants)}")
        return [matrix.variants[v] for v in args.variants]
    if args.all:
        return list(matrix.variants.values())
    return matrix.kernels(args.matrix)


def _build(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.file)
    kernels = _chosen(matrix, args)
    root = cache_root(args.cache)
    failed = []
    started = time.monotonic()
    with locked(root, wait=not args.no_wait):
        builder = Builder(matrix, root, args.jobs)
        for variant in kernels:
            name = variant.name
            progress = Progress(name)
            try:
                build = builder.build(variant, progress)
            except BuildFailed as exc:
                progress.finish("FAILED")
                print(str(exc), file=sys.stderr)
                if exc.log:
                    print(f"  log: {exc.log}", file=sys.stderr)
                failed.append(name)
                continue
            progress.finish(f"built {build.release} -> {build.bzimage}")
    total = time.monotonic() - started
    print(f"{len(kernels) - len(failed)} of {len(kernels)} variants built "
          f"in {total:.1f} s (cache {root})")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _run(args: argparse.Namespace) -> int:
    """Build, then run the sub-matrix's cells as a pytest session (each
    cell a test item), then write the report of the run. A sub-matrix
    with questions goes on in adaptive rounds within its budget."""
    matrix = load_matrix(args.file)
    sub = matrix.sub(args.matrix)
    budget = args.budget if args.budget is not None else sub.budget_s
    started = time.time()
    deadline = started + budget if budget else None
    if _build(args):
        # The rest of the matrix goes on: the session tries each failed
        # variant once more (make resumes where it stopped, so it fails
        # again in seconds) and fails its cells with the build log.
        print("lab run: the cells of the variants that failed to build "
              "will fail; running the others", file=sys.stderr)
    _make_workloads()
    cells, run_id = _session(args, [], deadline)
    if sub.questions:
        cells = max(cells, _rounds(args, matrix, run_id, deadline))
    # `lab report --run RUN`, with the command line's own defaults
    report = parse(["report", "--run", run_id])
    report.cache = args.cache
    _report(report)
    return cells


def _rounds(args: argparse.Namespace, matrix: Matrix, run_id: str,
            deadline: float | None) -> int:
    """Adaptive repeats (lab.session.adaptive) until every question is
    decided or capped, or the budget is spent; the worst session exit."""
    from lab.session import adaptive
    run = Store(cache_root(args.cache)).open(run_id)
    worst = 0
    for number in range(2, 1000):
        left = None if deadline is None else deadline - time.time()
        plan = adaptive.next_round(matrix, args.matrix, run, left)
        status = (f"lab run: {plan.decided} of {plan.questions} questions "
                  f"decided, {plan.capped} undecided at max_repeats")
        if left is not None:
            status += f"; budget left {max(left, 0) / 60:.1f} min"
        if not plan.cells:
            print(status + "; done", file=sys.stderr)
            return worst
        print(f"{status}; round {number}: {len(plan.cells)} cells, about "
              f"{plan.estimate_s / 60:.1f} min", file=sys.stderr)
        listing = Path(tempfile.mkdtemp(prefix="swaplab-round-")) / \
            "cells.json"
        listing.write_text(json.dumps([[c.repeat, c.variant, c.backend,
                                        c.workload] for c in plan.cells]))
        try:
            code, _ = _session(args, ["--cells", str(listing), "--lab-run",
                                      run_id], deadline)
        finally:
            shutil.rmtree(listing.parent, ignore_errors=True)
        worst = max(worst, code)
    return worst


def _session(args: argparse.Namespace, extra: list[str],
             deadline: float | None) -> tuple[int, str]:
    """One pytest session over cells: (its exit status, the run id)."""
    # The session names its run: another lab session on the same cache
    # may have started a later one, so "latest" is not necessarily ours.
    id_file = Path(tempfile.mkdtemp(prefix="swaplab-run-")) / "run-id"
    command = [sys.executable, "-m", "pytest", str(CELLS), "-p",
               "no:cacheprovider", "--matrix", args.matrix,
               "--matrix-file", str(args.file),
               "--run-id-file", str(id_file), *extra, *args.pytest_args]
    if deadline is not None:
        command += ["--deadline", f"{deadline:.0f}"]
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
    return cells, run_id


def _make_workloads() -> None:
    """Bring the guest's programs up to date, as the kernels are: a fresh
    clone then runs, and a changed workload source is never measured with
    an old binary (make does nothing when nothing changed)."""
    source = cellspec.WORKLOADS_BUILD.parent
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
    # The guest stage is loaded by the command that boots, as the report
    # stage is by 'report': other commands start without it.
    from lab.calibrate import dilation
    from lab.guest import runner
    matrix = load_matrix(args.file)
    for kind, name, known in (("variant", args.variant, [*matrix.variants]),
                              ("backend", args.backend, [*matrix.backends])):
        if name not in known:
            raise LabError(f"unknown {kind} '{name}'; {matrix.file} has: "
                           f"{', '.join(known)}")
    command = args.guest_command[1:] if args.guest_command[:1] == ["--"] \
        else args.guest_command
    if not command:
        raise LabError("lab boot: give the guest command after '--'")
    root = cache_root(args.cache)
    variant = matrix.variants[args.variant]
    with locked(root):
        build = Builder(matrix, root).build(variant, Progress(variant.name))
    backend = matrix.backends[args.backend]
    files, shell = cellspec.brought_by_hand(args.bring, command)
    return runner.boot(build, backend, matrix.guest, shell, files=files,
                       cache=root, timeout_s=args.timeout, variant=variant,
                       trace=args.trace, dilated=dilation.factor_for(
                           build, backend, matrix.guest, root))


def _opened(args: argparse.Namespace) -> Run:
    """The run a report command reads: --results DIR, else --run."""
    if getattr(args, "results", None):
        return open_results_dir(args.results)
    return Store(cache_root(args.cache)).open(args.run)


# The report stage loads numpy, scipy and matplotlib (about 1.5 s):
# only the commands that report import it.

def _compare(args: argparse.Namespace) -> int:
    from lab.report import tables
    run = _opened(args)
    print(tables.compare_run(run, args.base, args.others, args.all))
    return 0


def _runs_named(args: argparse.Namespace, refs: str) -> list[Run]:
    """Runs named, comma-separated, by id (in the cache) or by a
    directory of raw results."""
    out = []
    for ref in (r.strip() for r in refs.split(",") if r.strip()):
        out.append(open_results_dir(Path(ref)) if Path(ref).is_dir() else
                   Store(cache_root(args.cache)).open(ref))
    return out


def _report(args: argparse.Namespace) -> int:
    from lab.report import reportdir
    run = _opened(args)
    others = _runs_named(args, args.replicate_with or "")
    paths = reportdir.build_report(run, args.out, args.all,
                                   pdf=not args.no_pdf, others=others)
    if args.raw:
        paths += reportdir.write_raw(run, paths[0].parent / "raw")
    print(f"report of run {run.id}: {paths[0]}")
    return 0


def _answers(args: argparse.Namespace) -> int:
    from lab.report import verdicts
    from lab.results.replication import RunAnswers, replicate
    from lab.results.runmatrix import run_matrix
    runs = _runs_named(args, args.results or args.runs or args.run)
    answered = [RunAnswers.of(run, run_matrix(run)) for run in runs]
    if len(answered) == 1:
        print(verdicts.markdown(answered[0]), end="")
        return 0
    reps = replicate(answered)
    marks = verdicts.replication_marks(reps)
    for ra in answered:
        print(verdicts.markdown(ra, marks))
    print(verdicts.replication_markdown(reps), end="")
    return 0


def _slides(args: argparse.Namespace) -> int:
    from lab.report import reportdir
    run = _opened(args)
    for path in reportdir.slides_run(run, args.out, pdf=not args.no_pdf):
        print(path)
    return 0


def _warn(message: Warning | str, *_args: object, **_kwargs: object
          ) -> None:
    print(f"lab: warning: {message}", file=sys.stderr)


COMMANDS = {"validate": lambda a: _validate(a.files), "build": _build,
            "run": _run, "boot": _boot, "compare": _compare,
            "report": _report, "slides": _slides, "answers": _answers}


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
