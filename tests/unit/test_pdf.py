"""The deck's PDF: Chromium's print dates fixed, nothing else touched."""
from __future__ import annotations

from lab.report import pdf


def test_print_dates_are_fixed_at_the_same_length() -> None:
    info = (b"<</Producer (Skia/PDF m156)\n/CreationDate (D:20261206222733+"
            b"00'00')\n/ModDate (D:20261206222756+00'00')>>\nstream D:2026")
    out = pdf.undated(info)
    assert len(out) == len(info)
    assert out.count(b"D:19700101000000+00'00'") == 2
    assert out.endswith(b"stream D:2026")    # only the info dates
    assert pdf.undated(out) == out
