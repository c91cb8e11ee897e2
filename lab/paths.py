"""Where the checkout's own files are: the matrix, workloads, reports."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
