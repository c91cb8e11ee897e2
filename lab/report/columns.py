"""A slide's evidence in columns of fixed height.

Slides are static (no script may measure them), so the deck decides what
goes on which slide from heights in px that the deck's CSS fixes: each
item (a heading, a note, a pair's caption with its table head, an
effect row) knows its height, and a column that goes on from the one
before repeats its heading and caption.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal, Sequence

from lab.report.effect import Effect, what

e = html.escape

# Heights measured in Chromium on the real quick run's deck (the CSS is
# lab.report.slides.CSS). BODY_PX: a slide's body under the title with no
# claim; each claim line takes CLAIM_LINE_PX (at most CLAIM_CHARS
# characters a line) and the claim's margin CLAIM_PX more.
BODY_PX, CLAIM_PX, CLAIM_LINE_PX, CLAIM_CHARS = 598, 12, 24, 100
H3_PX = 34                  # an h3: one 24px line and its margins
PAIR_PX = 57                # a pair's caption, the table head and margin
ROW_PX = (23, 41)           # an effect row: one line; two with a CI
NOTE_PX, NOTE_LINE_PX, NOTE_CHARS = 8, 20, 50    # a note: margin, lines


def num(effect: Effect) -> str:
    """An effect's %change and CI, tagged with what it is."""
    c = effect.change
    attrs = (f"data-workload='{e(effect.workload)}' "
             f"data-backend='{e(effect.backend)}' "
             f"data-metric='{e(effect.metric)}' "
             f"data-with='{e(effect.with_)}' "
             f"data-without='{e(effect.without)}' "
             f"data-pct='{c.pct!r}' data-verdict='{c.verdict}' "
             f"data-q='{effect.q!r}'")
    if c.pct is None:
        return f"<span class='num' {attrs}>n/a</span>"
    ci = f" [{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None else ""
    cls = "num sig" if c.significant else "num"
    return (f"<span class='{cls}' {attrs}>{c.pct:+.1f} %{ci} "
            f"{e(c.verdict)}</span>")


@dataclass(frozen=True)
class Item:
    """One thing a slide's column stacks."""
    kind: Literal["h3", "note", "pair", "row"]  # pair: caption, table head
    text: str = ""              # h3, note, pair: the words
    effect: Effect | None = None

    @property
    def px(self) -> int:
        if self.kind == "h3":
            return H3_PX
        if self.kind == "note":
            return NOTE_PX + NOTE_LINE_PX * -(-len(self.text) // NOTE_CHARS)
        if self.kind == "pair":
            return PAIR_PX
        # A CI makes the % change cell wrap.
        return ROW_PX[self.effect is not None and
                      self.effect.change.low is not None]


def effect_items(effects: Sequence[Effect]) -> list[Item]:
    """Effects as rows under a caption per pair of variants."""
    out: list[Item] = []
    for pair in dict.fromkeys((x.with_, x.without) for x in effects):
        out.append(Item("pair", "{} vs {}".format(*pair)))
        out += [Item("row", effect=x) for x in effects
                if (x.with_, x.without) == pair]
    return out


def _lead(items: Sequence[Item]) -> int:
    """The height a heading or caption needs with it: what follows, up to
    the first row or note (never alone at the foot of a column)."""
    px = 0
    for it in items:
        px += it.px
        if it.kind in ("row", "note"):
            break
    return px


def pages(items: Sequence[Item], room: int) -> list[list[Item]]:
    """`items` in columns of `room` px; a column that goes on from the
    previous one repeats its heading (continued) and the pair's caption."""
    out: list[list[Item]] = [[]]
    left = room
    h3: Item | None = None
    pair: Item | None = None
    for i, it in enumerate(items):
        need = it.px + (_lead(items[i + 1:]) if it.kind in ("h3", "pair")
                        else 0)
        if need > left and out[-1]:
            carry = [Item("h3", f"{h3.text} (continued)")] \
                if h3 and it.kind != "h3" else []
            carry += [pair] if pair and it.kind == "row" else []
            out.append(carry)
            left = room - sum(c.px for c in carry)
        out[-1].append(it)
        left -= it.px
        if it.kind == "h3":
            h3, pair = it, None
        elif it.kind == "pair":
            pair = it
    return out


def render(items: Sequence[Item]) -> str:
    out, table = [], False
    for it in items:
        if table and it.kind != "row":
            out.append("</table>")
            table = False
        if it.kind == "h3":
            out.append(f"<h3>{e(it.text)}</h3>")
        elif it.kind == "note":
            out.append(f"<p class='note'>{e(it.text)}</p>")
        elif it.kind == "pair":
            out.append(f"<p class='pair'>{e(it.text)}, % change [95 % CI]"
                       "</p><table class='effects'><tr><th>measure</th>"
                       "<th>device</th><th>n</th><th>% change</th></tr>")
            table = True
        elif it.effect is not None:
            x = it.effect
            out.append(f"<tr><td>{e(what(x))}</td><td>{e(x.backend)}</td>"
                       f"<td>{x.n[1]}/{x.n[0]}</td><td>{num(x)}</td></tr>")
    return "".join(out) + ("</table>" if table else "")


def room(claim: str) -> int:
    """The px a slide's column has under its title and `claim`."""
    lines = -(-len(claim) // CLAIM_CHARS)
    return BODY_PX - (CLAIM_PX + CLAIM_LINE_PX * lines if claim else 0)
