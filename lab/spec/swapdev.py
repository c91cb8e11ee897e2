"""matrix.yaml's `backends`: the swap device kinds, their device models
(lab/devmodel, docs/devices.md), injected media faults and time
dilation, validated with file:line in every error."""
from __future__ import annotations

import math

from lab.spec.fields import (Fields, as_bool, as_int, as_number, as_size_mib,
                             as_str, expected)
from lab.spec.model import BACKEND_KINDS, FAULT_RATES, MODELS, Backend
from lab.spec.yamlsrc import Node

BACKEND_PARAMS: dict[str, dict[str, str]] = {
    # param -> "int" | "number" | "size" | "str" | "bool" | "dilation";
    # the device-model keys are explained in docs/devices.md.
    "rotational": {"rotation_rate": "int", "throttle_iops": "int",
                   "throttle_bps": "size", "model": "str",
                   "seek_short_ms": "number", "seek_full_ms": "number",
                   "seek_knee": "number", "rpm": "int",
                   "transfer_mb_s": "number", "stroke": "size",
                   "dilation": "dilation"},
    "nvme": {"mdts": "int", "model": "str", "read_us": "number",
             "write_us": "number", "bandwidth_mb_s": "number",
             "parallel": "int", "dilation": "dilation"},
    "pmem": {"mode": "str", "dax": "bool"},
    "zram": {"compressor": "str"},
}
FAULT_PARAMS = dict.fromkeys(FAULT_RATES, "rate") | {"error_seed": "int"}
for _kind in ("rotational", "nvme"):
    BACKEND_PARAMS[_kind].update(FAULT_PARAMS, swap_file="str")
PMEM_MODES = ("nvdimm", "memmap")
# What kernels/zram.config gives both trees.
ZRAM_COMPRESSORS = ("lzo-rle", "lzo")
# Swap on a file in a file system on the drive (workloads/agent/swapfile.h):
# its blocks interleaved with filler files', or written in one piece.
SWAP_FILE_LAYOUTS = ("fragmented", "contiguous")


def backend(name: str, node: Node) -> Backend:
    fields = Fields(node, f"backend '{name}'")
    knode = fields.need("kind")
    kind = as_str(knode, "a backend kind")
    if kind not in BACKEND_KINDS:
        raise expected(knode, f"one of {', '.join(BACKEND_KINDS)}")
    params: dict[str, str | int | float | bool] = {}
    for param, typ in BACKEND_PARAMS[kind].items():
        child = fields.get(param)
        if child is None:
            continue
        if typ == "int":
            params[param] = as_int(child, 0, what=f"an integer {param}")
        elif typ == "size":
            params[param] = as_size_mib(child)
        elif typ == "bool":
            params[param] = as_bool(child)
        elif typ == "number":
            params[param] = as_number(child)
        elif typ == "rate":
            params[param] = share = as_number(child)
            if not 0 <= share <= 1:
                raise expected(child, f"{param}: a share from 0 to 1")
        elif typ == "dilation":
            params[param] = dilation(child)
        else:
            params[param] = as_str(child)
    if "swap_file" in params and params["swap_file"] not in \
            SWAP_FILE_LAYOUTS:
        raise expected(node.value["swap_file"],
                       f"swap_file: {' or '.join(SWAP_FILE_LAYOUTS)}")
    if kind == "pmem" and params.get("mode", "nvdimm") not in PMEM_MODES:
        raise expected(node.value["mode"], " or ".join(PMEM_MODES))
    if kind == "zram" and params.get("compressor", "lzo-rle") not in \
            ZRAM_COMPRESSORS:
        raise expected(node.value["compressor"],
                       f"a zram compressor: {' or '.join(ZRAM_COMPRESSORS)}")
    if "model" in params and params["model"] not in MODELS[kind]:
        raise expected(node.value["model"],
                       f"a {kind} model: {' or '.join(MODELS[kind])}")
    faulty = [p for p in FAULT_RATES if params.get(p)]
    if faulty and params.get("model", "none") == "none":
        raise expected(node.value[faulty[0]],
                       f"{faulty[0]} only with a device model (model: "
                       f"{' or '.join(MODELS[kind][1:])}): the model "
                       "injects the faults")
    fields.done()
    return Backend(name, kind, params)


def dilation(node: Node) -> str | float:
    if node.value in ("auto", "off"):
        return str(node.value)
    value = node.value
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) and value > 0:
        return float(value)
    raise expected(node, "auto, off or a positive dilation factor")
