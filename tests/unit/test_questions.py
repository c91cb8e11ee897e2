"""matrix.yaml's questions: parsing, the pair rule, A/A twins."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.errors import MatrixError
from lab.spec.matrix import describe, load_matrix
from tests.unit.test_matrix import GOOD, line_of, make_tree

# ra-clean differs from base only by the readahead series; readahead
# also sets a sysfs knob and lacks base's sysctl.
VARIANTS = """\
  ra-clean:
    tree: linux-source-6.1
    series: [baseline, readahead]
    fragments: [lab-base]
    sysctl: {vm.page-cluster: 3}
  base-again:
    same_as: base
  upstream-6.12:
"""
QUESTIONS = """\
questions:
  ra:
    series: readahead
    workload: seq
    backends: [nvme, rotational]
    metric: swapbench.main.latency.avg_us
    better: lower
    delta: 5%
  aa:
    candidate: base-again
    reference: base
    workload: seq
    backends: [nvme]
    metric: swapbench.main.bytes_per_s
    better: higher
    delta: 5%
matrices:
"""
SUB = """\
    workloads: [seq]
    repeats: 1
"""
ASKED = """\
    workloads: [seq]
    repeats: 3
    questions: [ra, aa]
    budget: 45m
"""


def text_with(questions: str = QUESTIONS, sub: str = ASKED) -> str:
    text = GOOD.replace("  upstream-6.12:\n", VARIANTS, 1)
    text = text.replace("matrices:\n", questions, 1)
    text = text.replace("    variants: [base, readahead]\n",
                        "    variants: [base, readahead, ra-clean, "
                        "base-again]\n", 1)
    return text.replace(SUB, sub, 1)


def load(tmp: Path, text: str):
    return load_matrix(make_tree(tmp, text))


def test_series_question_finds_the_one_clean_pair(tmp_path: Path) -> None:
    m = load(tmp_path, text_with())
    q = m.questions["ra"]
    assert (q.candidate, q.reference, q.series) == \
        ("ra-clean", "base", ("readahead",))
    assert q.backends == ("nvme", "rotational") and q.delta_pct == 5.0
    assert not q.is_aa and m.questions["aa"].is_aa
    sub = m.sub("quick")
    assert sub.questions == ("ra", "aa")
    assert (sub.repeats, sub.max_repeats, sub.budget_s) == (3, 10, 2700)
    assert sub.look_every == 1


def test_look_every_spaces_the_looks(tmp_path: Path) -> None:
    m = load(tmp_path, text_with(sub=ASKED + "    look_every: 3\n"))
    assert m.sub("quick").look_every == 3


def test_rows_run_beside_the_questions_cells(tmp_path: Path) -> None:
    m = load(tmp_path, text_with(sub=ASKED + "    rows: [readahead]\n"))
    assert m.sub("quick").rows == ("readahead",)
    cells = {(c.variant, c.backend) for c in m.cells("quick")}
    # The row takes the questions' backends (ra: nvme and rotational),
    # and every cell's workload is a question's.
    assert {("readahead", "nvme"), ("readahead", "rotational")} <= cells
    plain = {(c.variant, c.backend) for c in
             load(tmp_path / "plain", text_with()).cells("quick")}
    assert cells - plain == {("readahead", "nvme"),
                             ("readahead", "rotational")}


def test_a_listed_variant_that_never_runs_is_named(tmp_path: Path) -> None:
    """readahead is neither question's arm: it drops out of the cells,
    and `lab validate` says so; as a row it runs and the note goes."""
    asked = describe(load(tmp_path, text_with()))
    assert "quick: 15 cells; listed but not run: readahead" in asked
    rowed = describe(load(tmp_path / "row", text_with(
        sub=ASKED + "    rows: [readahead]\n")))
    assert "not run" not in rowed


@pytest.mark.parametrize("sub,needle", [
    (ASKED + "    rows: [nope]\n", "row 'nope' is not a variant of "
     "sub-matrix 'quick'"),
    (SUB + "    rows: [readahead]\n", "expected a 'questions' list too"),
])
def test_bad_rows(tmp_path: Path, sub: str, needle: str) -> None:
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text_with(sub=sub))
    assert needle in str(info.value)
    assert "matrix.yaml:" in str(info.value)


def test_twin_is_its_targets_kernel(tmp_path: Path) -> None:
    m = load(tmp_path, text_with())
    twin, base = m.variants["base-again"], m.variants["base"]
    assert twin.kernel == "base" and base.kernel == "base"
    assert (twin.series, twin.sysctl, twin.fragments) == \
        (base.series, base.sysctl, base.fragments)
    assert "A/A" in twin.description


def test_pair_differing_by_more_than_the_series_is_refused(
        tmp_path: Path) -> None:
    text = text_with(QUESTIONS.replace(
        "    series: readahead\n",
        "    series: readahead\n    candidate: readahead\n"
        "    reference: base\n", 1))
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text)
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'matrix.yaml'}:"
                          f"{line_of(text, '  ra:') + 1}")
    assert "differs from 'base' by more than series readahead" in msg
    assert "sysfs" in msg and "sysctl" in msg


def test_pair_without_series_must_be_a_twin(tmp_path: Path) -> None:
    text = text_with(QUESTIONS.replace("candidate: base-again",
                                       "candidate: ra-clean", 1))
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text)
    assert f":{line_of(text, 'candidate: ra-clean')}:" in str(info.value)
    assert "are not the same kernel" in str(info.value)


@pytest.mark.parametrize("old,new,needle", [
    ("delta: 5%", "delta: 5", "such as 5%"),
    ("better: lower", "better: faster", "higher or lower"),
    ("metric: swapbench.main.latency.avg_us", "metric: latency",
     "dotted metric name"),
    ("workload: seq\n    backends: [nvme, rotational]",
     "workload: nope\n    backends: [nvme, rotational]",
     "unknown workload 'nope'"),
    ("backends: [nvme, rotational]", "backends: [nvme, floppy]",
     "unknown backend 'floppy'"),
    ("series: readahead", "series: baseline", "no two variants differ"),
])
def test_bad_question_fields(tmp_path: Path, old: str, new: str,
                             needle: str) -> None:
    assert old in QUESTIONS
    text = text_with(QUESTIONS.replace(old, new, 1))
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text)
    assert needle in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "matrix.yaml") + ":")


@pytest.mark.parametrize("old,new,needle", [
    ("questions: [ra, aa]", "questions: [ra, nope]",
     "unknown question 'nope'"),
    ("budget: 45m", "budget: soon", "a duration such as 45m"),
    ("questions: [ra, aa]\n",
     "questions: [ra, aa]\n    max_repeats: 2\n", "at least 3"),
    ("questions: [ra, aa]\n",
     "questions: [ra, aa]\n    look_every: 8\n",
     "from 1 to max_repeats - repeats"),
])
def test_bad_sub_matrix_question_keys(tmp_path: Path, old: str, new: str,
                                      needle: str) -> None:
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text_with(sub=ASKED.replace(old, new, 1)))
    assert needle in str(info.value)


def test_sub_matrix_must_hold_its_questions_cells(tmp_path: Path) -> None:
    text = text_with().replace("    variants: [base, readahead, ra-clean, "
                               "base-again]\n",
                               "    variants: [base, ra-clean]\n", 1)
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text)
    assert "asks question 'aa'" in str(info.value)
    assert "lacks variant base-again" in str(info.value)


def test_repository_questions_are_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    m = load_matrix(root / "matrix.yaml")
    for name, sub in m.matrices.items():
        for q in sub.questions:
            assert q in m.questions, (name, q)


CLAIM = """\
    delta: 5%
    claim:
      source: "001: average swap-in latency, sequential"
      change: -70%
      note: the seed ran 4 processes
      unmeasurable: 32 GiB of RAM; the guest has 256 MiB
      figures:
        swapbench.main.latency.p90_us: 158 -> 8
        swapbench.main.latency.p50_us: 0 -> 1.5
  aa:
"""


def test_claim_is_read(tmp_path: Path) -> None:
    text = text_with(QUESTIONS.replace("    delta: 5%\n  aa:\n", CLAIM, 1))
    m = load(tmp_path, text)
    c = m.questions["ra"].claim
    assert c is not None and m.questions["aa"].claim is None
    assert (c.source, c.change_pct, c.note) == (
        "001: average swap-in latency, sequential", -70.0,
        "the seed ran 4 processes")
    assert c.unmeasurable == "32 GiB of RAM; the guest has 256 MiB"
    p90, p50 = c.figures
    assert (p90.metric, p90.reference, p90.candidate) == (
        "swapbench.main.latency.p90_us", 158.0, 8.0)
    assert p90.change_pct == pytest.approx(-94.937, abs=1e-3)
    # A reference of 0 (the seed's "0us" minimum) has no relative change.
    assert p50.change_pct is None
    assert p90.where == (f"{tmp_path / 'matrix.yaml'}:"
                         f"{line_of(text, '158 -> 8')}")


def test_a_question_the_source_left_open(tmp_path: Path) -> None:
    text = text_with(QUESTIONS.replace(
        "    delta: 5%\n  aa:\n",
        CLAIM.replace("change: -70%", "change: open"), 1))
    c = load(tmp_path, text).questions["ra"].claim
    assert c is not None and c.change_pct is None


@pytest.mark.parametrize("old,new,needle", [
    ("change: -70%", "change: -120%", "a percentage above -100"),
    ("change: -70%", "change: fast", "a percentage above -100"),
    ("change: -70%", "change: opened", "or 'open' for a question"),
    ("      note: the seed ran 4 processes\n", "      when: 2017\n",
     "when"),
    ("      source: \"001: average swap-in latency, sequential\"\n", "",
     "source"),
    ("      unmeasurable: 32 GiB of RAM; the guest has 256 MiB\n",
     "      unmeasurable: [32]\n", "expected a sentence"),
    ("158 -> 8", "158 to 8", "reference then candidate, such as 158 -> 8"),
    ("158 -> 8", "-158 -> 8", "reference then candidate"),
    ("swapbench.main.latency.p90_us:", "p90:", "a dotted metric name"),
    ("      figures:\n", "      figures: [1, 2]\n      unused:\n",
     "a mapping of metric names"),
])
def test_bad_claim(tmp_path: Path, old: str, new: str, needle: str) -> None:
    text = text_with(QUESTIONS.replace("    delta: 5%\n  aa:\n",
                                       CLAIM.replace(old, new, 1), 1))
    with pytest.raises(MatrixError) as info:
        load(tmp_path, text)
    assert needle in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "matrix.yaml") + ":")
