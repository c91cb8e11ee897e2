"""Progress lines: object counts against the last comparable build."""
from __future__ import annotations

import io
import json
import time
from pathlib import Path

from lab import progress
from lab.kernel.build import read_counts
from lab.progress import Progress


def test_counted_with_and_without_a_comparable_build(monkeypatch) -> None:
    out = io.StringIO()
    p = Progress("base", out)
    p.set("compile")
    assert p.counted() == ""
    monkeypatch.setattr(p, "step_start", p.step_start - 100)
    p.count(250, 1000)
    text = p.counted()
    # 100 s for 250 objects: 300 s for the other 750.
    assert text.startswith("250/1000 objects, ETA 5m0") or \
        text.startswith("250/1000 objects, ETA 4m59s"), text
    p.count(1200, 1000)
    assert p.counted() == "1200 objects"
    p.count(30, None)
    assert p.counted() == "30 objects"
    p.set("link")
    assert p.counted() == ""            # a new step starts uncounted
    p.finish("built")
    assert "base: compile" in out.getvalue()


def test_off_a_terminal_long_steps_still_report(monkeypatch) -> None:
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.05)
    out = io.StringIO()
    p = Progress("base", out)
    p.set("compile")
    p.count(10, 100)
    time.sleep(0.3)
    p.finish("built")
    assert "base: compile (0m00s), 10/100 objects, ETA" in out.getvalue()


def test_counts_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "compiled-objects.json"
    assert read_counts(path) == {"variant": {}, "objdir": {}}
    path.write_text(json.dumps({"variant": {"base": 1043},
                                "objdir": {".swaplab-obj-lab-base": 1043}}))
    assert read_counts(path)["variant"]["base"] == 1043
    path.write_text("{not json")
    assert read_counts(path) == {"variant": {}, "objdir": {}}
