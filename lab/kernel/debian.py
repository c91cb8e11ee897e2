"""Debian packages: what is installed, its version, installing it.

The lab installs what it needs with apt-get when it runs as root and
prints the exact command otherwise.
"""
from __future__ import annotations

import os
import subprocess

from lab.errors import LabError


def installed_version(package: str) -> str | None:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}\t${Version}", package],
        capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    status, _, version = proc.stdout.partition("\t")
    return version if status.endswith(" installed") else None


def ensure_installed(packages: list[str]) -> None:
    missing = [p for p in packages if installed_version(p) is None]
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends",
               *missing]
    if os.geteuid() != 0:
        raise LabError("missing Debian packages: " + " ".join(missing) +
                       "\n  install them as root with: " + " ".join(command))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        # A stale package list is the usual cause; refresh once and retry.
        subprocess.run(["apt-get", "update", "-q"], env=env,
                       capture_output=True)
        proc = subprocess.run(command, env=env, capture_output=True,
                              text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise LabError(f"could not install {' '.join(missing)} with "
                       f"'{' '.join(command)}':\n{tail}")
