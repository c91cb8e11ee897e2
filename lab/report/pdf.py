"""A page printed to PDF by headless Chromium (the deck: one 1280x720
page per slide), offline and with a throw-away profile."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from lab.errors import LabError

BROWSERS = ("chromium", "chromium-browser")
CHROMIUM_TIMEOUT_S = 120
# Chromium stamps the time of printing into the PDF's info dictionary:
# a fixed date of the same length (the cross-reference offsets stay
# valid) makes a deck regenerated from the same results the same file.
PDF_DATE = re.compile(rb"/(CreationDate|ModDate) \(D:\d{14}([+-Z][^)]*)\)")


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise LabError("no headless Chromium to print the deck: apt-get "
                   "install chromium (or skip the PDF)")


def chromium_argv(profile: Path) -> list[str]:
    """Headless, offline, and with a throw-away profile."""
    return [browser(), "--headless", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}"]


def print_pdf(page: Path, pdf: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="swaplab-chromium-") as tmp:
        argv = chromium_argv(Path(tmp)) + [
            "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
            page.resolve().as_uri()]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=CHROMIUM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise LabError(f"chromium did not print {page} within "
                           f"{CHROMIUM_TIMEOUT_S} s") from None
    if proc.returncode != 0 or not pdf.is_file():
        raise LabError(f"chromium could not print {page} (exit "
                       f"{proc.returncode}): {proc.stderr.strip()[-500:]}")
    pdf.write_bytes(undated(pdf.read_bytes()))
    return pdf


def undated(data: bytes) -> bytes:
    """The PDF with its creation and modification dates fixed."""
    return PDF_DATE.sub(lambda m: b"/" + m.group(1) + b" (D:19700101000000"
                        + m.group(2) + b")", data)
