"""Fragment merging and the 'did every option stick' check."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.errors import LabError
from lab.kernel import kconfig

KCONFIG = """\
config ZONE_DEVICE
\tbool "Device memory (pmem, HMM, etc...) hotplug support"
\tdepends on MEMORY_HOTPLUG
\tdepends on MEMORY_HOTREMOVE
\tdepends on SPARSEMEM_VMEMMAP && !FLATMEM

config SWAP
\tbool "Support for paging of anonymous memory (swap)"
\tdepends on MMU && BLOCK
"""


def test_parse_fragment_and_config() -> None:
    text = "# a comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_S=\"x y\"\n"
    assert kconfig.parse(text, "f") == {"CONFIG_A": "y", "CONFIG_B": "n",
                                        "CONFIG_S": '"x y"'}


def test_parse_rejects_garbage_with_line() -> None:
    with pytest.raises(LabError, match=r"frag.config:2: expected"):
        kconfig.parse("CONFIG_A=y\nSWAP=y\n", "frag.config")


def test_merge_later_fragment_wins() -> None:
    merged, wanted = kconfig.merge("CONFIG_A=y\n", [
        ("one", "CONFIG_B=y\n"), ("two", "# CONFIG_B is not set\n")])
    assert wanted == {"CONFIG_B": "n"}
    assert merged.index("CONFIG_B=y") < merged.index("CONFIG_B is not set")


def test_check_reports_unmet_dependencies(tmp_path: Path) -> None:
    (tmp_path / "mm").mkdir()
    (tmp_path / "mm" / "Kconfig").write_text(KCONFIG)
    wanted = {"CONFIG_ZONE_DEVICE": "y", "CONFIG_SWAP": "y",
              "CONFIG_NOPE": "y"}
    final = {"CONFIG_SWAP": "y", "CONFIG_MEMORY_HOTPLUG": "y",
             "CONFIG_SPARSEMEM_VMEMMAP": "y", "CONFIG_FLATMEM": "y"}
    dropped = kconfig.check(tmp_path, wanted, final)
    assert [d.option for d in dropped] == ["CONFIG_ZONE_DEVICE",
                                           "CONFIG_NOPE"]
    zone = dropped[0]
    assert zone.depends == ("MEMORY_HOTPLUG", "MEMORY_HOTREMOVE",
                            "SPARSEMEM_VMEMMAP && !FLATMEM")
    assert zone.unmet == ("MEMORY_HOTREMOVE=n", "FLATMEM=y")
    assert "did not stick (final: not set)" in str(zone)
    assert "no such option" in str(dropped[1])
