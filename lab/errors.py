"""User-facing errors: each names where the problem is and what was expected.

The command line prints these as one line (or a few) and exits non-zero;
anything else escaping is a bug in the lab and keeps its traceback.
"""
from __future__ import annotations


class LabError(Exception):
    """An error caused by the user's input or environment, not by the lab."""


class MatrixError(LabError):
    """A problem in a matrix file, located by file, line and key path."""

    def __init__(self, file: str, line: int | None, keypath: str,
                 message: str) -> None:
        self.file = file
        self.line = line
        self.keypath = keypath
        self.message = message
        where = f"{file}:{line}" if line is not None else file
        key = f": {keypath}" if keypath else ""
        super().__init__(f"{where}{key}: {message}")
