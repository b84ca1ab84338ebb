"""The fifty-fourth round against the release gate: a release whose tables are proven on other code than it ships.

Since commit 0930056 every table's proofs name the kernel code they were made on (``neurobrix.kernel_source``, a
digest of the ``neurobrix/ops`` files a kernel's calls run, comments and docstrings aside) and ``tables verify``, which
the gate's install smoke runs (G702), refuses a table bound to other code. Hostile artifacts of this class were built
from a git copy of this checkout whose tables are all bound (the H200 class stamped in the copy only: its re-proof is
the lead's), and judged as release.yml does, install smoke on.

Refused already (the check named), no false pass, the smoke never reached: a wheel whose ops file is edited, the tables
untouched (G109: a package file not the commit's); the same with the index's ``stack.source`` and the record's
``kernel_source`` rewritten to the edited code's digest (G109, G103: tables not as the commit's list says), and with
``TRACKED.yaml`` rebuilt for them too (G109, G103, G106); ``neurobrix/kernel_source.py`` patched to return the recorded
digest (G109); an extra ops module declaring a second ``OpSpec("linear")`` (G107: no tracked file); each of these in
the sdist (G509 for the ops file, G503 for the tables). At the commit: a comment and a docstring changed in an ops file
PASS, smoke and all (no false refusal); a statement changed is refused by the smoke alone (G702, naming the kernel and
the re-proof command).

Found and fixed (a false pass at the commit, and the syntax-tree map disagreeing with the imported specs):

1. ``kernel_source_files`` followed only relative imports of the op modules ``MODULES`` names: a helper module of
   ``neurobrix/ops`` no ``MODULES`` names (``_tiles.py`` imported by ``rms_norm.py``), a sub-package, or an import
   written absolutely (``from neurobrix.ops.linear import ...``) was no part of the digest. A commit editing only
   the helper kept every table bound: the gate passed it, smoke and all, while run executed other code than the
   proofs'. Every import that lands in ``neurobrix/ops`` is followed now (``__init__.py``'s imports of op modules
   aside, as before); the digests of this checkout are unchanged (pinned: the interpreter tables stay bound).
2. The map read ``OpSpec("<name>", ...)`` only: ``OpSpec(name="<name>", ...)``, an ``OpSpec`` imported under another
   name and a name computed at import time were invisible, so a kernel declared so in one module while an unused
   literal ``OpSpec("<name>", ...)`` sat in another was bound to the other's code; a ``MODULES`` extended at import
   time (``MODULES += (...)``) named modules the map did not read, and a module named twice or a kernel declared twice
   read as an "unknown kernel". The keyword and aliased forms are read; a name not written out, a kernel declared
   twice or outside ``MODULES``, a ``MODULES`` not one literal tuple assigned once, a module named twice or without its
   source are refused in one line, and ``tables verify`` lists such code as a problem of each table (before, the error
   left it without a JSON report: G703, no reason given). The fast cases call ``kernel_source`` on edited copies of
   the package: 14 of them, and the gate's helper case, fail in a worktree of the commit before the fix.

Left open: code that changes another module's at import time (``linear.launch = ...`` written in ``attention.py``,
``sys.modules`` entries, ``dataclasses.replace(spec, name=...)``) and code outside ``neurobrix/ops`` are not bound;
a commit that rewrites a table's recorded digest without proving it (index, record and ``TRACKED.yaml`` together)
passes: the gate judges the commit's files, not whether its proofs were run.
"""

from __future__ import annotations

import json
import os
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


@pytest.mark.slow
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
    patched += (
        f"\n_real = kernel_source\n\ndef kernel_source(kernel):\n"
        f"    return {recorded!r} if kernel == 'rms_norm' else _real(kernel)\n"
    )
    restamped = _restamped_tables(base, {OPS: ops})
    return {
        "ops edited, tables untouched": {OPS: ops},
        "ops edited, tables restamped": {OPS: ops, **{_member(r): d for r, d in restamped.items() if r != LISTED}},
        "ops edited, tables and list restamped": {OPS: ops, **{_member(r): d for r, d in restamped.items()}},
        "ops edited, kernel_source patched to the recorded digest": {
            OPS: ops,
            "neurobrix/kernel_source.py": patched.encode(),
        },
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


EXPECTED_WHEEL = {  # G109: a package file not the commit's; G103: a table not as the tracked list says; G106: the list
    "ops edited, tables untouched": {"G109"},
    "ops edited, tables restamped": {"G109", "G103"},
    "ops edited, tables and list restamped": {"G109", "G103", "G106"},
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
    assert _codes(report) == EXPECTED_WHEEL[case], [f.as_json() for f in report.findings]
    assert OPS in {f.path for f in report.findings}
    assert [s.status for s in report.smoke] == ["skipped"]  # nothing of it is installed


@pytest.mark.slow
def test_an_extra_ops_module_declaring_a_kernel_again_is_refused(built: Path, tmp_path: Path) -> None:
    """A second ``OpSpec("linear")`` in a module the commit does not hold (the wheel, then the sdist)."""
    fields = ("what", "key", "buckets", "key_of", "launch", "torch", "outputs", "candidates")
    extra = (
        b"from .spec import OpSpec\nfrom .linear import SPECS as _S\n"
        b'SPECS = (OpSpec("linear", *[getattr(_S[0], f) for f in %r]),)\n' % (fields,)
    )
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
    text = text.replace(
        "\nfrom .spec import Call, OpSpec\n",
        "\nfrom ._tiles import SCALE  # noqa: F401\nfrom .spec import Call, OpSpec\n",
    )
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


# --- The syntax-tree map of the kernels against the code the package imports (neurobrix.kernel_source), on copies ---

PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from neurobrix.errors import NeuroBrixError
from neurobrix.kernel_source import kernel_source, kernel_source_files
try:
    print(json.dumps([kernel_source(sys.argv[2]), list(kernel_source_files(sys.argv[2]))]))
except NeuroBrixError as exc:  # UsageError, or CompilerStackError for a source missing (a damaged install)
    print(json.dumps(str(exc)))
"""


def _package(tmp_path: Path) -> Path:
    """A copy of this checkout's package and tables, to edit."""
    for name in ("neurobrix", "tables"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _read(where: Path, kernel: str) -> tuple[str, list[str]] | str:
    """(digest, files) of ``kernel`` in the copy ``where``, or the line kernel_source refuses it with."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(where), kernel], env=_env(), capture_output=True, text=True, check=True
    )
    read = json.loads(result.stdout)
    return read if isinstance(read, str) else (read[0], read[1])


def _edit(path: Path, before: str, after: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert before in text, (path, before)
    path.write_text(text.replace(before, after, 1), encoding="utf-8")


IMPORTS = {
    "a helper module": ("from ._tiles import SCALE", {"_tiles.py": "SCALE = 1.0\n"}, "_tiles.py"),
    "a helper sub-package": (
        "from ._lib.tiles import SCALE",
        {"_lib/__init__.py": "", "_lib/tiles.py": "SCALE = 1.0\n"},
        "_lib/tiles.py",
    ),
    "an absolute import": ("from neurobrix.ops._tiles import SCALE", {"_tiles.py": "SCALE = 1.0\n"}, "_tiles.py"),
    "an op module imported absolutely": ("import neurobrix.ops.silu_mul", {}, "silu_mul.py"),
    "the launch wrapper's helper": (None, {"_launch.py": "SCALE = 1.0\n"}, "_launch.py"),
}


@pytest.mark.parametrize("case", IMPORTS)
def test_an_edit_in_any_ops_file_a_kernel_imports_unbinds_it(tmp_path: Path, case: str) -> None:
    """Before, only relative imports of modules MODULES names were followed: an edit in the helper kept the digest."""
    line, files, edited = IMPORTS[case]
    where = _package(tmp_path)
    ops = where / "neurobrix/ops"
    for rel, text in files.items():
        (ops / rel).parent.mkdir(parents=True, exist_ok=True)
        (ops / rel).write_text(text, encoding="utf-8")
    if line is None:  # the package's own __init__.py, the wrapper every launch goes through, imports it
        _edit(
            ops / "__init__.py",
            "from .rotary import rope_cache\n",
            "from ._launch import SCALE  # noqa: F401\nfrom .rotary import rope_cache\n",
        )
    else:
        _edit(
            ops / "rms_norm.py",
            "\nfrom .spec import Call, OpSpec\n",
            f"\n{line}  # noqa: F401\nfrom .spec import Call, OpSpec\n",
        )
    first = _read(where, "rms_norm")
    assert isinstance(first, tuple) and edited in first[1], first
    path = ops / edited
    path.write_text(path.read_text(encoding="utf-8") + "\nEDITED = 2\n", encoding="utf-8")
    second = _read(where, "rms_norm")
    assert isinstance(second, tuple) and second[0] != first[0], (first, second)


def test_a_comment_in_a_helper_module_keeps_the_binding(tmp_path: Path) -> None:
    where = _package(tmp_path)
    ops = where / "neurobrix/ops"
    (ops / "_tiles.py").write_text("SCALE = 1.0\n", encoding="utf-8")
    _edit(
        ops / "rms_norm.py",
        "\nfrom .spec import Call, OpSpec\n",
        "\nfrom ._tiles import SCALE  # noqa: F401\nfrom .spec import Call, OpSpec\n",
    )
    first = _read(where, "rms_norm")
    (ops / "_tiles.py").write_text('"""Tiles."""\n\n# why\nSCALE = 1.0  # the scale\n', encoding="utf-8")
    assert _read(where, "rms_norm") == first


KEYWORD = ('OpSpec("rms_norm", "RMSNorm', 'OpSpec(name="rms_norm", what="RMSNorm')


def test_a_kernel_declared_by_keyword_is_bound_to_its_module(tmp_path: Path) -> None:
    """Before: "unknown kernel" (the keyword form was not read), so no table could be bound to it."""
    where = _package(tmp_path)
    _edit(where / "neurobrix/ops/rms_norm.py", *KEYWORD)
    read = _read(where, "rms_norm")
    assert isinstance(read, tuple) and "rms_norm.py" in read[1], read


def test_a_literal_declaration_elsewhere_does_not_take_the_kernel(tmp_path: Path) -> None:
    """The imported spec comes from rms_norm.py (keyword form); an unused ``OpSpec("rms_norm", ...)`` in silu_mul.py
    was, before, the only declaration the map read: rms_norm was bound to silu_mul.py's code, an edit in rms_norm.py
    kept the digest. Now a kernel declared twice is refused, naming both files."""
    where = _package(tmp_path)
    ops = where / "neurobrix/ops"
    _edit(ops / "rms_norm.py", *KEYWORD)
    (ops / "silu_mul.py").write_text(
        (ops / "silu_mul.py").read_text(encoding="utf-8")
        + '\n\ndef _legacy():\n    return OpSpec("rms_norm", "old")\n',
        encoding="utf-8",
    )
    read = _read(where, "rms_norm")
    assert isinstance(read, str) and "rms_norm.py" in read and "silu_mul.py" in read, read


REFUSED = {  # (the file edited, text before, after, the kernel asked for, what the refusal names)
    "a name not written out": ("silu_mul.py", 'OpSpec("silu_mul",', "OpSpec(KERNEL,", "silu_mul", "not written out"),
    "OpSpec imported under another name": (
        "silu_mul.py",
        "\nfrom .spec import Call, OpSpec\n",
        "\nfrom .spec import Call, OpSpec\nfrom .spec import OpSpec as Spec\n_LEGACY = (lambda: Spec(NAME, 'x'))\n",
        "silu_mul",
        "not written out",
    ),
    "MODULES extended at import time": (
        "__init__.py",
        "\nSOURCES = (",
        '\nMODULES += ("extra",)\nSOURCES = (',
        "linear",
        "MODULES",
    ),
    "a module named twice": (
        "__init__.py",
        'MODULES = ("attention",',
        'MODULES = ("attention", "attention",',
        "linear",
        "twice",
    ),
    "a module without its source": (
        "__init__.py",
        'MODULES = ("attention",',
        'MODULES = ("attention", "fused",',
        "linear",
        "fused.py",
    ),
    "a kernel declared in a helper too": (
        "rms_norm.py",
        "\nfrom .spec import Call, OpSpec\n",
        "\nfrom ._more import MORE  # noqa: F401\nfrom .spec import Call, OpSpec\n",
        "rms_norm",
        "_more.py",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_code_the_syntax_trees_cannot_bind_is_refused_in_one_line(tmp_path: Path, case: str) -> None:
    """Each was read before as an "unknown kernel", not at all, or failed with a traceback; now refused in one line
    naming what is wrong."""
    name, before, after, kernel, named = REFUSED[case]
    where = _package(tmp_path)
    helper = 'from .spec import OpSpec\nMORE = OpSpec("rms_norm", "x")\n'  # imported by one case only
    (where / "neurobrix/ops/_more.py").write_text(helper, encoding="utf-8")
    _edit(where / "neurobrix/ops" / name, before, after)
    read = _read(where, kernel)
    assert isinstance(read, str) and named in read and "\n" not in read, read


def test_tables_verify_lists_code_it_cannot_bind_as_a_problem(tmp_path: Path) -> None:
    """Before, `tables verify --json` stopped on the error without a report (the gate: G703, no reason given)."""
    where = _package(tmp_path)
    _edit(where / "neurobrix/ops/silu_mul.py", 'OpSpec("silu_mul",', "OpSpec(KERNEL,")
    result = subprocess.run(
        [sys.executable, "-m", "neurobrix", "tables", "verify", "--json"],
        cwd=where,
        env={**_env(), "PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = json.loads(result.stdout)
    assert result.returncode != 0 and report["ok"] is False
    messages = [p["message"] for p in report["problems"] if p["path"] == "interpreter/silu_mul.json"]
    assert len(messages) == 1 and "not written out" in messages[0], report["problems"]


def test_the_digests_of_this_checkout_did_not_move() -> None:
    """Following every import changed no digest: each interpreter table stays bound to this code (the H200 class is
    bound on its own device; its digests are the same function's)."""
    from neurobrix.kernel_source import kernel_source

    for index in sorted((REPO / "tables/interpreter").glob("*.json")):
        assert json.loads(index.read_text(encoding="utf-8"))["stack"]["source"] == kernel_source(index.stem), index.name
