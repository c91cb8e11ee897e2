"""Host CPU spent outside the lab while a guest runs."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from lab.guest import hostload

# This machine's /proc/stat, first lines (2 CPUs, no steal).
STAT = """\
cpu  1866102 317470 885568 2025282 32031 0 45109 0 0 0
cpu0 929045 146433 424944 1060248 3529 0 21130 0 0 0
cpu1 937056 171036 460623 965034 28501 0 23979 0 0 0
"""
# A QEMU's /proc/PID/stat as the lab starts it (its -name holds spaces
# and a parenthesis would not end the name either).
QEMU = ("11733 (qemu-system-x86) S 11197 11733 11733 0 -1 4194560 86041 "
        "0 0 0 2031 108 7 3 20 0 5 0 2282719 1728868352 88429 "
        "18446744073709551615 1 1 0 0 0 0 0 4096 17987 0 0 0 17 1 0 0 0 0 0")
ODD = ("42 (a) b (c)) R 1 42 42 0 -1 4194560 0 0 0 0 100 50 25 25 20 0 1 "
       "0 1 1 1 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0")


def test_busy_is_everything_but_idle_and_iowait() -> None:
    ticks = 1866102 + 317470 + 885568 + 0 + 45109 + 0
    assert hostload.busy_seconds(STAT) == pytest.approx(
        ticks * hostload.TICK_S)
    with pytest.raises(ValueError):
        hostload.busy_seconds("intr 1 2 3\n")


def test_pid_stat_fields_survive_odd_names() -> None:
    pid, ppid, cpu = hostload.parse_pid_stat(QEMU)
    assert (pid, ppid) == (11733, 11197)
    assert cpu == pytest.approx((2031 + 108 + 7 + 3) * hostload.TICK_S)
    assert hostload.parse_pid_stat(ODD)[:2] == (42, 1)
    assert hostload.parse_pid_stat(ODD)[2] == pytest.approx(
        200 * hostload.TICK_S)


def test_descendants_are_the_whole_subtree() -> None:
    table = {10: (1, 5.0), 11: (10, 1.0), 12: (11, 2.0), 13: (1, 7.0),
             14: (10, 0.5)}
    assert hostload.descendants_cpu(table, 10) == pytest.approx(3.5)
    assert hostload.descendants_cpu(table, 13) == 0.0


def test_window_share_of_the_hosts_capacity() -> None:
    w = hostload.window(hostload.Sample(0.0, 100.0, 10.0),
                        hostload.Sample(10.0, 112.0, 18.0), cpus=2)
    assert (w.busy_cpu_s, w.own_cpu_s) == (12.0, 8.0)
    assert w.foreign_cpu_s == 4.0 and w.foreign_share == 0.2
    assert w.as_dict()["foreign_share"] == 0.2
    # own a tick above busy (rounding) is no negative foreign time
    w = hostload.window(hostload.Sample(0.0, 0.0, 0.0),
                        hostload.Sample(1.0, 1.0, 1.01), cpus=2)
    assert w.foreign_cpu_s == 0.0


BURN = "import time\nt = time.process_time()\n" \
       "while time.process_time() - t < 0.6:\n    pass\n"


def test_own_children_are_not_foreign_and_an_orphan_is() -> None:
    """A child burning 0.6 s counts as the lab's own; the same burn in a
    process orphaned by a double fork (not the lab's descendant, as a
    compile started elsewhere) counts as foreign."""
    start = hostload.sample()
    subprocess.run([sys.executable, "-c", BURN], check=True)
    own = hostload.window(start, hostload.sample())
    assert own.own_cpu_s >= 0.5, own
    start = hostload.sample()
    pid = os.fork()
    if pid == 0:                          # the child forks the orphan
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", BURN])
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(1.5)                       # the orphan burns and exits
    foreign = hostload.window(start, hostload.sample())
    assert foreign.foreign_cpu_s >= 0.5, foreign


def test_the_root_is_the_sessions_controller_only_if_an_ancestor() -> None:
    """xdist workers (12, 13) of a controller (10) count each other's
    guests as the lab's own; a root that is not an ancestor (a pid from
    another machine's controller, say) falls back to this process."""
    table = {1: (0, 0.0), 10: (1, 2.0), 12: (10, 1.0), 13: (10, 1.0),
             20: (13, 9.0), 30: (1, 5.0)}
    assert hostload.lab_root(table, 12, "10") == 10
    assert hostload.descendants_cpu(table, 10) == pytest.approx(11.0)
    assert hostload.lab_root(table, 12, "30") == 12
    assert hostload.lab_root(table, 12, None) == 12
    assert hostload.lab_root(table, 12, "x") == 12
    assert hostload.lab_root(table, 99, "10") == 99       # not in /proc


def test_a_sibling_under_the_root_is_own(monkeypatch) -> None:
    """With the root set to this test's parent, a burn in a child of this
    process is still the lab's own (the parent's tree holds it)."""
    monkeypatch.setenv(hostload.ROOT_ENV, str(os.getppid()))
    start = hostload.sample()
    subprocess.run([sys.executable, "-c", BURN], check=True)
    w = hostload.window(start, hostload.sample())
    assert w.own_cpu_s >= 0.5, w
