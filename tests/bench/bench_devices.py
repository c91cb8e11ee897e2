"""The modelled swap devices as the guest sees them, against issue 6's
bands: rotational (dilation off) random 4 KiB read 4-15 ms, sequential
2 MiB read 80-250 MB/s, 8 adjacent pages under 1.5x one page; NVMe
(dilated by the factor measured here) QD1 4 KiB read within 2x of the
model, QD32 at least 4x the IOPS of QD1.

These are figures of the host as much as of the model: the emulated I/O
path (virtio-scsi or NVMe emulation, NBD, nbdkit) adds its own time per
request, more on a slower or busier host (docs/devices.md). The guest
test (tests/integration/test_devices_guest.py) checks what the host
cannot move; this prints the bands.

    /usr/bin/python3 tests/bench/bench_devices.py

The kernel is the matrix's `base` variant (built if the cache lacks it),
as in the guest test: a debug kernel's I/O path is slower. The probe
runs and its checks are the guest test's own.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lab.cache import cache_root, locked  # noqa: E402
from lab.calibrate import dilation  # noqa: E402
from lab.guest import devices
from lab.kernel.build import Builder  # noqa: E402
from lab.progress import Progress  # noqa: E402
from lab.spec.matrix import load_matrix  # noqa: E402
# the guest test's guest, devices and probe, so both measure the same
from tests.integration.test_devices_guest import (  # noqa: E402
    GUEST, MODEL_US as NVME_MODEL_US, NVME_PARAMS, ROT, nvme_model, probe)


def band(name: str, value: float, low: float, high: float,
         unit: str) -> bool:
    ok = low <= value <= high
    print(f"  {name:34s} {value:10.2f} {unit:5s} band {low:g}-{high:g}: "
          f"{'meets' if ok else 'MISSES'}")
    return ok


def main() -> int:
    matrix = load_matrix(ROOT / "matrix.yaml")
    with locked(cache_root()):
        build = Builder(matrix, cache_root()).build(
            matrix.variants["base"], Progress("base"))
    devices.build_programs()
    met = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        t = probe(build, tmp, ROT,
                  "randread-4k-qd1,randread-32k-qd1,seqread-2m-qd1", None,
                  tmp / "rot")
        one = t["randread-4k-qd1"]["lat_us"]["mean"]
        eight = t["randread-32k-qd1"]["lat_us"]["mean"]
        print(f"rotational (model {ROT.params}, dilation off):")
        met.append(band("random 4 KiB read", one / 1e3, 4, 15, "ms"))
        met.append(band("sequential 2 MiB read",
                        t["seqread-2m-qd1"]["mb_s"], 80, 250, "MB/s"))
        met.append(band("8 adjacent pages / one page", eight / one, 0, 1.5,
                        "x"))
        cal = dilation.calibrate(build, tmp, guest=GUEST, boots=3)
        factor = cal["factor"]
        t = probe(build, tmp, nvme_model(factor),
                  "randread-4k-qd1,randread-4k-qd32", factor, tmp / "nvme")
        qd1, qd32 = t["randread-4k-qd1"], t["randread-4k-qd32"]
        print(f"nvme (model {NVME_PARAMS}, dilation {factor:.2f} from "
              f"{cal['factors']}):")
        met.append(band("QD1 4 KiB read, undilated",
                        qd1["undilated"]["mean_us"], NVME_MODEL_US / 2,
                        NVME_MODEL_US * 2, "us"))
        met.append(band("QD32 / QD1 IOPS", qd32["iops"] / qd1["iops"], 4,
                        float("inf"), "x"))
    print(f"device bands: {sum(met)} of {len(met)} met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
