"""`lab run` reports the run its own matrix session used."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab import cli
from lab.errors import LabError
from tests.unit.test_matrix import GOOD, line_of, make_tree

REPO = Path(__file__).resolve().parents[2]


class FakeSession:
    """Stands for the pytest session: names its run, exits 1 (a cell
    failed, still reportable)."""

    def __init__(self, command, run_id):
        self.command = command
        self.id_file = Path(command[command.index("--run-id-file") + 1])
        self.run_id = run_id

    def wait(self):
        if self.run_id:
            self.id_file.write_text(self.run_id + "\n")
        return 1


def run_with(monkeypatch, run_id, build_status=0):
    seen = {}
    monkeypatch.setattr(cli, "_build", lambda args: build_status)

    real_popen = subprocess.Popen

    def popen(command, **kw):
        if command[0] == "make":        # workloads/, brought up to date
            return real_popen(command, **kw)
        seen["session"] = FakeSession(command, run_id)
        return seen["session"]
    monkeypatch.setattr(cli.subprocess, "Popen", popen)
    monkeypatch.setattr(cli, "_report", lambda a: seen.update(
        report=a.run, report_args=vars(a)))
    args = argparse.Namespace(matrix="debug", file=Path("matrix.yaml"),
                              pytest_args=[], cache=None, budget=None)
    return cli._run(args), seen


def test_run_reports_its_own_run_not_the_latest(monkeypatch):
    # Another session on the same cache may have started a later run.
    status, seen = run_with(monkeypatch, "20261203-102031-debug")
    assert status == 1 and seen["report"] == "20261203-102031-debug"
    # The report is `lab report --run RUN`'s, every option at its default
    # (a hand-made namespace once lacked a newer option and crashed).
    assert seen["report_args"] == vars(cli.parse(
        ["report", "--run", "20261203-102031-debug"]))
    assert not seen["session"].id_file.parent.exists()


def test_a_failed_build_does_not_stop_the_other_cells(monkeypatch, capsys):
    # A variant failed to build: its cells fail in the session, the
    # others run, and the run is reported.
    status, seen = run_with(monkeypatch, "20261203-102031-debug",
                            build_status=1)
    assert "session" in seen and seen["report"] == "20261203-102031-debug"
    assert status == 1
    assert "variants that failed to build will fail" in \
        capsys.readouterr().err


def test_run_without_a_named_run_is_an_error(monkeypatch):
    with pytest.raises(LabError, match="did not name its run"):
        run_with(monkeypatch, None)


def workloads_make(monkeypatch, tmp_path: Path, rule: str) -> Path:
    source = tmp_path / "workloads"
    source.mkdir()
    (source / "Makefile").write_text(f"all:\n\t{rule}\n")
    monkeypatch.setattr(cli.cellspec, "WORKLOADS_BUILD", source / "build")
    return source


def test_run_brings_the_workloads_up_to_date(monkeypatch, tmp_path):
    # A fresh clone has no workloads/build: lab run makes it first.
    source = workloads_make(monkeypatch, tmp_path, "touch made")
    status, seen = run_with(monkeypatch, "20261203-102031-debug")
    assert (source / "made").is_file() and "session" in seen


def test_run_stops_before_the_cells_when_workloads_fail(monkeypatch,
                                                        tmp_path):
    source = workloads_make(monkeypatch, tmp_path, "false")
    with pytest.raises(LabError, match=f"make -C {source}"):
        run_with(monkeypatch, "20261203-102031-debug")


@pytest.mark.parametrize("argv", [
    ["boot", "base", "--backend", "nvme", "--", "cat", "/proc/swaps"],
    ["boot", "--backend", "nvme", "base", "--", "cat", "/proc/swaps"],
    ["boot", "--backend", "nvme", "base", "cat", "/proc/swaps"],
])
def test_boot_command_line(argv):
    """The README's `lab boot base --backend nvme -- cat /proc/swaps`:
    the subcommand stays "boot", the options after the variant count."""
    args = cli.parse(argv)
    assert (args.command, args.variant, args.backend) == \
        ("boot", "base", "nvme")
    assert args.guest_command == ["cat", "/proc/swaps"]


def test_other_commands_parse_as_before():
    args = cli.parse(["run", "--matrix", "debug", "--pytest=-k",
                      "--pytest=nvme"])
    assert (args.command, args.matrix, args.pytest_args) == \
        ("run", "debug", ["-k", "nvme"])


def test_boot_guest_command_keeps_its_options():
    args = cli.parse(["boot", "base", "--backend", "nvme", "--timeout",
                      "60", "--", "ls", "-l", "--", "/"])
    assert args.timeout == 60
    assert args.guest_command == ["ls", "-l", "--", "/"]


def test_double_dash_elsewhere_is_argparse_s():
    args = cli.parse(["compare", "--", "base", "readahead"])
    assert (args.command, args.base, args.others) == \
        ("compare", "base", ["readahead"])


def test_validate_bad_then_good_file_is_one_error_line(tmp_path):
    """`lab validate BAD GOOD` as a user runs it: exit 1 and one
    `lab: FILE:LINE: key: ...` line on stderr, never a traceback."""
    text = GOOD.replace("  memory: 512M", "  memory: lots", 1)
    bad = make_tree(tmp_path / "bad", text)
    good = make_tree(tmp_path / "good")
    proc = subprocess.run(
        [sys.executable, "-m", "lab", "validate", str(bad), str(good)],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.fullmatch(
        re.escape(f"lab: {bad}:{line_of(text, 'memory: lots')}: "
                  "guest.memory: ") + ".*expected a size.*", lines[0]), lines
