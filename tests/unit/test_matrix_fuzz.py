"""The matrix validator under bad input (issue 9), property-based.

Whatever a matrix file holds, load_matrix/parse_matrix either return a
usable model or raise MatrixError naming the file, a line inside it and
(below the top level) a key path; never any other exception. Inputs:
random YAML documents, the repository's matrix.yaml and test_matrix's
GOOD with keys, values and types mutated and entries deleted or
duplicated, line-level edits of both (duplicate keys, bad indentation,
truncation), and random YAML-ish text (tags, anchors, merge keys).

Hypothesis runs derandomized and without an example database, so CI sees
the same examples every time; a few seconds in all.
"""
from __future__ import annotations

import copy
import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.errors import MatrixError
from lab.spec.matrix import describe, load_matrix, parse_matrix
from lab.spec.model import Matrix
from tests.unit.test_matrix import GOOD, make_tree

ROOT = Path(__file__).resolve().parents[2]
REPO_TEXT = (ROOT / "matrix.yaml").read_text()
BASES = {"good": GOOD, "repo": REPO_TEXT}
PARSED = {name: yaml.safe_load(text) for name, text in BASES.items()}

FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                database=None, suppress_health_check=[HealthCheck.too_slow])

# Messages about the file as a whole, which have no key path.
WHOLE_FILE = ("YAML syntax error", "YAML error", "the file is empty",
              "(the matrix)", "in the matrix", "complex key",
              "nested too deeply", "bad value")
# GOOD (every section, small) more often than the repository's file (the
# real thing, seven times longer to parse).
BASE = st.sampled_from(["good", "good", "good", "repo"])
# The checks' own YAML work goes through libyaml when it is there: the
# lab's pure-Python loader (line numbers, duplicate keys) is what is
# under test, not these.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# What YAML counts as a line break.
BREAKS = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _harvest(doc: Any, keys: set[str], values: set[Any]) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            keys.add(str(k))
            _harvest(v, keys, values)
    elif isinstance(doc, list):
        for v in doc:
            _harvest(v, keys, values)
    else:
        values.add(doc)


_KEYS: set[str] = set()
_VALUES: set[Any] = set()
for _doc in PARSED.values():
    _harvest(_doc, _KEYS, _VALUES)
KEYS = sorted(_KEYS)
VALUES = sorted(_VALUES, key=repr)
TOP_KEYS = sorted({k for d in PARSED.values() for k in d})

# Strings from a fixed alphabet (st.text would build a Unicode table
# under .hypothesis/ in the working tree): ASCII with YAML's own marks,
# some wider and some odd characters.
ALPHABET = string.printable + "é€𝄞\u2028\x85\ufeff\x00"
text = st.lists(st.sampled_from(ALPHABET), max_size=6).map("".join)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(VALUES),
    text, st.sampled_from(["512M", "0", "-1", "1.5G", "auto", "off", ">0",
                           ">= -3", "linux-source-9.9", "..", "a/../b"]))
keys = st.one_of(st.sampled_from(KEYS), text, st.integers(0, 3))
documents = st.recursive(
    scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.dictionaries(keys, kids, max_size=4)),
    max_leaves=8)


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Where each base's mutants are written: GOOD's fragments and series
    in a scratch tree, the repository's through symlinks."""
    good = make_tree(tmp_path_factory.mktemp("good"))
    repo = tmp_path_factory.mktemp("repo")
    for name in ("kernels", "patches"):
        (repo / name).symlink_to(ROOT / name)
    return {"good": good, "repo": repo / "matrix.yaml"}


def check_error(err: MatrixError, content: str, path: Path) -> None:
    assert err.file == str(path)
    lines = len(BREAKS.split(content))
    assert isinstance(err.line, int) and 1 <= err.line <= lines, \
        f"line {err.line} outside the file's {lines}: {err}"
    where = f"{path}:{err.line}: "
    assert str(err).startswith(where), str(err)
    if not err.keypath:
        assert any(s in err.message for s in WHOLE_FILE), \
            f"no key path: {err}"
        return
    assert str(err).startswith(f"{where}{err.keypath}: "), str(err)
    # The key path starts at a key the file has (or a required one).
    try:
        doc = yaml.load(content, Loader=LOADER)
    except Exception:       # noqa: BLE001 - only a cross-check
        return
    if isinstance(doc, dict):
        # a key may hold dots itself (linux-source-6.1)
        tops = {str(k) for k in doc} | {"<<", "matrices"}
        assert any(err.keypath == k or err.keypath.startswith((f"{k}.",
                                                               f"{k}["))
                   for k in tops), \
            f"key path {err.keypath!r} not in the file: {err}"


def outcome(content: str, path: Path, via_file: bool = False
            ) -> Matrix | MatrixError:
    """The validator's answer; any exception but MatrixError escapes."""
    try:
        if via_file:
            path.write_text(content)
            matrix = load_matrix(path)
        else:
            matrix = parse_matrix(content, path)
    except MatrixError as err:
        check_error(err, content, path)
        return err
    assert matrix.baseline in matrix.variants
    assert {"quick", "full"} <= set(matrix.matrices)
    describe(matrix)                    # expands every sub-matrix
    return matrix


def dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=DUMPER, sort_keys=False,
                     allow_unicode=True)


def test_bases_are_valid(paths: dict[str, Path]) -> None:
    for name, content in BASES.items():
        assert isinstance(outcome(content, paths[name]), Matrix)
        assert isinstance(outcome(dump(PARSED[name]), paths[name]), Matrix)


@FUZZ
@given(doc=st.one_of(documents, st.dictionaries(
    st.sampled_from(TOP_KEYS), documents, max_size=6)))
def test_random_documents(paths: dict[str, Path], doc: Any) -> None:
    outcome(dump(doc), paths["good"])


# ----------------------------------------------------- structural mutants

def locations(doc: Any, out: list[tuple[Any, Any]]) -> list:
    """Every (container, key or index) in the document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((doc, k))
            locations(v, out)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((doc, i))
            locations(v, out)
    return out


def mutate(doc: Any, data: st.DataObject) -> None:
    where = locations(doc, [])
    if not where:
        return
    # Indices, not the places themselves: each draw is printed, and a
    # place holds a whole sub-document.
    parent, key = where[data.draw(st.integers(0, len(where) - 1), "place")]
    value = parent[key]
    op = data.draw(st.sampled_from(
        ["delete", "replace", "retype", "rename", "duplicate", "wrap",
         "unwrap", "transplant", "share"]), "op")
    if op == "delete":
        del parent[key]
    elif op == "replace":
        parent[key] = data.draw(st.one_of(scalars, documents), "value")
    elif op == "retype":
        parent[key] = data.draw(st.sampled_from(
            [str(value), [value], {str(value): value}, None, 0, 1.5,
             True, -1]), "retype")
    elif op == "rename" and isinstance(parent, dict):
        new = data.draw(keys, "new key")
        items = [(new if k == key else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(value))
    elif op == "duplicate" and isinstance(parent, dict):
        # a sibling entry under another name with the same content
        parent[f"{key}2"] = copy.deepcopy(value)
    elif op == "wrap":
        parent[key] = [value]
    elif op == "unwrap" and isinstance(value, (list, dict)) and value:
        first = value[0] if isinstance(value, list) \
            else next(iter(value.values()))
        parent[key] = first
    elif op in ("transplant", "share"):
        # another place's value: a deep copy, or the same object (which
        # the dump writes as an anchor and an alias)
        other_parent, other_key = where[data.draw(
            st.integers(0, len(where) - 1), "from")]
        other = other_parent[other_key]
        if other is not doc and not _contains(other, parent):
            parent[key] = copy.deepcopy(other) if op == "transplant" \
                else other


def _contains(outer: Any, inner: Any) -> bool:
    if outer is inner:
        return True
    if isinstance(outer, dict):
        return any(_contains(v, inner) for v in outer.values())
    if isinstance(outer, list):
        return any(_contains(v, inner) for v in outer)
    return False


@FUZZ
@given(base=BASE, data=st.data())
def test_mutated_matrices(paths: dict[str, Path], base: str,
                          data: st.DataObject) -> None:
    doc = copy.deepcopy(PARSED[base])
    for _ in range(data.draw(st.integers(1, 3), "mutations")):
        mutate(doc, data)
    outcome(dump(doc), paths[base])


# ---------------------------------------------------------- text mutants

@FUZZ
@given(base=BASE, data=st.data())
def test_edited_matrix_files(paths: dict[str, Path], base: str,
                             data: st.DataObject) -> None:
    lines = BASES[base].splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 3), "edits")):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1), "line")
        op = data.draw(st.sampled_from(
            ["delete", "duplicate", "swap", "indent", "dedent", "insert",
             "replace", "truncate"]), "op")
        if op == "delete":
            del lines[i]
        elif op == "duplicate":             # duplicate keys, mostly
            lines.insert(i, lines[i])
        elif op == "swap":
            j = data.draw(st.integers(0, len(lines) - 1), "other line")
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "indent":
            lines[i] = "  " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i][2:] if lines[i].startswith("  ") \
                else lines[i]
        elif op == "insert":
            at = data.draw(st.integers(0, len(lines[i])), "column")
            bit = data.draw(st.sampled_from(TOKENS), "token")
            lines[i] = lines[i][:at] + bit + lines[i][at:]
        elif op == "replace":
            at = data.draw(st.integers(0, max(0, len(lines[i]) - 1)))
            bit = data.draw(st.sampled_from(TOKENS), "token")
            lines[i] = lines[i][:at] + bit + lines[i][at + 1:]
        else:
            cut = data.draw(st.integers(0, len(lines[i])), "cut")
            lines = lines[:i] + [lines[i][:cut]]
    outcome("".join(lines), paths[base], via_file=True)


TOKENS = [":", ": ", " ", "\n", "  ", "\t", "- ", "[", "]", "{", "}", ",",
          "&a ", "*a", "!!int ", "!!float ", "!!binary ", "!!set ",
          "!!python/name:os.system ", "!!timestamp ", "!foo ", "<<: ", "? ",
          "|", ">", "'", '"', "#", "%YAML 1.1\n", "---\n", "...\n", "\x00",
          "\x07", "\ufeff", "2017-13-45", "2017-02-30", ".nan", ".inf",
          "-.inf", "1" + "0" * 5000, "0x1f", "0o17", "~", "null", "yes",
          "trees", "variants", "backends", "matrices", "repeat", "kind",
          "nvme", "base", "linux-source-6.1", "512M", "é", "\\u0000"]


@FUZZ
@given(content=st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_random_yaml_text(paths: dict[str, Path], content: str) -> None:
    outcome(content, paths["good"])


# --------------------------------------- what the properties found, pinned

@pytest.mark.parametrize("content,line,keypath,message", [
    ("a: 2017-13-45\n", 1, "a", "bad value: month must be in 1..12"),
    ("a: !!int abc\n", 1, "a", "bad value: invalid literal for int()"),
    ("a: !!float x\n", 1, "a", "bad value: could not convert"),
    ("x: 1\n<<: {a: 1}\n", 2, "<<", "merge keys ('<<') are not supported"),
    ("!!python/name:os.system x: 1\n", 1, "x",
     "bad key: could not determine a constructor"),
    ("a:\n  b: &x [1, *x]\n", 2, "a.b[1]", "recursive alias"),
    ("a: &x {b: *x}\n", 1, "a.b", "recursive alias"),
    ("a: 1\nb: c\x07d\n", 2, "", "character '\\x07' is not allowed"),
    ("a: " + "[" * 1000 + "]" * 1000 + "\n", 1, "", "nested too deeply"),
    ("a: 1" + "0" * 5000 + "\n", 1, "a", "bad value: Exceeds the limit"),
], ids=["timestamp", "int", "float", "merge-key", "tagged-key",
        "recursive-list", "recursive-map", "control-char", "deep",
        "long-int"])
def test_loader_errors_found_by_fuzzing(tmp_path: Path, content: str,
                                        line: int, keypath: str,
                                        message: str) -> None:
    path = tmp_path / "matrix.yaml"
    with pytest.raises(MatrixError) as info:
        parse_matrix(content, path)
    err = info.value
    assert (err.line, err.keypath) == (line, keypath), str(err)
    assert message in err.message, str(err)


def test_alias_bomb_refused(tmp_path: Path) -> None:
    names = "abcdefghij"
    content = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n"
        for p, n in zip(names, names[1:]))
    with pytest.raises(MatrixError, match="values once aliases are "
                       "expanded"):
        parse_matrix(content, tmp_path / "matrix.yaml")


@pytest.mark.parametrize("old,new,keypath,message", [
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, model: ssd, read_us: .nan}",
     "backends.nvme.read_us", "expected a non-negative number"),
    ("  nvme: {kind: nvme, mdts: 9}",
     "  nvme: {kind: nvme, model: ssd, dilation: .inf}",
     "backends.nvme.dilation", "expected auto, off or a positive"),
    ("  memory: 512M", "  memory: '" + "9" * 30 + "T'", "guest.memory",
     "expected a size"),
    ("{swap_ra_vma_rfc: \">0\", swap_ra_cluster: 0}",
     "{swap_ra_vma_rfc: \">" + "9" * 5000 + "\"}",
     "expect[0].vmstat.swap_ra_vma_rfc", "expected a counter condition"),
])
def test_numbers_that_are_not(tmp_path: Path, old: str, new: str,
                              keypath: str, message: str) -> None:
    assert old in GOOD
    path = make_tree(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    assert info.value.keypath == keypath, str(info.value)
    assert message in info.value.message


def test_rule_repeat_list(tmp_path: Path) -> None:
    """`repeat: [1, 3]` in a rule: a list of repeat numbers (it used to be
    refused whatever it held)."""
    text = GOOD.replace(
        "      - {variant: base, backend: nvme, workload: seq, repeat: 1}",
        "      - {variant: base, backend: nvme, workload: seq, "
        "repeat: [1, 3]}")
    m = load_matrix(make_tree(tmp_path / "ok", text))
    assert [c.id for c in m.cells("smoke")] == ["base-nvme-seq-r1",
                                                "base-nvme-seq-r3"]
    bad = text.replace("repeat: [1, 3]", "repeat: [1, zero]")
    with pytest.raises(MatrixError) as info:
        load_matrix(make_tree(tmp_path / "bad", bad))
    assert info.value.keypath == "matrices.smoke.only[0].repeat[1]"
    assert "expected a repeat number, found string 'zero'" in \
        info.value.message
