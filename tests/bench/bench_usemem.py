"""usemem through the lab against usemem run by hand (issue 26's target).

For each repeat, each variant boots twice on one backend: once as a lab
cell (workload `usemem-bench`, `parse: usemem`, through the store), once
by hand (`lab boot VARIANT --bring USEMEM -- usemem ARGS`, the console's
"N bytes / N usecs = N KB/s" lines summed here with a regular expression
of this script's own). Same kernel, same guest, same device; the two are
interleaved so that drift in the host hits both alike. `--sysfs`
settings go into the workload (the lab applies them) and, by hand, are
written by the command before usemem runs. Prints each variant's KB/s
both ways, every value and the 95 % interval, the lab's change against
by hand with its interval (within the noise when it holds 0), and each
way's ranking: the second variant against the first, higher, lower or
tied (its interval holds 0); the rankings agree when both say the same.

    /usr/bin/python3 tests/bench/bench_usemem.py --usemem PATH
        [--variants base thp-stage2] [--backend nvme] [--repeats 3]
        [--procs 2] [--size 250m]
        [--sysfs kernel/mm/transparent_hugepage/enabled=always]

usemem is vm-scalability's (built by you: `make usemem STATIC=1`); its
source is never part of this repository.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lab.cache import cache_root  # noqa: E402
from lab.results.metrics import cell_metrics  # noqa: E402
from lab.results.store import Store  # noqa: E402
from lab.results.stats import summarize, welch_log_ratio  # noqa: E402
from scipy import stats as sps  # noqa: E402

WORKLOAD = "usemem-bench"
METRIC = "usemem.kbps"
LINE = re.compile(r"^\s*(\d+) bytes / (\d+) usecs = (\d+) KB/s\s*$")


def matrix_file(tmp: Path, usemem: Path, args: argparse.Namespace) -> Path:
    """The repository's matrix with the bench's workload and sub-matrix."""
    text = (ROOT / "matrix.yaml").read_text()
    workload = (f"workloads:\n  {WORKLOAD}:\n    program: {usemem}\n"
                f"    args: [-n, {args.procs}, {args.size}]\n"
                "    parse: usemem\n    timeout: 300\n")
    if args.sysfs:
        workload += "    sysfs:\n" + "".join(
            f"      {key}: {value}\n" for key, value in args.sysfs)
    sub = (f"matrices:\n  {WORKLOAD}:\n    variants: "
           f"[{', '.join(args.variants)}]\n    backends: [{args.backend}]\n"
           f"    workloads: [{WORKLOAD}]\n    repeats: {args.repeats}\n")
    for key, add in (("workloads:\n", workload), ("matrices:\n", sub)):
        if f"\n{key}" not in text:
            sys.exit(f"bench_usemem: {ROOT / 'matrix.yaml'} has no "
                     f"top-level '{key.strip()}'")
        text = text.replace(f"\n{key}", "\n" + add, 1)
    for name in ("kernels", "patches"):
        (tmp / name).symlink_to(ROOT / name)
    path = tmp / "matrix.yaml"
    path.write_text(text)
    return path


def lab_cells(matrix: Path, repeat: int, variants: list[str], backend: str,
              run_id: str | None, tmp: Path) -> str:
    """One lab session over this repeat's cells; the run's id."""
    cells = tmp / "cells.json"
    cells.write_text(json.dumps([[repeat, v, backend, WORKLOAD]
                                 for v in variants]))
    id_file = tmp / "run-id"
    command = [sys.executable, "-m", "pytest", str(ROOT / "lab" / "cells"),
               "-q", "-p", "no:cacheprovider", "--matrix", WORKLOAD,
               "--matrix-file", str(matrix), "--cells", str(cells),
               "--run-id-file", str(id_file)]
    command += ["--lab-run", run_id] if run_id else ["--new-run"]
    subprocess.run(command, cwd=ROOT, check=False)
    return id_file.read_text().strip()


def by_hand(matrix: Path, variant: str, backend: str, usemem: Path,
            args: argparse.Namespace) -> float | None:
    """usemem's KB/s summed over its processes, read off the console."""
    settings = "".join(f"echo {value} > /sys/{key}; "
                       for key, value in args.sysfs)
    out = subprocess.run(
        [sys.executable, "-m", "lab", "boot", variant, "--backend", backend,
         "--file", str(matrix), "--bring", str(usemem), "--", "sh", "-c",
         f"{settings}exec {usemem.name} -n {args.procs} {args.size}"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    kbps = [int(m.group(3)) for m in map(LINE.match, out.stdout.splitlines())
            if m]
    if len(kbps) != args.procs:
        print(f"  {variant} by hand: {len(kbps)} usemem lines, expected "
              f"{args.procs}; {out.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return float(sum(kbps))


def interval(values: list[float]) -> str:
    s = summarize(values)
    each = ", ".join(f"{v:,.0f}" for v in values)
    if s.n < 2:
        return f"{s.mean:,.0f} (n {s.n}: {each})"
    half = 0.0 if s.stddev is None else \
        sps.t.ppf(0.975, s.n - 1) * s.stddev / s.n ** 0.5
    return f"{s.mean:,.0f} [{s.mean - half:,.0f}, {s.mean + half:,.0f}] " \
        f"(n {s.n}, CV {100 * (s.cv or 0):.1f} %: {each})"


def ranking(values: dict[str, list[float]], first: str, second: str
            ) -> tuple[str, str]:
    """`second` against `first`: ("higher" | "lower" | "tied", the change
    with its 95 % interval); tied when the interval holds no change."""
    if min(len(values[first]), len(values[second])) < 2:
        return "unknown", "fewer than 2 values"
    ratio, low, high, _ = welch_log_ratio(values[first], values[second])
    text = (f"{100 * (ratio - 1):+.1f} % [{100 * (low - 1):+.1f}, "
            f"{100 * (high - 1):+.1f}]")
    return ("tied" if low <= 1 <= high else
            "higher" if ratio > 1 else "lower"), text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--usemem", type=Path, required=True)
    ap.add_argument("--variants", nargs=2, default=["base", "thp-stage2"])
    ap.add_argument("--backend", default="nvme")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--size", default="250m")
    ap.add_argument("--sysfs", action="append", default=[],
                    metavar="KEY=VALUE", help="under /sys, both ways")
    args = ap.parse_args()
    args.sysfs = [tuple(kv.split("=", 1)) for kv in args.sysfs]
    usemem = args.usemem.resolve()
    hand: dict[str, list[float]] = {v: [] for v in args.variants}
    with tempfile.TemporaryDirectory(prefix="bench-usemem-") as name:
        tmp = Path(name)
        matrix = matrix_file(tmp, usemem, args)
        run_id = None
        for repeat in range(1, args.repeats + 1):
            run_id = lab_cells(matrix, repeat, args.variants, args.backend,
                               run_id, tmp)
            for v in args.variants:
                value = by_hand(matrix, v, args.backend, usemem, args)
                if value is not None:
                    hand[v].append(value)
    lab: dict[str, list[float]] = {v: [] for v in args.variants}
    for rec in Store(cache_root()).open(str(run_id)).records().values():
        metric = cell_metrics(rec.result).get(METRIC)
        if metric is not None:
            lab[rec.cell.variant].append(metric.value)
    print(f"usemem -n {args.procs} {args.size} on {args.backend}, KB/s "
          f"summed over processes, 95 % intervals (lab run {run_id})")
    for v in args.variants:
        print(f"{v}:\n  by hand {interval(hand[v])}\n  lab     "
              f"{interval(lab[v])}")
        if min(len(hand[v]), len(lab[v])) >= 2:
            ratio, low, high, p = welch_log_ratio(hand[v], lab[v])
            noise = "within the noise" if low <= 1 <= high else "DIFFERS"
            print(f"  lab vs by hand {100 * (ratio - 1):+.1f} % "
                  f"[{100 * (low - 1):+.1f}, {100 * (high - 1):+.1f}] "
                  f"p {p:.2f}: {noise}")
    first, second = args.variants
    rank = {}
    for how, values in (("by hand", hand), ("lab", lab)):
        rank[how], text = ranking(values, first, second)
        print(f"ranking {how}: {second} against {first}: {rank[how]}, {text}")
    same = rank["by hand"] == rank["lab"] != "unknown"
    print("rankings agree" if same else "RANKINGS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
