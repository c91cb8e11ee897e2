"""reports/index.html: every reference report in one line, and what made
each report (report.json beside its index).

A line gives the run's date and sub-matrix, its answer (how many of its
questions were decided, and which way) or "tables only" for a run
without questions, and the swaplab commit that generated the report.
"""
from __future__ import annotations

import hashlib
import html
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from lab.cache import atomic_write
from lab.paths import REPO
from lab.results.store import Run

RECORD = "report.json"
DECIDED_RE = re.compile(r"^(\d+) of (\d+) questions decided\.", re.M)
ROW_RE = re.compile(r"^\| ([^|]+) \| ([^|]+) \| [^|]+ \| [^|]+ \| "
                    r"\*\*(better|worse)\*\* by ([^|]+) \|", re.M)
EQUIV_RE = re.compile(r"^\| ([^|]+) \| ([^|]+) \| [^|]+ \| [^|]+ \| "
                      r"equivalent", re.M)


def generator_commit() -> str:
    """The checkout's commit, "-dirty" when its code has local changes
    (reports/ aside: regenerating reports changes them), or "unknown"
    outside a git checkout."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                            "--untracked-files=no", "--", ".",
                            ":(exclude)reports"],
                           capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + ("-dirty" if dirty else "")


def inputs_digest(run: Run) -> str:
    """sha256 over the run's manifest, matrix and cell files, in name
    order: the raw results a report was made from."""
    h = hashlib.sha256()
    for path in sorted(p for p in run.root.iterdir()
                       if p.is_file() and p.suffix in (".json", ".yaml")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def write_record(run: Run, out: Path,
                 replicated_with: Sequence[str] = ()) -> Path:
    doc: dict[str, object] = {
        "schema": "swaplab-report/1", "run": run.id,
        "started": run.manifest.get("started"),
        "submatrix": (run.manifest.get("matrix") or {}).get("submatrix"),
        "generator_commit": generator_commit(),
        "inputs_sha256": inputs_digest(run)}
    if replicated_with:
        doc["replicated_with"] = list(replicated_with)
    atomic_write(out / RECORD, json.dumps(doc, indent=1) + "\n")
    return out / RECORD


@dataclass(frozen=True)
class Entry:
    name: str               # the report's directory
    date: str
    submatrix: str
    answer: str
    commit: str
    # raw results committed beside it: today's generator remakes it
    regenerates: bool = True


def answer_line(answers_md: str) -> str:
    """"2 of 7 decided: ra-seq nvme better by 18.6 %; ..." from a report's
    answers.md."""
    m = DECIDED_RE.search(answers_md)
    if not m:
        return "answers unreadable"
    found = [f"{q} {be} {v} by {by.strip()}"
             for q, be, v, by in ROW_RE.findall(answers_md)]
    found += [f"{q} {be} equivalent" for q, be in
              EQUIV_RE.findall(answers_md)]
    flagged = "flagged by its A/A" if "This run is flagged" in answers_md \
        else ""
    head = f"{m.group(1)} of {m.group(2)} questions decided"
    return "; ".join(x for x in (head + (": " + "; ".join(found)
                                         if found else ""), flagged) if x)


def _date_of_id(run_id: str) -> str:
    """A run id's start time (YYYYmmdd-HHMMSS-name) as ISO 8601."""
    m = re.match(r"(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)", run_id)
    return "{}-{}-{}T{}:{}:{}Z".format(*m.groups()) if m else "unknown"


def entry(report: Path) -> Entry:
    record: dict[str, Any] = {}
    if (report / RECORD).is_file():
        record = json.loads((report / RECORD).read_text())
    manifest: dict[str, Any] = {}
    if (report / "raw" / "manifest.json").is_file():
        manifest = json.loads((report / "raw" / "manifest.json").read_text())
    date = str(record.get("started") or manifest.get("started") or
               _date_of_id(report.name))
    sub = str(record.get("submatrix") or
              (manifest.get("matrix") or {}).get("submatrix") or
              report.name[16:])
    answers = report / "answers.md"
    answer = answer_line(answers.read_text()) if answers.is_file() else \
        "tables only (the run asked no questions)"
    commit = str(record.get("generator_commit") or "not recorded")
    return Entry(report.name, date, sub, answer, commit,
                 (report / "raw" / "manifest.json").is_file())


def entries(reports: Path) -> list[Entry]:
    return [entry(d) for d in sorted(reports.iterdir(), reverse=True)
            if d.is_dir() and (d / "index.html").is_file()]


def short(commit: str) -> str:
    """12 hex digits, and "-dirty" when the checkout had changes."""
    head, dirty, _ = commit.partition("-dirty")
    return head[:12] + ("-dirty" if dirty else "")


def catalogue_html(found: list[Entry]) -> str:
    e = html.escape

    def rows(entries: Sequence[Entry]) -> str:
        return "".join(
            f"<tr><td><a href='{e(x.name)}/index.html'>{e(x.name)}</a></td>"
            f"<td>{e(x.date)}</td><td>{e(x.submatrix)}</td>"
            f"<td>{e(x.answer)}</td><td><code>{e(short(x.commit))}</code>"
            "</td></tr>" for x in entries)
    head = ("<tr><th>report</th><th>run started</th><th>sub-matrix</th>"
            "<th>answer</th><th>generator</th></tr>")
    legacy = [x for x in found if not x.regenerates]
    old = "" if not legacy else (
        "<h2>Legacy reports</h2><p>Made by earlier generators before raw "
        "results were committed: they cannot be regenerated, predate the "
        "questions, false-discovery control and replication, and some "
        "print intervals or prose the current generator would not. Read "
        "them as lab notebooks, not as answers.</p><table>" + head
        + rows(legacy) + "</table>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<title>swaplab reference reports</title><style>body{font-family:"
            "system-ui,sans-serif;max-width:80em;margin:1em auto}td,th{"
            "text-align:left;vertical-align:top;padding:2px 8px;"
            "border-bottom:1px solid #ddd}</style></head><body>"
            "<h1>swaplab reference reports</h1><p>Newest first. Each "
            "report's own index opens with its answers and its testbed; "
            "report.json names the commit that generated it, and each is "
            "regenerated from the raw results committed beside it.</p>"
            f"<table>{head}"
            + rows([x for x in found if x.regenerates])
            + f"</table>{old}</body></html>\n")


def write_catalogue(reports: Path) -> Path:
    atomic_write(reports / "index.html", catalogue_html(entries(reports)))
    return reports / "index.html"
