"""The fifty-eighth round, adversarial on the strict runtime (docs/strictness-rounds.md).

First, the item round 57 left: TRACKED.yaml's verified records (written by ``python -m conformance track``, which run
then reads no further than their digests) were bound to nothing but their bytes, so a folder tracked by an engine whose
rules a later one tightens kept its records listed, and the later run skipped checks its own rules make. The list now
carries the digest of the code that verified it (``verified_rules``: ``tables.verification_rules``, the verifying
modules' sources); run honours the list only under its own digest and reads every record in full otherwise (an older
list, a list of round 57's form without the digest, another engine's): slower, never refused for it.

Then a new class of input: what a TRACKED.yaml, an index or a record can hold beyond hand edits of values (YAML's
anchors, merge keys, tags, keys given twice, documents, nesting, numbers past the reader's limits, encodings), paths the
verified list names, and files that are links, FIFOs or folders, or change after the folder was checked. Each is refused
in one line naming the file (a file out of place: the folder report's line naming it), or shown harmless. Found in clean
code: a YAML table nested ~25,000 levels deep killed the interpreter (a segmentation fault in libyaml's composer, no
message), and one nested past Python's limit ended in a RecursionError while its refusal quoted it.

No GPU, no model: the interpreter class's shipped tables, copied, edited and tracked again.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack

from conformance import certify, track
from neurobrix import cli, tables
from neurobrix.errors import TablesError

CLASS = "interpreter"
RECORD = f"{CLASS}/rms_norm.proofs.yaml"
NAN_RATIO = ("    worst_error_ratio: 0.9993\n", "    worst_error_ratio: .nan  \n")  # (the same size)


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter class's tables, tracked by this engine (every record listed as verified), made once."""
    root = tmp_path_factory.mktemp("tracked") / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    track.write(root)
    return root


def _copy(tracked: Path, tmp_path: Path) -> Path:
    shutil.copytree(tracked, tmp_path / "tables", symlinks=True)
    return tmp_path / "tables"


def _form_checks(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kernels whose record the runtime read in full (the form check) while every index of the class loaded."""
    read: list[str] = []
    real = tables._certified_entries
    monkeypatch.setattr(
        tables, "_certified_entries", lambda text, index, own: read.append(index.kernel) or real(text, index, own)
    )
    tables.clear_cache()
    loaded = tables.load(root)
    for kernel in loaded.kernels(CLASS):
        loaded.index(CLASS, kernel)
    monkeypatch.setattr(tables, "_certified_entries", real)
    return sorted(read)


def _refusal(root: Path) -> str | None:
    """What run says of the folder (its load and every index of the class, as run, warmup and doctor read them), None
    when it loads."""
    tables.clear_cache()
    try:
        loaded = tables.load(root)
        for kernel in loaded.kernels(CLASS):
            loaded.index(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


def _list_as_verified(root: Path, rules: str | None) -> None:
    """TRACKED.yaml for the folder as it is, every record listed as verified under the code digest ``rules`` (None: no
    digest, the form round 57's track wrote)."""
    files = tables.scan(root)
    sha = {f.path: f.sha256 for f in files}
    listed = [
        tables.VerifiedRecord(f.path, f.sha256, sha[f.path.replace(".proofs.yaml", ".json")])
        for f in files
        if f.path.endswith(".proofs.yaml")
    ]
    text = tables.render_tracked(files, listed, rules="0" * 64 if rules is None else rules)
    if rules is None:  # the line as YAML writes it (a digest of digits alone is quoted, as a string)
        text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("verified_rules:"))
        assert "verified_rules" not in text
    (root / tables.TRACKED_NAME).write_text(text, encoding="utf-8")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


# the digests an engine other than this one writes: an older one's, the list round 57's track wrote (no digest), one of
# another form, this one's spelt otherwise
OTHER_RULES = {
    "older-engine": "0" * 64,
    "round-57-form": None,
    "another-form": "neurobrix-0.9+rules.2",
    "upper-case": tables.verification_rules().upper(),
}


# ------------------------------------------------------------------------------------- the list bound to its rules
@pytest.mark.parametrize("rules", OTHER_RULES.values(), ids=OTHER_RULES.keys())
def test_a_record_listed_under_other_rules_is_read_in_full_and_refused(tracked, tmp_path, rules):
    """Fixed: a record a looser engine verified and listed (here a ratio of .nan, which this one refuses) was taken on
    the list's word by the runtime, which skipped the form check this engine makes. Under another digest of the
    verifying code, the list is read as none: the record is parsed and refused, one line naming it. Under this code's
    digest, the list is trusted (the threat model's accepted case: whoever writes the list could write the engine)."""
    root = _copy(tracked, tmp_path)
    _edit(tables.proofs_path(root, CLASS, "rms_norm"), *NAN_RATIO)
    _list_as_verified(root, rules)
    said = _refusal(root)
    assert said is not None and "\n" not in said and "rms_norm.proofs.yaml" in said and "finite" in said, said
    _list_as_verified(root, tables.verification_rules())
    assert _refusal(root) is None


@pytest.mark.parametrize("rules", OTHER_RULES.values(), ids=OTHER_RULES.keys())
def test_a_good_folder_listed_under_other_rules_loads_every_record_read_in_full(tracked, tmp_path, monkeypatch, rules):
    """A mismatch of the digest means "verify fully", never "refuse": a folder an older engine tracked (or one of
    round 57's form) loads, each record read in full, as if the list named none; `track --check` names the list, and
    `track` binds it to this code again."""
    root = _copy(tracked, tmp_path)
    _list_as_verified(root, rules)
    kernels = tables.load(root).kernels(CLASS)
    assert tables.read_verified(root) == () and len(tables.read_listed(root)[1]) == len(kernels)
    assert _form_checks(root, monkeypatch) == sorted(kernels)
    (problem,) = track.out_of_sync(root)
    assert "listed as verified by other code than this neurobrix's" in problem and "conformance track" in problem
    assert track.write(root)[1] is True and track.out_of_sync(root) == []
    assert tables.read_listed(root)[0] == tables.verification_rules() and _form_checks(root, monkeypatch) == []


def test_certify_keeps_no_record_a_list_of_other_rules_names(tracked, tmp_path, monkeypatch):
    """Certify keeps listed the records it did not rewrite only from a list bound to this code (a stale one's records
    were verified by other rules), and lists the one it wrote under this code's digest."""
    root = _copy(tracked, tmp_path)
    _list_as_verified(root, "0" * 64)
    record, index = tables.proofs_path(root, CLASS, "rms_norm"), tables.index_path(root, CLASS, "rms_norm")
    text = record.read_text(encoding="utf-8")
    certify._replace_tracked(root, {index: index.read_text(encoding="utf-8"), record: "# certified again\n" + text})
    assert tables.read_listed(root) == (None, ())
    track.list_written(root, [RECORD])
    rules, listed = tables.read_listed(root)
    assert rules == tables.verification_rules() and [v.path for v in listed] == [RECORD]
    assert _form_checks(root, monkeypatch) == sorted(set(tables.load(root).kernels(CLASS)) - {"rms_norm"})


def test_the_shipped_list_is_bound_to_this_code():
    """The repository's TRACKED.yaml lists every record under this checkout's digest (a checkout reads none in full;
    an edit of the verifying code is followed by `python -m conformance track`, which `track --check` asks for)."""
    rules, listed = tables.read_listed(REPO / "tables")
    assert rules == tables.verification_rules() and len(listed) == 16
    assert len(tables.read_verified(REPO / "tables")) == 16


def _package_copy(tmp_path: Path) -> Path:
    """The verifying code as an installed wheel lays it out (the package's files, no checkout around them)."""
    package = tmp_path / "site-packages" / "neurobrix"
    own = Path(tables.__file__).parent
    for name in [*tables.RULE_FILES, *(f"_schemas/{p.name}" for p in (own / "_schemas").glob("*.py"))]:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(own / name, package / name)
    return package


def test_the_rules_digest_is_the_verifying_code(tmp_path):
    """The digest is the verifying modules' sources and the schema's generated validators, wherever they lie (a wheel's
    copy of a checkout's code digests alike; CRLF line ends as written by Git on Windows alike); a byte of any of them
    changed is another digest, and code that cannot be read honours no list (None)."""
    own = tables.verification_rules()
    package = _package_copy(tmp_path)
    assert tables.verification_rules(package) == own and len(own) == 64
    schema = package / "schema.py"
    schema.write_bytes(schema.read_bytes().replace(b"\n", b"\r\n"))
    assert tables.verification_rules(package) == own
    for name in ["schema.py", "tables.py", "buckets.py", "_schemas/proofs_format.py", "_schemas/tracked_format.py"]:
        path = package / name
        saved = path.read_bytes()
        path.write_bytes(saved + b"\n")
        assert tables.verification_rules(package) != own, name
        path.write_bytes(saved)
    (package / "dtypes.py").unlink()
    assert tables.verification_rules(package) is None


def test_the_rule_files_are_every_module_the_verifier_imports():
    """RULE_FILES holds tables.py and every module of the package that it and those modules import at their top (a
    rule moved into a new module is covered by the digest only when listed)."""
    own = Path(tables.__file__).parent
    todo, seen = ["tables.py"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.parse((own / name).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                todo.append(f"{node.module.replace('.', '/')}.py")
    assert seen <= set(tables.RULE_FILES), sorted(seen - set(tables.RULE_FILES))


# ------------------------------------------------------------------------------------- what the files can hold
def _tracked_text(old: str, new: str) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        _edit(root / tables.TRACKED_NAME, old, new)
        return tables.TRACKED_NAME

    return edit


def _appended(extra: str) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = root / tables.TRACKED_NAME
        path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")
        return tables.TRACKED_NAME

    return edit


def _rules_line(new: str) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        _edit(root / tables.TRACKED_NAME, f"verified_rules: {tables.verification_rules()}\n", new)
        return tables.TRACKED_NAME

    return edit


def _listed_path(new: str) -> Callable[[Path], str]:
    return _tracked_text(f"- path: {RECORD}\n  sha256", f"- path: {new}\n  sha256")


def _in_table(kernel: str, suffix: str, change: Callable[[str], str]) -> Callable[[Path], str]:
    """A table file changed, the list's hashes written for it (by hand, or by a track of files only)."""

    def edit(root: Path) -> str:
        path = root / CLASS / f"{kernel}{suffix}"
        path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
        retrack(root)
        return f"{CLASS}/{path.name}"

    return edit


def _encoded(data: Callable[[str], bytes]) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = root / tables.TRACKED_NAME
        path.write_bytes(data(path.read_text(encoding="utf-8")))
        return tables.TRACKED_NAME

    return edit


def _alias_of_a_hash(root: Path) -> str:
    """attention_chunk.json's sha256 written once, anchored, and given again by alias as its record's index_sha256 (the
    values those of the folder: only the alias is wrong)."""
    sha = tables.sha256_of(root / CLASS / "attention_chunk.json")
    _edit(root / tables.TRACKED_NAME, f"  sha256: {sha}\n  size: 461\n", f"  sha256: &h {sha}\n  size: 461\n")
    return _tracked_text(f"  index_sha256: {sha}\n", "  index_sha256: *h\n")(root)


SIZE = "  size: 461\n"  # (attention_chunk.json's, the list's first file)
REFUSED = {
    # YAML features in TRACKED.yaml
    "alias": _alias_of_a_hash,
    "merge-key": _tracked_text("files:\n- path:", "files:\n- <<: {wheel_path: x}\n  path:"),
    "python-tag": _tracked_text(SIZE, "  size: !!python/object/apply:os.getpid []\n"),
    "local-tag": _tracked_text(SIZE, "  size: !mine 461\n"),
    "binary-tag": _rules_line("verified_rules: !!binary AAAA\n"),
    "float-tag": _tracked_text(SIZE, "  size: !!float 461\n"),
    "str-tag": _tracked_text(SIZE, "  size: !!str 461\n"),
    "key-twice": _appended("format: 1\n"),
    "rules-twice": _rules_line(f"verified_rules: {'a' * 64}\nverified_rules: {tables.verification_rules()}\n"),
    "two-documents": _appended("---\nformat: 1\n"),
    "digits-past-the-limit": _tracked_text(SIZE, "  size: " + "9" * 5000 + "\n"),
    "number-past-float": _tracked_text(SIZE, "  size: 1e400\n"),
    "nested-past-pythons-limit": _appended("deep:\n" + " [\n" * 1500 + " ]\n" * 1500),
    "nested-thousands-deep": _appended("deep: " + "[" * 20000 + "]" * 20000 + "\n"),
    "nested-block-sequences": _appended("deep:\n" + "- " * 20000 + "x\n"),
    "utf-16": _encoded(lambda text: text.encode("utf-16")),
    "nul": _encoded(lambda text: text.replace("# Every", "# Ev\0ery").encode()),
    # the verified list's rules and paths
    "rules-of-no-text": _rules_line("verified_rules: 12\n"),
    "rules-null": _rules_line("verified_rules: null\n"),
    "rules-with-a-space": _rules_line("verified_rules: neurobrix 0.9\n"),
    "record-of-another-class": _listed_path("nvidia-h200/rms_norm.proofs.yaml"),
    "record-through-dot": _listed_path(f"./{RECORD}"),
    "record-with-a-look-alike": _listed_path(RECORD.replace("rms_norm", "rms_n\u043erm")),
    "record-with-a-space": _tracked_text(f"- path: {RECORD}\n  sha256", f"- path: '{RECORD} '\n  sha256"),
    # an index or a record (its hashes rewritten)
    "index-nested-deep": _in_table(
        "rms_norm", ".json", lambda t: t.rstrip()[:-1] + ', "d": ' + "[" * 3000 + "]" * 3000 + "}"
    ),
    "index-digits-past-the-limit": _in_table(
        "rms_norm", ".json", lambda t: t.replace('"num_warps": 4', '"num_warps": ' + "9" * 5000, 1)
    ),
    "index-nan": _in_table("rms_norm", ".json", lambda t: t.replace('"num_warps": 4', '"num_warps": NaN', 1)),
    "index-infinity": _in_table("rms_norm", ".json", lambda t: t.replace('"num_warps": 4', '"num_warps": 1e400', 1)),
    "index-key-twice": _in_table(
        "rms_norm", ".json", lambda t: t.replace('"num_warps": 4', '"num_warps": 4, "num_warps": 4', 1)
    ),
    "index-bom": _in_table("rms_norm", ".json", lambda t: "\ufeff" + t),
    "record-merge-key": _in_table(
        "rms_norm", ".proofs.yaml", lambda t: t.replace("  proof:\n", "  proof:\n    <<: {}\n", 1)
    ),
    "record-alias": _in_table(
        "rms_norm",
        ".proofs.yaml",
        lambda t: t.replace("  kernel_source: ", "  kernel_source: &k ", 1).replace(
            "  - kernel_source: 56b1505cb8615d12\n", "  - kernel_source: *k\n"
        ),
    ),
    "record-nested-deep": _in_table("rms_norm", ".proofs.yaml", lambda t: t + "deep:\n" + "- " * 20000 + "x\n"),
}


@pytest.mark.parametrize("edit", REFUSED.values(), ids=REFUSED.keys())
def test_what_a_table_file_can_hold_is_refused_in_one_line_naming_it(tracked, tmp_path, edit, capsys, monkeypatch):
    """Each is refused by run (the folder loaded and every index of the class read) in one line naming the file, and by
    `tables verify` (exit 3) on the line naming it; none ends in a traceback."""
    root = _copy(tracked, tmp_path)
    name = edit(root)
    said = _refusal(root)
    assert said is not None and "\n" not in said and said.startswith(f"{root / name}"), said
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setattr("neurobrix.code_rule.foreign_writes", list)  # (the engine's code, not the tables: 6 s)
    tables.clear_cache()
    assert cli.main(["tables", "verify"]) == 3
    out = capsys.readouterr()
    assert f"  {root / name.split('.')[0]}" in out.out + out.err, out  # (a kernel's files: named by the kernel)


def _linked(root: Path, path: Path) -> str:
    shutil.move(path, root.parent / "elsewhere")
    path.symlink_to(root.parent / "elsewhere")
    return RECORD


def _folder_linked(root: Path, path: Path) -> str:
    shutil.move(root / CLASS, root.parent / "real")
    (root / CLASS).symlink_to(root.parent / "real")
    return CLASS


FOLDER = {
    "record-a-symlink": _linked,
    "record-a-fifo": lambda root, path: (path.unlink(), os.mkfifo(path), RECORD)[-1],
    "record-a-folder": lambda root, path: (path.unlink(), path.mkdir(), RECORD)[-1],
    "class-a-symlink": _folder_linked,
}


@pytest.mark.parametrize("edit", FOLDER.values(), ids=FOLDER.keys())
def test_a_table_file_that_is_no_regular_file_is_refused_naming_it(tracked, tmp_path, edit):
    """A record that is a link (to bytes elsewhere, the tracked ones), a FIFO (a read that never ends) or a folder,
    and a class folder that is a link: the folder report names it on its line (exit 3), nothing read through it."""
    root = _copy(tracked, tmp_path)
    named = edit(root, tables.proofs_path(root, CLASS, "rms_norm"))
    said = _refusal(root)
    assert said is not None and said.startswith(f"the certified tables in {root}"), said
    assert said.split("\n")[1].startswith(f"  {root / named}: "), said


def test_a_record_changed_after_the_folder_check_is_refused_where_it_is_read(tracked, tmp_path):
    """Time of check, time of use: the folder is checked at load (each file's sha256), its records read later, at the
    first call of their kernel. A record listed as verified (its form not read again), rewritten in place at its size
    through a hard link from outside the folder after the check, is refused where it is read: each read is held to the
    sha256 the list gives (the bytes the decision to trust the list was taken for are the bytes used). The hard link
    alone is harmless: its bytes are the tracked ones."""
    root = _copy(tracked, tmp_path)
    record = tables.proofs_path(root, CLASS, "rms_norm")
    os.link(record, tmp_path / "outside")
    assert _refusal(root) is None
    tables.clear_cache()
    loaded = tables.load(root)
    _edit(tmp_path / "outside", *NAN_RATIO)
    with pytest.raises(TablesError) as err:
        loaded.index(CLASS, "rms_norm")
    assert str(err.value) == f"{record}: changed while the tables were being loaded (sha256 differs now)"
    assert not tables.is_loaded(loaded)


def test_a_linked_or_marked_tracked_list_is_the_list_it_reads(tracked, tmp_path):
    """TRACKED.yaml opening with a byte-order mark is read as the list it holds. A link to a list elsewhere was read as
    the list it names (this round's reading); strict round 61 refuses it as every other link of a tables folder is
    refused (round 60's pins), one line naming it, and a loaded model sees the list made a link."""
    root = _copy(tracked, tmp_path)
    listed = root / tables.TRACKED_NAME
    loaded = tables.load(root)
    text = listed.read_text(encoding="utf-8")
    shutil.move(listed, tmp_path / "list.yaml")
    listed.symlink_to(tmp_path / "list.yaml")
    assert not tables.is_loaded(loaded)
    said = _refusal(root)
    assert said is not None and said.startswith(f"{listed}: the tracked-file list is a link") and "\n" not in said
    os.unlink(listed)
    listed.write_text("\ufeff" + text, encoding="utf-8")
    assert _refusal(root) is None


def test_a_listed_entry_carrying_another_records_digests_is_read_in_full(tracked, tmp_path, monkeypatch):
    """Harmless: the list's entry for rms_norm carrying silu_mul's digests (another kernel's record and index), or
    two entries' digests swapped, names no bytes the folder holds there: those records are read in full (and load)."""
    root = _copy(tracked, tmp_path)
    data = yaml.safe_load((root / tables.TRACKED_NAME).read_text(encoding="utf-8"))
    by_path = {v["path"]: v for v in data["verified"]}
    rms, silu = by_path[RECORD], by_path[f"{CLASS}/silu_mul.proofs.yaml"]
    for swapped in ((rms, silu), (silu, rms)):
        listed = [
            tables.VerifiedRecord(
                v["path"],
                *(
                    (swapped[1]["sha256"], swapped[1]["index_sha256"])
                    if v is swapped[0]
                    else (v["sha256"], v["index_sha256"])
                ),
            )
            for v in data["verified"]
        ]
        (root / tables.TRACKED_NAME).write_text(tables.render_tracked(tables.scan(root), listed), encoding="utf-8")
        assert _form_checks(root, monkeypatch) == [swapped[0]["path"].split("/")[1].split(".")[0]]


def test_a_yaml_table_nested_thousands_deep_is_refused_not_a_crash(tracked, tmp_path):
    """Fixed: libyaml composes a document recursively in C; TRACKED.yaml, a class.yaml or a record (its hash rewritten)
    nested 200,000 levels deep (400 KB) killed the interpreter with a segmentation fault in every command. Refused now,
    naming the line, before it is composed (run in a process of its own: the bug kills the process)."""
    cases = {
        tables.TRACKED_NAME: _appended("deep: " + "[" * 200000 + "]" * 200000 + "\n"),
        RECORD: _in_table("rms_norm", ".proofs.yaml", lambda t: t + "deep:\n" + "- " * 200000 + "x\n"),
        # (12,000 levels, 60 KB: under a class.yaml's 64 KiB cap since round 62, still 120 times the depth refused)
        f"{CLASS}/class.yaml": _in_table(
            "class", ".yaml", lambda t: t + "deep: " + "{a: " * 12000 + "1" + "}" * 12000 + "\n"
        ),
    }
    roots = []
    for i, edit in enumerate(cases.values()):
        root = _copy(tracked, tmp_path / str(i))
        edit(root)
        roots.append(str(root))
    script = (
        "import sys\nfrom pathlib import Path\nfrom neurobrix import tables\nfrom neurobrix.errors import TablesError\n"
        "for root in sys.argv[1:]:\n    tables.clear_cache()\n    try:\n        loaded = tables.load(Path(root))\n"
        "        [loaded.index('interpreter', k) for k in loaded.kernels('interpreter')]\n"
        "    except TablesError as exc:\n        print(str(exc).replace(chr(10), '|'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *roots],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    said = done.stdout.splitlines()
    assert len(said) == len(cases), said
    for line, (root, name) in zip(said, zip(roots, cases)):
        assert line.startswith(f"{root}/{name}:") and "nested more than 100 levels deep" in line, line
