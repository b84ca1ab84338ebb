"""The fifty-fourth round against the release gate: a release whose tables are proven on other code than it ships.

Since commit 0930056 every table's proofs name the kernel code they were made on (``neurobrix.kernel_source``, a
digest of the ``neurobrix/ops`` files a kernel's calls run, comments and docstrings aside) and ``tables verify``, which
the gate's install smoke runs (G702), refuses a table bound to other code. Hostile artifacts of this class were built
from a git copy of this checkout whose tables are all bound (the H200 class stamped in the copy only: its re-proof is
the lead's), and judged as release.yml does, install smoke on.

Refused already (the check named), no false pass: a wheel whose ops file is edited, the tables untouched (G108, the
file is not the commit's); the same with the index's ``stack.source`` and the record's ``kernel_source`` rewritten to
the edited code's digest (G108, and the tables G703/G704 against the commit's list), and with ``TRACKED.yaml`` rebuilt
for them too; an extra ops module declaring a second ``OpSpec("linear")`` (G107, no tracked file);
``neurobrix/kernel_source.py`` patched to return the recorded digests (G108); each of these in the sdist (G5xx: its
files are not the commit's). At the commit: a comment and a docstring changed in an ops file PASS (no false refusal);
a statement changed is refused by the smoke (G702, naming the kernel and the re-proof command).

Found and fixed (a false pass at the commit, and the syntax-tree map disagreeing with the imported specs):

1. ``kernel_source_files`` followed only relative imports of the op modules ``MODULES`` names: a helper module of
   ``neurobrix/ops`` no ``MODULES`` names (``_tiles.py`` imported by ``rms_norm.py``), a sub-package, or an import
   written absolutely (``from neurobrix.ops.linear import ...``) was no part of the digest. A commit editing only
   the helper kept every table bound: the gate passed it, smoke and all, while run executed other code than the
   proofs'. Every import that lands in ``neurobrix/ops`` is followed now (``__init__.py``'s imports of op modules
   aside, as before); the digests of this checkout are unchanged (pinned).
2. The map read ``OpSpec("<name>", ...)`` only: ``OpSpec(name="<name>", ...)``, an ``OpSpec`` imported under another
   name and a name computed at import time were invisible, so a kernel declared so in one module while an unused
   literal ``OpSpec("<name>", ...)`` sat in another was bound to the other's code; a ``MODULES`` extended at import
   time (``MODULES += (...)``) named modules the map did not read, and a module named twice or a kernel declared twice
   read as an "unknown kernel". The keyword and aliased forms are read; a name not written out, a kernel declared
   twice or outside ``MODULES``, a ``MODULES`` not one literal tuple assigned once, a module named twice or without its
   source are refused, and ``tables verify`` lists such code as a problem of each table (before, the error left it
   without a JSON report: G703).

Left open: code that changes another module's at import time (``linear.launch = ...`` written in ``attention.py``,
``sys.modules`` entries, ``dataclasses.replace(spec, name=...)``) and code outside ``neurobrix/ops`` are not bound;
a commit that rewrites a table's recorded digest without proving it (index, record and ``TRACKED.yaml`` together)
passes: the gate judges the commit's files, not whether its proofs were run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gate_fixtures import read_sdist_member, read_wheel_member, rewrite_sdist, rewrite_wheel
from packaging.version import Version
from test_gate_round42 import _git, _git_copy

from gate.build import build_project
from gate.checker import REPO, Options, check
from gate.completeness import load_reference
from gate.report import Report
from neurobrix import __version__

LISTED = "tables/TRACKED.yaml"
OPS = "neurobrix/ops/rms_norm.py"

# Run in a copy (its own neurobrix first on the path): every table of every class bound to the copy's kernel code,
# as a re-proof with --record would leave it, and the tracked list rebuilt.
STAMP = r"""
import json, re, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from neurobrix import tables
from neurobrix.kernel_source import kernel_source
root = Path(sys.argv[1]) / "tables"
for index in sorted(root.glob("*/*.json")):
    digest = kernel_source(index.stem)
    text = index.read_text(encoding="utf-8")
    line = re.search(r'^  "stack": (\{.*\}),$', text, re.M)
    stack = {**json.loads(line.group(1)), "source": digest}
    index.write_text(text.replace(line.group(0), f'  "stack": {json.dumps(stack)},'), encoding="utf-8")
    record = index.with_name(index.stem + ".proofs.yaml")
    text = record.read_text(encoding="utf-8")
    if re.search(r"^  kernel_source: ", text, re.M):
        text = re.sub(r"^  kernel_source: [0-9a-f]+$", f"  kernel_source: {digest}", text, count=1, flags=re.M)
    else:
        text = re.sub(r"^(  torch: .*)$", rf"\1\n  kernel_source: {digest}", text, count=1, flags=re.M)
    record.write_text(text, encoding="utf-8")
(root / tables.TRACKED_NAME).write_text(tables.render_tracked(tables.scan(root)), encoding="utf-8")
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NEUROBRIX_TABLES")}


def _stamp(tree: Path) -> None:
    subprocess.run([sys.executable, "-c", STAMP, str(tree)], env=_env(), check=True, capture_output=True)


def _commit(tree: Path, why: str) -> None:
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", why)


def _clone(root: Path, name: str, source: str = "base") -> Path:
    """A clone of ``root/source`` (the gate reads a tree once a process: each commit judged is a tree of its own)."""
    copy = root / name
    subprocess.run(["git", "clone", "-q", str(root / source), str(copy)], check=True, capture_output=True)
    return copy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``base``: a git copy of this checkout, every table bound to its code; ``dist``: its wheel and sdist."""
    root = tmp_path_factory.mktemp("round54")
    base = root / "base"
    _git_copy(base)
    _stamp(base)
    _commit(base, "every table bound to this code")
    build_project(base, root / "dist")
    return root


def _wheel(folder: Path) -> Path:
    (wheel,) = folder.glob("*.whl")
    return wheel


def _sdist(folder: Path) -> Path:
    (sdist,) = folder.glob("*.tar.gz")
    return sdist


def _judge(dists: list[Path], tree: Path, smoke: bool = True) -> Report:
    return check(dists, Options(load_reference(tree / LISTED), Version(__version__), smoke=smoke, source_tree=tree))


def _codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def _member(rel: str) -> str:
    """The wheel member of a tracked file."""
    return f"neurobrix/_tables/{rel[len('tables/') :]}" if rel.startswith("tables/") else rel


def _commit_wheel(tree: Path, base: Path, out: Path) -> Path:
    """The wheel of ``tree``'s commit: ``base``'s wheel with each file the commit changed since the base replaced."""
    changed = _git(tree, "diff", "--name-only", "HEAD~1", "HEAD").split()
    replace = {_member(rel): (tree / rel).read_bytes() for rel in changed}
    out.mkdir(exist_ok=True)
    return rewrite_wheel(base, out, replace=replace)


def test_the_bound_copy_and_its_build_pass_release_grade(built: Path) -> None:
    """The premise: the copy's own wheel and sdist pass, the smoke's `tables verify` included."""
    report = _judge([built / "dist"], built / "base")
    assert report.passed, [f.as_json() for f in report.findings]
    assert [s.status for s in report.smoke] == ["passed"]


def _edited(text: str) -> str:
    """A statement added to an ops file (what the kernel's proofs no longer stand for)."""
    return text + "\nEDITED = 1\n"


# (wheel member -> new bytes, or a builder from the base tree), each a hostile wheel of the base commit
def _hostile_wheels(base: Path) -> dict[str, dict[str, bytes]]:
    ops = _edited((base / OPS).read_text(encoding="utf-8")).encode()
    patched = (base / "neurobrix/kernel_source.py").read_text(encoding="utf-8")
    recorded = json.loads((base / "tables/interpreter/rms_norm.json").read_text(encoding="utf-8"))["stack"]["source"]
    patched += f"\n_real = kernel_source\n\ndef kernel_source(kernel):\n    return {recorded!r} if kernel == 'rms_norm' else _real(kernel)\n"
    restamped = _restamped_tables(base, {OPS: ops})
    return {
        "ops edited, tables untouched": {OPS: ops},
        "ops edited, tables restamped": {OPS: ops, **{_member(r): d for r, d in restamped.items() if r != LISTED}},
        "ops edited, tables and list restamped": {OPS: ops, **{_member(r): d for r, d in restamped.items()}},
        "ops edited, kernel_source patched to the recorded digest": {OPS: ops, "neurobrix/kernel_source.py": patched.encode()},
    }


def _restamped_tables(base: Path, files: dict[str, bytes]) -> dict[str, bytes]:
    """The tables (and the list) a copy of ``base`` with ``files`` written has once stamped to its code."""
    where = base.parent / f"restamp-{len(list(base.parent.glob('restamp-*')))}"
    shutil.copytree(base, where, ignore=shutil.ignore_patterns(".git"))
    for rel, data in files.items():
        (where / rel).write_bytes(data)
    _stamp(where)
    return {
        str(p.relative_to(where)): p.read_bytes()
        for p in (where / "tables").rglob("*")
        if p.is_file() and p.read_bytes() != (base / p.relative_to(where)).read_bytes()
    }


EXPECTED_WHEEL = {
    "ops edited, tables untouched": {"G109"},
    "ops edited, tables restamped": {"G109"},
    "ops edited, tables and list restamped": {"G109"},
    "ops edited, kernel_source patched to the recorded digest": {"G109"},
}


@pytest.mark.slow
@pytest.mark.parametrize("case", EXPECTED_WHEEL)
def test_a_wheel_of_other_kernel_code_than_the_commits_is_refused(built: Path, tmp_path: Path, case: str) -> None:
    """Each hostile wheel with the base commit's honest sdist: refused by the tracked-file checks, before any smoke."""
    replace = _hostile_wheels(built / "base")[case]
    wheel = rewrite_wheel(_wheel(built / "dist"), tmp_path, replace=replace)
    assert read_wheel_member(wheel, OPS) != (built / "base" / OPS).read_bytes()
    report = _judge([wheel, _sdist(built / "dist")], built / "base")
    assert not report.passed
    assert EXPECTED_WHEEL[case] <= _codes(report), [f.as_json() for f in report.findings]
    assert OPS in {f.path for f in report.findings}


@pytest.mark.slow
def test_an_extra_ops_module_declaring_a_kernel_again_is_refused(built: Path, tmp_path: Path) -> None:
    """A second ``OpSpec("linear")`` in a module the commit does not hold (the wheel, then the sdist)."""
    extra = b'from .spec import OpSpec\nfrom .linear import SPECS as _S\nSPECS = (OpSpec("linear", *[getattr(_S[0], f) for f in ("what", "key", "buckets", "key_of", "launch", "torch", "outputs", "candidates")]),)\n'
    wheel = rewrite_wheel(_wheel(built / "dist"), tmp_path, add=[("neurobrix/ops/linear2.py", extra)])
    report = _judge([wheel], built / "base")
    assert "G107" in _codes(report) and "neurobrix/ops/linear2.py" in {f.path for f in report.findings}
    sdist = rewrite_sdist(_sdist(built / "dist"), tmp_path, add={"neurobrix/ops/linear2.py": extra})
    report = _judge([sdist], built / "base", smoke=False)
    assert not report.passed and any("linear2.py" in (f.path or "") for f in report.findings)


@pytest.mark.slow
@pytest.mark.parametrize("case", EXPECTED_WHEEL)
def test_an_sdist_of_other_kernel_code_than_the_commits_is_refused(built: Path, tmp_path: Path, case: str) -> None:
    replace = {
        (rel if not rel.startswith("neurobrix/_tables/") else f"tables/{rel[len('neurobrix/_tables/') :]}"): data
        for rel, data in _hostile_wheels(built / "base")[case].items()
    }
    sdist = rewrite_sdist(_sdist(built / "dist"), tmp_path, replace=replace)
    assert read_sdist_member(sdist, OPS) != (built / "base" / OPS).read_bytes()
    report = _judge([sdist], built / "base", smoke=False)
    assert not report.passed
    codes = {f.code for f in report.findings if (f.path or "").endswith(f"/{OPS}")}
    assert codes == {"G509"}, [f.as_json() for f in report.findings]  # not the commit's file
    if "restamped" in case:  # the tables too, against the commit's list
        assert "G503" in _codes(report), [f.as_json() for f in report.findings]


@pytest.mark.slow
def test_a_commit_changing_an_ops_file_in_comments_only_passes(built: Path, tmp_path: Path) -> None:
    """No false refusal: a comment and a docstring changed leave every table bound, the smoke passes."""
    tree = _clone(built, "comments")
    path = tree / OPS
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"""', '"""Reworded. ', 1) + "\n# a comment only\n", encoding="utf-8")
    _commit(tree, "comments only")
    report = _judge([_commit_wheel(tree, _wheel(built / "dist"), tmp_path)], tree)
    assert report.passed, [f.as_json() for f in report.findings]
    assert [s.status for s in report.smoke] == ["passed"]


def _refused_by_smoke(report: Report, kernel: str) -> str:
    assert not report.passed
    assert _codes(report) == {"G702"}, [f.as_json() for f in report.findings]
    messages = " | ".join(f.message for f in report.findings)
    assert kernel in messages and "--record" in messages, messages
    return messages


@pytest.mark.slow
def test_a_commit_changing_an_ops_statement_is_refused_by_the_smoke(built: Path, tmp_path: Path) -> None:
    tree = _clone(built, "statement")
    (tree / OPS).write_text(_edited((tree / OPS).read_text(encoding="utf-8")), encoding="utf-8")
    _commit(tree, "a statement, no re-proof")
    _refused_by_smoke(_judge([_commit_wheel(tree, _wheel(built / "dist"), tmp_path)], tree), "rms_norm")


@pytest.mark.slow
def test_a_commit_editing_a_helper_module_of_the_ops_is_refused(built: Path, tmp_path: Path) -> None:
    """The false pass: rms_norm.py imports a helper no MODULES names, its tables proven (stamped) on that code; the
    next commit edits the helper only. Before, the digest stayed and the gate passed it, smoke and all."""
    tree = _clone(built, "helper")
    (tree / "neurobrix/ops/_tiles.py").write_text("SCALE = 1.0\n", encoding="utf-8")
    text = (tree / OPS).read_text(encoding="utf-8")
    assert "\nfrom .spec import Call, OpSpec\n" in text
    text = text.replace("\nfrom .spec import Call, OpSpec\n", "\nfrom ._tiles import SCALE  # noqa: F401\nfrom .spec import Call, OpSpec\n")
    (tree / OPS).write_text(text, encoding="utf-8")
    _stamp(tree)
    _commit(tree, "a helper module, rms_norm proven on it")
    build_project(tree, tmp_path / "proven")
    assert _judge([tmp_path / "proven"], tree).passed  # the premise: bound, a release
    tree = _clone(built, "helper-edited", "helper")
    (tree / "neurobrix/ops/_tiles.py").write_text("SCALE = 2.0\n", encoding="utf-8")
    _commit(tree, "the helper edited, no re-proof")
    wheel = _commit_wheel(tree, _wheel(tmp_path / "proven"), tmp_path / "edited")
    _refused_by_smoke(_judge([wheel], tree), "rms_norm")
