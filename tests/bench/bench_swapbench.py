#!/usr/bin/python3
"""Benchmark swapbench (workloads/) against the targets of issue 3.

    /usr/bin/python3 tests/bench/bench_swapbench.py [--repeats N]
                                                    [--json FILE] [--strict]

Measures, on the host:
  1. the calibrated instruction loop for 24 us (target 24 us +- 5 %);
  2. the per-page wall time with --work-us 24 busy-wait (target +- 5 %) and
     with the calibrated loop;
  3. the timing + histogram overhead (latency on vs --no-latency) of the
     same loop, with the data check on and off (target <= 2 %), for the
     seeds' 24 us of work per page, plus the absolute cost per page of a
     loop with no work at all (informational: there is nothing to hide it).

Only steady passes count (the first pass, which takes the page faults, is
left out: first_pass_s / first_pass_cpu_s).  Runs are interleaved and the
best of --repeats is kept, since the host is shared with kernel builds.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "workloads"
BINARY = WORKLOADS / "build" / "swapbench"
PAGE = os.sysconf("SC_PAGE_SIZE")
WORK_US = 24.0


PRIORITY = {"on": False}


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
    res = subprocess.run([str(BINARY), "-q", *args], capture_output=True,
                         text=True, timeout=600,
                         start_new_session=PRIORITY["on"],
                         preexec_fn=_raise_priority if PRIORITY["on"]
                         else None)
    if res.returncode != 0:
        sys.exit("swapbench %s failed (%d): %s" % (" ".join(args),
                                                   res.returncode,
                                                   res.stderr))
    return json.loads(res.stdout)


def steady_ns_per_page(doc):
    """(wall, cpu) ns per page over the passes after the first."""
    t = doc["tasks"][0]
    step = doc["config"]["step_pages"]
    first = (t["size_bytes"] // PAGE + step - 1) // step
    pages = t["pages"] - first
    if pages <= 0:
        raise ValueError("need at least two passes")
    wall = (t["elapsed_s"] - t["first_pass_s"]) * 1e9 / pages
    cpu = (t["cpu_s"] - t["first_pass_cpu_s"]) * 1e9 / pages
    return wall, cpu


def best_of(configs, repeats):
    """Run every config @repeats times, interleaved; keep the best."""
    best = {name: [float("inf"), float("inf")] for name in configs}
    for _ in range(repeats):
        for name, args in configs.items():
            wall, cpu = steady_ns_per_page(swapbench(*args))
            best[name][0] = min(best[name][0], wall)
            best[name][1] = min(best[name][1], cpu)
    return best


def verdict(ok):
    return "PASS" if ok else "FAIL"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--no-nice", action="store_true",
                    help="run swapbench at normal priority")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a target is missed")
    opts = ap.parse_args()

    subprocess.run(["make", "-s", "-C", str(WORKLOADS)], check=True)
    PRIORITY["on"] = not opts.no_nice
    out = {"repeats": opts.repeats, "priority_raised": PRIORITY["on"]}
    print("host: %d cpus, load average %.2f, swapbench at %s" %
          (os.cpu_count(), os.getloadavg()[0],
           "nice -20 in its own autogroup" if PRIORITY["on"] else
           "normal priority"))
    ok_all = True

    # 1. calibration --------------------------------------------------
    with tempfile.TemporaryDirectory() as tmp:
        cal_file = os.path.join(tmp, "calibration.txt")
        cal = swapbench("--calibrate", cal_file,
                        "--work-us", str(WORK_US))["calibration"]
        out["calibration"] = cal
        err = cal["check_median_us"] / WORK_US - 1
        ok = abs(err) <= 0.05
        ok_all &= ok
        print("calibrated loop: %d iterations (%.4f ns/iter); own check: "
              "median %.3f us (%+.2f %%), min %.3f, p90 %.3f, mean %.3f  "
              "[target 24 us +- 5 %%: %s]" %
              (cal["iterations"], cal["ns_per_iteration"],
               cal["check_median_us"], err * 100, cal["check_min_us"],
               cal["check_p90_us"], cal["check_mean_us"], verdict(ok)))

        # 2 + 3. per-page delay and instrumentation overhead ----------
        area = ["-s", "16M", "--passes", "3", "--no-final-verify"]
        work = {
            "busy": ["--work-us", str(WORK_US)],
            "loop": ["--work-us", str(WORK_US), "--work-calibration",
                     cal_file],
        }
        configs = {}
        for wname, wargs in work.items():
            for vname, vargs in (("verify", []),
                                 ("noverify", ["--no-verify"])):
                for lname, largs in (("lat", []),
                                     ("nolat", ["--no-latency"])):
                    configs[(wname, vname, lname)] = \
                        area + wargs + vargs + largs
        nowork_area = ["-s", "64M", "--passes", "11", "--no-final-verify"]
        for vname, vargs in (("verify", []), ("noverify", ["--no-verify"])):
            for lname, largs in (("lat", []), ("nolat", ["--no-latency"])):
                configs[("none", vname, lname)] = nowork_area + vargs + largs
        best = best_of(configs, opts.repeats)

    out["ns_per_page"] = {"/".join(k): {"wall": v[0], "cpu": v[1]}
                          for k, v in best.items()}

    print("\nsteady per-page time, best of %d (ns/page, wall / cpu):" %
          opts.repeats)
    for k, (wall, cpu) in best.items():
        print("  %-26s %12.1f / %12.1f" % ("/".join(k), wall, cpu))

    # per-page delay at 24 us, the seeds' instrumented loop
    print()
    nowork = best[("none", "verify", "lat")][0]
    for wname in ("busy", "loop"):
        per_page = best[(wname, "verify", "lat")][0]
        err = per_page / (WORK_US * 1e3) - 1
        net = per_page - nowork
        net_err = net / (WORK_US * 1e3) - 1
        ok = abs(err) <= 0.05
        ok_all &= ok
        out["per_page_%s" % wname] = {"wall_ns": per_page,
                                      "error": err,
                                      "work_only_ns": net,
                                      "work_only_error": net_err}
        print("per-page wall time, %s 24 us: %.3f us (%+.2f %%); "
              "work alone (minus the no-work loop) %.3f us (%+.2f %%)  "
              "[target +- 5 %%: %s]" % (wname, per_page / 1e3, err * 100,
                                       net / 1e3, net_err * 100,
                                       verdict(ok)))

    # instrumentation overhead
    print("\ntiming + histogram overhead (latency on vs --no-latency):")
    out["overhead"] = {}
    for wname in ("busy", "loop", "none"):
        for vname in ("verify", "noverify"):
            on = best[(wname, vname, "lat")]
            off = best[(wname, vname, "nolat")]
            idx = 0 if wname == "busy" else 1    # wall for the busy-wait
            pct = (on[idx] / off[idx] - 1) * 100
            extra = on[idx] - off[idx]
            key = "%s/%s" % (wname, vname)
            out["overhead"][key] = {"percent": pct, "ns_per_page": extra,
                                    "measure": "wall" if idx == 0 else
                                    "cpu"}
            if wname == "none":
                print("  %-16s %+7.2f %%  (%+.1f ns/page, %s; no work "
                      "per page: informational)" %
                      (key, pct, extra, "cpu"))
                continue
            ok = pct <= 2.0
            ok_all &= ok
            print("  %-16s %+7.2f %%  (%+.1f ns/page, %s)  [target <= 2 %%:"
                  " %s]" % (key, pct, extra, "wall" if idx == 0 else "cpu",
                            verdict(ok)))
    out["all_targets_met"] = bool(ok_all)
    print("\nall targets met: %s" % ("yes" if ok_all else "NO"))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(out, f, indent=2)
    return 1 if opts.strict and not ok_all else 0


if __name__ == "__main__":
    sys.exit(main())
