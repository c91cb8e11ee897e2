#!/usr/bin/python3
"""Benchmark swapbench (workloads/) against the targets of issue 3.

    /usr/bin/python3 tests/bench/bench_swapbench.py [--repeats N]
        [--cost-repeats N] [--binary FILE] [--json FILE] [--strict]

Measures, on the host, in wall time (CLOCK_MONOTONIC, as swapbench reports
it):
  1. the calibrated instruction loop for 24 us (target 24 us +- 5 %);
  2. the per-page wall time of the seeds' instrumented loop (timing and
     data check on) with --work-us 24 busy-wait and with the calibrated
     loop (target 24 us +- 5 %);
  3. the absolute cost of the instrumentation in ns per page, measured
     with no work per page (where nothing hides it and a run of a few
     hundred thousand pages resolves it to a few ns): the timing +
     histogram (latency on vs --no-latency) with the data check on and
     with it off, the data check (page stamps read back and compared, vs
     --no-verify), and both together.  Each cost is compared against the
     seeds' 24 us of work per page: overhead = cost / 24 us, target
     <= 2 %.

Only steady passes count (the first pass, which takes the page faults, is
left out: elapsed_s - first_pass_s).  Runs are interleaved; each figure is
the best (least disturbed) of its repeats, since the host is shared with
kernel builds; the median of the repeats and the spread of the paired
differences (on and off measured back to back) are printed beside it.
About 10 s (20 s on a busy host).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "workloads"
BINARY = WORKLOADS / "build" / "swapbench"
PAGE = os.sysconf("SC_PAGE_SIZE")
WORK_US = 24.0
WORK_NS = WORK_US * 1e3
DELAY_TOL = 0.05            # per-page delay and calibration: +- 5 %
OVERHEAD_MAX = 2.0          # instrumentation: <= 2 % of 24 us
# delay runs: 16 MiB = 4096 pages x 24 us ~ 0.1 s a pass
DELAY_AREA = ["-s", "16M", "--passes", "3", "--no-final-verify"]
# cost runs: 64 MiB = 16384 pages (more than the caches hold, as in the
# guest) x 40 steady passes = 655360 pages, 10-150 ms a run
COST_BYTES = 64 << 20
COST_PASSES = 41
COST_AREA = ["-s", str(COST_BYTES), "--passes", str(COST_PASSES),
             "--no-final-verify"]

PRIORITY = {"on": False}
BIN = {"path": BINARY}


def _raise_priority():
    """In the child: its own session (so its own scheduler autogroup,
    shared with nothing else) at nice -20; the host runs kernel builds."""
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-20")
        os.nice(-20)
    except OSError:
        pass


def swapbench(*args):
    res = subprocess.run([str(BIN["path"]), "-q", *args],
                         capture_output=True, text=True, timeout=120,
                         start_new_session=PRIORITY["on"],
                         preexec_fn=_raise_priority if PRIORITY["on"]
                         else None)
    if res.returncode != 0:
        sys.exit("swapbench %s failed (%d): %s" % (" ".join(args),
                                                   res.returncode,
                                                   res.stderr))
    return json.loads(res.stdout)


def steady_ns_per_page(doc):
    """Wall ns per page over the passes after the first."""
    t = doc["tasks"][0]
    step = doc["config"]["step_pages"]
    first = (t["size_bytes"] // PAGE + step - 1) // step
    pages = t["pages"] - first
    if pages <= 0:
        raise ValueError("need at least two passes")
    return max(0.0, t["elapsed_s"] - t["first_pass_s"]) * 1e9 / pages


def measure(configs, repeats):
    """Run every config @repeats times, interleaved: {name: [ns/page]}."""
    runs = {name: [] for name in configs}
    for _ in range(repeats):
        for name, args in configs.items():
            runs[name].append(steady_ns_per_page(swapbench(*args)))
    return runs


def verdict(ok):
    return "ok" if ok else "OVER"


def pct_of_work(ns):
    return ns / WORK_NS * 100


def spread(values):
    """Half the interquartile range (0 for fewer than 4 values)."""
    if len(values) < 4:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5,
                    help="repeats of the 24 us delay runs [5]")
    ap.add_argument("--cost-repeats", type=int, default=15,
                    help="repeats of the no-work cost runs [15]")
    ap.add_argument("--binary", help="swapbench binary to measure (default: "
                    "build workloads/ and use workloads/build/swapbench)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--no-nice", action="store_true",
                    help="run swapbench at normal priority")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a target is missed")
    opts = ap.parse_args()
    if opts.repeats < 1 or opts.cost_repeats < 1:
        ap.error("repeats must be >= 1")

    if opts.binary:
        BIN["path"] = Path(opts.binary).resolve()
    else:
        subprocess.run(["make", "-s", "-C", str(WORKLOADS)], check=True)
    PRIORITY["on"] = not opts.no_nice
    out = {"binary": str(BIN["path"]), "repeats": opts.repeats,
           "cost_repeats": opts.cost_repeats,
           "priority_raised": PRIORITY["on"], "targets": {}}
    print("host: %d cpus, load average %.2f, swapbench at %s" %
          (os.cpu_count(), os.getloadavg()[0],
           "nice -20 in its own autogroup" if PRIORITY["on"] else
           "normal priority"))
    ok_all = True

    def target(name, ok):
        nonlocal ok_all
        ok_all &= ok
        out["targets"][name] = bool(ok)
        return verdict(ok)

    # 1. calibration --------------------------------------------------
    with tempfile.TemporaryDirectory() as tmp:
        cal_file = os.path.join(tmp, "calibration.txt")
        cal = swapbench("--calibrate", cal_file,
                        "--work-us", str(WORK_US))["calibration"]
        out["calibration"] = cal
        err = cal["check_median_us"] / WORK_US - 1
        print("calibrated loop: %d iterations (%.4f ns/iter); own check: "
              "median %.3f us (%+.2f %%), min %.3f, p90 %.3f, mean %.3f  "
              "[target 24 us +- 5 %%: %s]" %
              (cal["iterations"], cal["ns_per_iteration"],
               cal["check_median_us"], err * 100, cal["check_min_us"],
               cal["check_p90_us"], cal["check_mean_us"],
               target("calibration", abs(err) <= DELAY_TOL)))

        # 2. per-page delay at 24 us, the seeds' instrumented loop -----
        delay_cfg = {
            "busy": DELAY_AREA + ["--work-us", str(WORK_US)],
            "loop": DELAY_AREA + ["--work-us", str(WORK_US),
                                  "--work-calibration", cal_file],
        }
        delay = measure(delay_cfg, opts.repeats)

    # 3. instrumentation cost, no work per page -------------------------
    cost_cfg = {}
    for vname, vargs in (("check", []), ("nocheck", ["--no-verify"])):
        for lname, largs in (("lat", []), ("nolat", ["--no-latency"])):
            cost_cfg[(vname, lname)] = COST_AREA + vargs + largs
    cost = measure(cost_cfg, opts.cost_repeats)
    nowork = min(cost[("check", "lat")])

    print("\nper-page wall time, timing and data check on, best of %d "
          "(median):" % opts.repeats)
    out["per_page"] = {}
    for wname in ("busy", "loop"):
        best = min(delay[wname])
        med = statistics.median(delay[wname])
        err = best / WORK_NS - 1
        net = best - nowork
        net_err = net / WORK_NS - 1
        out["per_page"][wname] = {"wall_ns": best, "median_ns": med,
                                  "error": err, "work_only_ns": net,
                                  "work_only_error": net_err,
                                  "runs_ns": delay[wname]}
        print("  %s 24 us: %.3f us (%+.2f %%; median %.3f us); work alone "
              "(minus the no-work loop) %.3f us (%+.2f %%)  "
              "[target 24 us +- 5 %%: %s]" %
              (wname, best / 1e3, err * 100, med / 1e3, net / 1e3,
               net_err * 100,
               target("per_page_%s" % wname, abs(err) <= DELAY_TOL)))

    print("\nno work per page, %d pages a run, best of %d (median, "
          "+- half IQR), ns/page:" %
          (COST_BYTES // PAGE * (COST_PASSES - 1), opts.cost_repeats))
    out["no_work_ns_per_page"] = {}
    for (vname, lname), runs in cost.items():
        key = "%s/%s" % (vname, lname)
        out["no_work_ns_per_page"][key] = {
            "best": min(runs), "median": statistics.median(runs),
            "runs": runs}
        print("  %-16s %9.1f  (%.1f +- %.1f)" %
              (key, min(runs), statistics.median(runs), spread(runs)))

    print("\ninstrumentation cost per page vs the seeds' %g us of work "
          "(best - best; median of paired differences +- half IQR):" %
          WORK_US)
    out["cost"] = {}
    pairs = [
        ("timing+histogram, check on", ("check", "lat"), ("check", "nolat")),
        ("timing+histogram, check off", ("nocheck", "lat"),
         ("nocheck", "nolat")),
        ("data check, timing on", ("check", "lat"), ("nocheck", "lat")),
        ("data check, timing off", ("check", "nolat"),
         ("nocheck", "nolat")),
        ("all (timing + check)", ("check", "lat"), ("nocheck", "nolat")),
    ]
    for name, on, off in pairs:
        ns = min(cost[on]) - min(cost[off])
        diffs = [a - b for a, b in zip(cost[on], cost[off])]
        med, noise = statistics.median(diffs), spread(diffs)
        pct = pct_of_work(ns)
        out["cost"][name] = {"ns_per_page": ns, "percent_of_24us": pct,
                             "median_ns": med, "half_iqr_ns": noise}
        print("  %-28s %+8.1f ns/page = %6.3f %%  (%+.1f +- %.1f ns = "
              "%.3f +- %.3f %%)  [target <= 2 %%: %s]" %
              (name, ns, pct, med, noise, pct_of_work(med),
               pct_of_work(noise), target("cost: " + name,
                                          pct <= OVERHEAD_MAX)))

    out["all_targets_met"] = bool(ok_all)
    print("\nall targets met: %s" % ("yes" if ok_all else "NO"))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(out, f, indent=2)
    return 1 if opts.strict and not ok_all else 0


if __name__ == "__main__":
    sys.exit(main())
