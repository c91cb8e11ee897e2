"""The run's progress lines: cells done, budget left and when the round
ends, paced by the cells really measured (reused ones take no time)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from lab.session import plugin
from lab.session.plugin import StoreWriter


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def time(self) -> float:
        return self.t


def test_progress_counts_reused_cells_but_paces_by_measured_ones(
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    clock = Clock(1000.0)
    monkeypatch.setattr(plugin.time, "time", clock.time)
    writer = StoreWriter(SimpleNamespace(), planned=5, deadline=1000.0 + 1800)
    writer.pytest_sessionstart(SimpleNamespace())
    writer.pytest_runtest_logreport(SimpleNamespace(
        when="setup", skipped=True, user_properties=[]))
    first = capsys.readouterr().out
    assert "1/5 cells of this round, budget left 30.0 min\n" in first
    assert "round ends" not in first        # nothing measured yet
    for _ in range(2):                      # two cells of 2 min each
        clock.t += 120
        writer.pytest_runtest_logreport(SimpleNamespace(
            when="call", skipped=False, user_properties=[]))
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ("swaplab: 3/5 cells of this round, budget left "
                       "26.0 min, round ends in about 4 min")
