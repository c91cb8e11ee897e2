"""matrix.yaml parsing, expansion and validation errors."""
from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from lab.errors import MatrixError
from lab.guest import cellspec
from lab.spec.matrix import describe, load_matrix
from lab.spec.model import Cell, Condition

GOOD = """\
version: 1
trees:
  linux-source-6.1: {}
  linux-source-6.12: {base_config: tinyconfig}
fragments:
  lab-base: kernels/lab-base.config
variants:
  upstream:
    tree: linux-source-6.1
    fragments: [lab-base]
  base:
    tree: linux-source-6.1
    series: [baseline]
    fragments: [lab-base]
    sysctl: {vm.page-cluster: 3}
  readahead:
    tree: linux-source-6.1
    series: [baseline, readahead]
    fragments: [lab-base]
    sysfs: {kernel/mm/swap/vma_ra_enabled: true}
  upstream-6.12:
    tree: linux-source-6.12
    fragments: [lab-base]
backends:
  rotational: {kind: rotational, rotation_rate: 7200, throttle_bps: 120M}
  nvme: {kind: nvme, mdts: 9}
  dax-pmem: {kind: pmem, mode: nvdimm}
workloads:
  seq:
    program: swapbench
    args: [--pattern, seq, --passes, 3]
  thp:
    program: swapbench
    args: [--mode, fill]
    timeout: 120
guest:
  memory: 512M
  vcpus: 2
  swap: 1G
repeats: 3
baseline: base
expect:
  - where: {variant: readahead, workload: seq}
    vmstat: {swap_ra_vma_rfc: ">0", swap_ra_cluster: 0}
matrices:
  quick:
    variants: [base, readahead]
    workloads: [seq]
    repeats: 1
  full:
    exclude:
      - {variant: upstream-6.12, backend: [rotational, dax-pmem]}
  smoke:
    only:
      - {variant: base, backend: nvme, workload: seq, repeat: 1}
"""


def make_tree(tmp: Path, text: str = GOOD) -> Path:
    (tmp / "kernels").mkdir(parents=True)
    (tmp / "kernels" / "lab-base.config").write_text("CONFIG_SWAP=y\n")
    for series in ("baseline", "readahead"):
        d = tmp / "patches" / "linux-source-6.1" / series
        d.mkdir(parents=True)
        (d / "series").write_text("")
    path = tmp / "matrix.yaml"
    path.write_text(text)
    return path


def line_of(text: str, needle: str) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(f"{needle!r} not in text")


def bad(tmp: Path, old: str, new: str) -> tuple[MatrixError, str]:
    assert old in GOOD, old
    text = GOOD.replace(old, new, 1)
    path = make_tree(tmp, text)
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    return info.value, text


def test_good_matrix_model(tmp_path: Path) -> None:
    m = load_matrix(make_tree(tmp_path))
    assert list(m.variants) == ["upstream", "base", "readahead",
                                "upstream-6.12"]
    assert m.variants["readahead"].series == ("baseline", "readahead")
    assert m.variants["upstream-6.12"].tree == "linux-source-6.12"
    assert m.variants["base"].sysctl == {"vm.page-cluster": "3"}
    assert m.variants["readahead"].sysfs == {
        "kernel/mm/swap/vma_ra_enabled": "1"}
    assert m.backends["rotational"].params == {"rotation_rate": 7200,
                                                "throttle_bps": 120}
    assert m.workloads["seq"].args == ("--pattern", "seq", "--passes", "3")
    assert m.workloads["seq"].timeout_s == 600
    assert m.guest.memory_mib == 512 and m.guest.swap_mib == 1024
    assert m.guest.firmware == "seabios"
    assert m.baseline == "base"
    [rule] = m.expect
    assert rule.vmstat == {"swap_ra_vma_rfc": Condition(">", 0),
                           "swap_ra_cluster": Condition("==", 0)}
    assert rule.where.matches(Cell(1, "readahead", "nvme", "seq"))
    assert not rule.where.matches(Cell(1, "base", "nvme", "seq"))
    assert rule.origin.endswith(f"matrix.yaml:{line_of(GOOD, '- where')}")


def test_cells_expand_and_interleave(tmp_path: Path) -> None:
    m = load_matrix(make_tree(tmp_path))
    quick = m.cells("quick")
    assert [c.id for c in quick] == [
        "base-rotational-seq-r1", "readahead-rotational-seq-r1",
        "base-nvme-seq-r1", "readahead-nvme-seq-r1",
        "base-dax-pmem-seq-r1", "readahead-dax-pmem-seq-r1"]
    full = m.cells("full")
    # 4 variants x 3 backends x 2 workloads x 3 repeats, minus 6.12 on
    # two backends (2 backends x 2 workloads x 3 repeats).
    assert len(full) == 4 * 3 * 2 * 3 - 2 * 2 * 3
    repeats = [c.repeat for c in full]
    assert repeats == sorted(repeats), "repeat 1 of all before repeat 2"
    assert [c.id for c in m.cells("smoke")] == ["base-nvme-seq-r1"]


def test_every_variant_takes_every_slot(tmp_path: Path) -> None:
    # The first cell after a backend switch runs slow: over as many
    # repeats as variants, each variant starts each block once.
    text = GOOD.replace("repeats: 3\nbaseline", "repeats: 4\nbaseline", 1)
    m = load_matrix(make_tree(tmp_path, text))
    blocks: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for (rep, wl, be) in {(c.repeat, c.workload, c.backend)
                          for c in m.cells("full")}:
        blocks.setdefault((wl, be), []).append(m.order("full", rep, wl, be))
    for orders in blocks.values():
        for slot in range(4):
            assert sorted(o[slot] for o in orders) == sorted(m.variants)
    # The starting permutation is drawn per block, not the file's order.
    starts = {m.order("full", 1, wl, be) for wl, be in blocks}
    assert len(starts) > 1
    ids = [c.id for c in m.cells("full")]
    assert len(ids) == len(set(ids))


def test_order_seed_is_declared_or_derived(tmp_path: Path) -> None:
    m = load_matrix(make_tree(tmp_path))
    text = GOOD.replace("  full:\n", "  full:\n    order_seed: 7\n", 1)
    other = load_matrix(make_tree(tmp_path / "b", text))
    assert other.sub("full").order_seed == 7
    assert m.sub("full").order_seed == zlib.crc32(b"full")
    assert [m.order("full", 1, "seq", be) for be in m.backends] != \
        [other.order("full", 1, "seq", be) for be in m.backends]


@pytest.mark.parametrize("old,new,needle,keypath,expect", [
    ("repeats: 3", "repeats: 3\ncolour: blue", "colour:", "colour",
     "unknown key 'colour'"),
    ("  nvme: {kind: nvme, mdts: 9}", "  nvme: {kind: nvme, mdts: nine}",
     "mdts: nine", "backends.nvme.mdts", "expected an integer mdts"),
    ("    series: [baseline, readahead]", "    series: [baseline, nope]",
     "[baseline, nope]", "variants.readahead.series[1]",
     "patch series 'nope' not found"),
    ("    fragments: [lab-base]\n  base:", "    fragments: [debug]\n  base:",
     "[debug]", "variants.upstream.fragments[0]",
     "fragment 'debug' is not declared"),
    ("baseline: base", "baseline: nobody", "baseline: nobody", "baseline",
     "baseline 'nobody' is not a variant"),
    ("    workloads: [seq]\n    repeats: 1",
     "    workloads: [seq]\n    repeats: 1\n    baseline: upstream",
     "baseline: upstream", "matrices.quick.baseline",
     "baseline 'upstream' is not a variant of sub-matrix 'quick'"),
    ("  memory: 512M", "  memory: lots", "memory: lots", "guest.memory",
     "expected a size"),
    ("    tree: linux-source-6.12", "    tree: linux-source-5.10",
     "linux-source-5.10", "variants.upstream-6.12.tree",
     "tree 'linux-source-5.10' is not declared"),
    ("  dax-pmem: {kind: pmem, mode: nvdimm}",
     "  dax-pmem: {kind: floppy}", "kind: floppy",
     "backends.dax-pmem.kind", "expected one of rotational, nvme, pmem"),
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, model: disk}", "model: disk",
     "backends.nvme.model", "expected a nvme model: none or ssd"),
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, model: ssd, dilation: fast}", "dilation: fast",
     "backends.nvme.dilation", "expected auto, off or a positive"),
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, model: ssd, read_us: -3}", "read_us: -3",
     "backends.nvme.read_us", "expected a non-negative number"),
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, model: ssd, read_error_rate: 2}",
     "read_error_rate: 2", "backends.nvme.read_error_rate",
     "read_error_rate: a share from 0 to 1"),
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, write_error_rate: 0.01}",
     "write_error_rate: 0.01", "backends.nvme.write_error_rate",
     "only with a device model (model: ssd)"),
    ("    variants: [base, readahead]", "    variants: [base, ghost]",
     "[base, ghost]", "matrices.quick.variants[1]", "unknown variant 'ghost'"),
    ("    variants: [base, readahead]", "    variants: []",
     "variants: []", "matrices.quick.variants",
     "'variants' is empty; expected at least one variant name"),
    ("    timeout: 120", "    timeout: 120\n    swap: 1.5G", "swap: 1.5G",
     "workloads.thp.swap", "expected a size in whole MiB"),
    ("  vcpus: 2", "  vcpus: [2]", "vcpus: [2]", "guest.vcpus",
     "expected a vCPU count, found a list"),
    ("      - {variant: base, backend: nvme, workload: seq, repeat: 1}",
     "      - {variant: base, device: nvme}", "device: nvme",
     "matrices.smoke.only[0].device", "unknown key 'device'"),
    ("{swap_ra_vma_rfc: \">0\", swap_ra_cluster: 0}",
     "{swap_ra_vma_rfc: many}", "many", "expect[0].vmstat.swap_ra_vma_rfc",
     "expected a counter condition"),
    ("{swap_ra_vma_rfc: \">0\", swap_ra_cluster: 0}", "{Bad-Name: 0}",
     "Bad-Name", "expect[0].vmstat.Bad-Name",
     "'Bad-Name' is not a /proc/vmstat"),
    ("{swap_ra_vma_rfc: \">0\", swap_ra_cluster: 0}", "{}",
     "vmstat: {}", "expect[0].vmstat", "expected a mapping of /proc/vmstat"),
    ("{variant: readahead, workload: seq}", "{variant: nope}",
     "variant: nope", "expect[0].where.variant", "unknown variant 'nope'"),
    ("  - where: {variant: readahead", "  - wehre: {variant: readahead",
     "wehre", "expect[0]", "missing required key 'where'"),
    ("    sysctl: {vm.page-cluster: 3}", "    sysctl: {vm/page: 3}",
     "vm/page", "variants.base.sysctl.vm/page", "is not a sysctl name"),
    ("nvme: {kind: nvme, mdts: 9}",
     "nvme: {kind: nvme, mdts: 9, swap_file: holes}", "swap_file: holes",
     "backends.nvme.swap_file", "swap_file: fragmented or contiguous"),
    ("nvme: {kind: nvme, mdts: 9}",
     "nvme: {kind: zram, compressor: zstd}", "compressor: zstd",
     "backends.nvme.compressor", "a zram compressor: lzo-rle or lzo"),
])
def test_errors_name_file_line_and_key(tmp_path: Path, old: str, new: str,
                                       needle: str, keypath: str,
                                       expect: str) -> None:
    err, text = bad(tmp_path, old, new)
    assert err.keypath == keypath
    assert err.line == line_of(text, needle), str(err)
    assert err.file.endswith("matrix.yaml")
    assert expect in err.message
    assert str(err).startswith(f"{err.file}:{err.line}: {keypath}: ")


def test_duplicate_names_are_errors(tmp_path: Path) -> None:
    err, text = bad(tmp_path / "v", "  upstream-6.12:\n", "  base:\n")
    assert "duplicate key (first given on line 11)" in err.message
    assert err.keypath == "variants.base"
    assert err.line == text.splitlines().index("  base:", 11) + 1
    err, text = bad(tmp_path / "w", "  thp:\n", "  seq:\n")
    assert err.keypath == "workloads.seq"
    assert err.line == line_of(text, "    args: [--mode") - 2


def test_missing_required_and_subs(tmp_path: Path) -> None:
    err, _ = bad(tmp_path / "a", "  full:\n    exclude:\n      - {variant: "
                 "upstream-6.12, backend: [rotational, dax-pmem]}\n", "")
    assert "missing sub-matrix 'full'" in err.message
    err, _ = bad(tmp_path / "b", "  swap: 1G\n", "")
    assert "missing required key 'swap'" in err.message
    assert err.keypath == "guest"


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    err, text = bad(tmp_path, "repeats: 3", "repeats: [3")
    assert "YAML syntax error" in err.message
    assert err.line is not None and err.line >= line_of(text, "repeats")


def test_unreadable_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match="cannot read"):
        load_matrix(tmp_path / "absent.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(MatrixError, match="empty"):
        load_matrix(empty)


def test_repository_matrix_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    m = load_matrix(root / "matrix.yaml")
    assert {"quick", "full"} <= set(m.matrices)
    assert m.baseline in m.variants
    assert {b.kind for b in m.backends.values()} == {"rotational", "nvme",
                                                    "pmem", "zram"}
    assert "linux-source-6.12" in {m.variants[v].tree
                                   for v in m.matrices["full"].variants}


def test_repository_debug_matrix_stays_out_of_research_runs() -> None:
    """The debug kernel (lockdep, KASAN ...) is for correctness, not
    timing: only the debug sub-matrix runs it, on the `everything` tree
    and series with the debug fragment on top."""
    root = Path(__file__).resolve().parents[2]
    m = load_matrix(root / "matrix.yaml")
    debug, everything = m.variants["everything-debug"], \
        m.variants["everything"]
    assert (debug.tree, debug.series) == (everything.tree, everything.series)
    assert debug.fragments == everything.fragments + ("debug",)
    assert m.matrices["debug"].variants == ("everything-debug",)
    assert {c.workload for c in m.cells("debug")} == {"seq", "thp-swpout"}
    # `race` is reliability too (issue 24): every page checked, no timing
    for name, sub in m.matrices.items():
        if name not in ("debug", "race"):
            assert "everything-debug" not in sub.variants, name
    assert {c.workload for c in m.cells("race")
            if c.variant == "everything-debug"} == {"race-thp-debug"}


def test_variant_timeout_scale(tmp_path: Path) -> None:
    """A slow (debug) kernel stretches its cells' timeouts, nothing else."""
    from lab.kernel.build import Build
    slow = GOOD.replace("    sysctl: {vm.page-cluster: 3}\n",
                        "    sysctl: {vm.page-cluster: 3}\n"
                        "    timeout_scale: 2.5\n", 1)
    m = load_matrix(make_tree(tmp_path / "ok", slow))
    assert m.variants["base"].timeout_scale == 2.5
    assert m.variants["readahead"].timeout_scale == 1.0
    build = Build("base", "k", "r", "linux-source-6.1", "", "", [], "", "",
                  0.0, str(tmp_path))
    base = cellspec.cell_spec(m.plan(Cell(1, "base", "nvme", "thp")), build,
                            tmp_path / "c1")
    other = cellspec.cell_spec(m.plan(Cell(1, "readahead", "nvme", "thp")),
                             build, tmp_path / "c2")
    assert (base.timeout_s, base.boot_allowance_s) == (300, 150)
    assert (other.timeout_s, other.boot_allowance_s) == \
        (120, cellspec.BOOT_ALLOWANCE_S)
    for value in ("0.5", "0", "fast", "101"):
        text = slow.replace("timeout_scale: 2.5", f"timeout_scale: {value}")
        path = make_tree(tmp_path / f"bad-{value}", text)
        with pytest.raises(MatrixError) as info:
            load_matrix(path)
        assert info.value.keypath == "variants.base.timeout_scale"
        assert info.value.line == line_of(text, "timeout_scale")


def test_a_sub_matrix_may_name_its_own_baseline(tmp_path):
    text = GOOD.replace("    workloads: [seq]\n    repeats: 1",
                        "    workloads: [seq]\n    repeats: 1\n"
                        "    baseline: readahead", 1)
    m = load_matrix(make_tree(tmp_path, text))
    assert m.sub("quick").baseline == "readahead"
    assert m.sub("full").baseline is None and m.baseline == "base"
    n = len(m.cells("quick"))
    assert f"  quick: {n} cells, baseline 'readahead'" in describe(m)


def test_a_workload_may_boot_with_its_own_swap_size(tmp_path: Path) -> None:
    text = GOOD.replace("    timeout: 120", "    timeout: 120\n    swap: 2G")
    matrix = load_matrix(make_tree(tmp_path, text))
    assert matrix.workloads["thp"].swap_mib == 2048
    assert matrix.guest_for("thp").swap_mib == 2048
    assert matrix.guest_for("seq") == matrix.guest
    assert matrix.guest_for("thp").memory_mib == matrix.guest.memory_mib


def test_a_cell_plan_resolves_the_cell_once(tmp_path: Path) -> None:
    """Matrix.plan(): the parts every later stage reads, the workload's
    settings over the variant's, and the workload's own guest."""
    text = GOOD.replace("    timeout: 120", "    timeout: 120\n    swap: 2G\n"
                        "    sysctl: {vm.page-cluster: 0}")
    matrix = load_matrix(make_tree(tmp_path, text))
    plan = matrix.plan(Cell(2, "base", "nvme", "thp"))
    assert (plan.variant, plan.backend, plan.workload) == (
        matrix.variants["base"], matrix.backends["nvme"],
        matrix.workloads["thp"])
    assert plan.guest.swap_mib == 2048 and plan.matrix_file == matrix.file
    assert plan.sysctl == {"vm.page-cluster": "0"}
    assert plan.timeout_s == 120
    doc = plan.measures()
    assert doc["repeat"] == 2 and doc["guest"][2] == 2048
    assert not {"trace", "output"} & set(doc["workload"])
    seq = matrix.plan(Cell(1, "readahead", "nvme", "seq"))
    assert seq.sysfs == {"kernel/mm/swap/vma_ra_enabled": "1"}
    assert seq.guest == matrix.guest


MERGED = """merged:
  linux-source-6.1:
    readahead: {version: "4.14", what: VMA readahead, off_on: [rotational]}
"""


def test_merged_series_are_read_per_tree(tmp_path: Path) -> None:
    m = load_matrix(make_tree(tmp_path, GOOD.replace("variants:\n",
                                                     MERGED + "variants:\n")))
    ra = m.merged["linux-source-6.1"]["readahead"]
    assert (ra.version, ra.what, ra.off_on) == ("4.14", "VMA readahead",
                                                ("rotational",))


@pytest.mark.parametrize("old, new, needle, keypath, expect", [
    ("linux-source-6.1:\n    readahead", "linux-source-9.9:\n    readahead",
     "linux-source-9.9:", "merged.linux-source-9.9",
     "tree 'linux-source-9.9' is not in `trees`"),
    ("    readahead: {", "    redahead: {", "redahead", "merged."
     "linux-source-6.1.redahead", "no series 'redahead'"),
    ('"4.14"', '"4.14-rc1"', "4.14-rc1",
     "merged.linux-source-6.1.readahead.version",
     'a mainline version such as "4.14"'),
    ("off_on: [rotational]", "off_on: [spinning]", "spinning",
     "merged.linux-source-6.1.readahead.off_on",
     "'spinning' is not a backend kind"),
])
def test_bad_merged_entries_are_named(tmp_path: Path, old: str, new: str,
                                      needle: str, keypath: str,
                                      expect: str) -> None:
    text = GOOD.replace("variants:\n", MERGED.replace(old, new, 1) +
                        "variants:\n")
    with pytest.raises(MatrixError) as info:
        load_matrix(make_tree(tmp_path, text))
    err = info.value
    assert (err.keypath, err.line) == (keypath, line_of(text, needle)), \
        str(err)
    assert expect in err.message


def test_a_zram_cell_needs_a_kernel_with_zram(tmp_path: Path) -> None:
    text = GOOD.replace("  dax-pmem: {kind: pmem, mode: nvdimm}\n",
                        "  dax-pmem: {kind: pmem, mode: nvdimm}\n"
                        "  zram: {kind: zram}\n")
    with pytest.raises(MatrixError) as info:
        load_matrix(make_tree(tmp_path, text))
    err = info.value
    assert err.keypath == "matrices.quick" and \
        "on zram backend 'zram', but none of its fragments (lab-base)" \
        in err.message
    (tmp_path / "kernels" / "lab-base.config").write_text(
        "CONFIG_SWAP=y\nCONFIG_ZRAM=y\n")
    m = load_matrix(tmp_path / "matrix.yaml")
    assert m.backends["zram"].params == {}


def test_a_workload_may_need_config_fragments(tmp_path: Path) -> None:
    """A workload's `fragments` are added to each variant it boots (once,
    after the variant's own): a kernel of its own, named in errors like
    a variant's fragments are."""
    text = GOOD.replace("  lab-base: kernels/lab-base.config\n",
                        "  lab-base: kernels/lab-base.config\n"
                        "  net: kernels/net.config\n").replace(
        "    timeout: 120", "    timeout: 120\n    fragments: [net]")
    path = make_tree(tmp_path, text)
    (tmp_path / "kernels" / "net.config").write_text("CONFIG_NET=y\n")
    matrix = load_matrix(path)
    assert matrix.workloads["thp"].fragments == ("net",)
    thp = matrix.plan(Cell(1, "base", "nvme", "thp"))
    assert thp.variant.fragments == ("lab-base", "net")
    assert thp.variant.series == matrix.variants["base"].series
    assert matrix.plan(Cell(1, "base", "nvme", "seq")).variant is \
        matrix.variants["base"]
    wrong = text.replace("fragments: [net]", "fragments: [nett]")
    path.write_text(wrong)
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    assert info.value.line == line_of(wrong, "fragments: [nett]")
    assert "fragment 'nett' is not declared under 'fragments'" in \
        info.value.message
