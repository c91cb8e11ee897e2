"""One slide of a deck: what the answer pages and the deck writer share
(a leaf, so that building slides does not pull in the deck writer)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Slide:
    key: str                # stable id: tests and anchors use it
    title: str
    body: str               # HTML
    claim: str = ""         # the slide's one idea, in a sentence
