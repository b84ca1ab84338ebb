"""The thirty-first round, adversarial on the runtime's inputs: a record's top level beyond what the fast path reads.
`run`, `doctor`, `warmup` and `conformance check` read a record's provenance stack and its proofs' entry digests with
a line scan of the record as certify writes it (strict rounds 28-30); `tables verify` parses it in full. A second
top-level key after the entries (a second `provenance:` saying another Triton, in any YAML spelling), a second
document, a header key named twice in another spelling, or a digest line the scan read twice or out of its proof,
passed the scan and were refused by the parse. Every case is a copy of the shipped interpreter class, the record
edited and TRACKED.yaml rewritten as `conformance track` does; nothing is launched."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import REPO, retrack
from store_fixtures import config_dict, make_checkpoint

from neurobrix import cli, doctor, tables
from neurobrix.errors import TablesError

CLASS, KERNEL = "interpreter", "rms_norm"
OTHER = "{torch: 2.13.0+cpu, triton: 3.0.0}"  # the stack a second provenance states: one no index claims


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    tables.clear_cache()
    return root


def _write(root: Path, text: str) -> None:
    tables.proofs_path(root, CLASS, KERNEL).write_text(text, encoding="utf-8", newline="")
    retrack(root)
    tables.clear_cache()


def _refusals(root: Path) -> tuple[bool, bool]:
    """Whether `tables verify` (the record parsed in full) and the runtime (the index loaded, as run loads it) refuse
    the record of KERNEL."""
    verify = any(p.path == f"{CLASS}/{KERNEL}" for p in tables.verify_all(tables.load(root)))
    tables.clear_cache()
    try:
        tables.load(root).index(CLASS, KERNEL)
        run = False
    except TablesError:
        run = True
    tables.clear_cache()
    return verify, run


def _after_entries(text: str) -> dict[str, str]:
    """A top-level key after the entries, in each spelling YAML reads as one; a second document; a line break a
    line scan does not see."""
    body = text.removesuffix("\n")
    second = text.index("\n- domain:", text.index("\n- domain:") + 1)
    return {
        "second provenance": f"{text}provenance:\n  torch: 2.13.0+cpu\n  triton: 3.0.0\n",
        "double-quoted key": f'{text}"provenance": {OTHER}\n',
        "single-quoted key": f"{text}'provenance': {OTHER}\n",
        "escaped key": f'{text}"\\x70rovenance": {OTHER}\n',
        "space before the colon": f"{text}provenance : {OTHER}\n",
        "complex key": f"{text}? provenance\n: {OTHER}\n",
        "tagged key": f"{text}!!str provenance: {OTHER}\n",
        "flow mapping": f"{text}{{provenance: {OTHER}}}\n",
        "second entries": f"{text}entries: []\n",
        "second format": f"{text}format: 3\n",
        "second class": f"{text}class: {CLASS}\n",
        "second kernel": f"{text}kernel: {KERNEL}\n",
        "a key starting with a dash": f"{text}-provenance: {OTHER}\n",
        "one space in": f"{text} provenance: {OTHER}\n",
        "second document": f"{text}---\nprovenance: {OTHER}\n",
        "document end, then another": f"{text}...\n---\nformat: 3\n",
        "between the entries": f"{text[:second]}\nprovenance: {OTHER}{text[second:]}",
        "after a carriage return": f"{body}\rprovenance: {OTHER}\n",
        "after a next-line (NEL)": f"{body}\x85provenance: {OTHER}\n",
        "after a line separator": f"{body}\u2028provenance: {OTHER}\n",
        "after a paragraph separator": f"{body}\u2029provenance: {OTHER}\n",
    }


def _elsewhere(text: str) -> dict[str, str]:
    """The header's keys named twice or added in spellings the old scan passed over, and digest lines it misread."""
    first = text.index("\n  proof:\n    entry: ") + len("\n  proof:\n")
    line = text[first : text.index("\n", first) + 1]
    date = text.index("\n  date: ")
    return {
        "quoted provenance in the header": text.replace("\nentries:\n", f'\n"provenance": {OTHER}\nentries:\n'),
        "document end before the entries": text.replace("\nentries:\n", "\n...\nentries:\n"),
        "an unknown header key": text.replace("\nentries:\n", "\nnotes: hand-edited\nentries:\n"),
        "another kernel named": text.replace(f"\nkernel: {KERNEL}\n", "\nkernel: silu_mul\n"),
        "the format as 3.0": text.replace("\nformat: 3\n", "\nformat: 3.0\n"),
        "a provenance without its date": text[:date] + text[text.index("\n", date + 1) :],
        "a digest named twice": text[:first] + line + line + text[first + len(line) :],
        "a digest in the domain": text[:first].replace("\n- domain:\n", f"\n- domain:\n{line}", 1)
        + text[first + len(line) :],
    }


def _accepted(text: str) -> dict[str, str]:
    """What YAML reads as the same record: both accept it (the runtime parses it: not certify's layout)."""
    return {
        "a comment after the entries": f"{text}# reviewed\n",
        "a blank line after the entries": f"{text}\n",
        "a document end after the entries": f"{text}...\n",
        "a document start": f"---\n{text}",
    }


def test_the_runtime_refuses_a_record_exactly_where_tables_verify_does(tmp_path):
    """Before: each record of `_after_entries` and `_elsewhere` was refused by `tables verify` and loaded by the
    runtime (a second provenance saying Triton 3.0.0 after the entries, the first one read; a digest line the scan
    counted once or read inside the domain). Now the runtime reads a record with its line scan only when it is in
    certify's layout (header parsed alone, nothing top-level after the entries) and parses any other, so that both
    refuse each of them, and both accept the records YAML reads as the same one."""
    root = _copy(tmp_path)
    text = tables.proofs_path(root, CLASS, KERNEL).read_text(encoding="utf-8")
    assert _refusals(root) == (False, False)
    cases = {**_after_entries(text), **_elsewhere(text)}
    assert len(set(cases.values())) == len(cases) and text not in cases.values()
    wrong = {}
    for name, edited in cases.items():
        _write(root, edited)
        if _refusals(root) != (True, True):
            wrong[name] = _refusals(root)
    for name, edited in _accepted(text).items():
        _write(root, edited)
        if _refusals(root) != (False, False):
            wrong[name] = _refusals(root)
    assert not wrong, wrong  # name: (tables verify refused, the runtime refused)


def test_run_warmup_and_doctor_refuse_a_second_provenance_after_the_entries(tmp_path, monkeypatch, capsys):
    """End to end: the record with a second `provenance:` after its entries saying Triton 3.0.0. Before: `run`
    generated, `warmup` compiled and `doctor` passed on it (the header's provenance read). Now each refuses it with
    the parse's message, naming the record, the line and the key (exit 3), as `tables verify` does."""
    root = _copy(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    source = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(source)]) == 0
    text = tables.proofs_path(root, CLASS, KERNEL).read_text(encoding="utf-8")
    _write(root, _after_entries(text)["second provenance"])
    capsys.readouterr()

    def refused(message: str) -> None:
        assert len(message.strip().splitlines()) == 1, message
        assert f"{KERNEL}.proofs.yaml:" in message and "found the key 'provenance' twice" in message, message

    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"])
    assert exit_.value.code == 3
    refused(capsys.readouterr().err)
    tables.clear_cache()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["warmup", "--model", "tiny"])
    assert exit_.value.code == 3
    refused(capsys.readouterr().err)
    tables.clear_cache()
    kernels = [f for f in doctor.diagnose() if f.name == "kernels"]
    assert kernels and kernels[0].status == doctor.FAIL
    refused(kernels[0].value)
    tables.clear_cache()
    assert cli.main(["tables", "verify"]) == 3
    assert "found the key 'provenance' twice" in capsys.readouterr().err


def test_the_shipped_records_stay_on_the_fast_path(monkeypatch):
    """Every shipped record is in certify's layout (read without a parse), with the stack and digests the full parse
    reads; the nvidia-h200 class's indexes load without parsing a record, well under a second."""
    import yaml

    from neurobrix.schema import stack_of

    for path in sorted((REPO / "tables").glob("*/*.proofs.yaml")):
        text = path.read_text(encoding="utf-8")
        layout = tables._record_layout(text, path.parent.name, path.name.removesuffix(tables.PROOFS_SUFFIX))
        data = yaml.load(text, tables.SAFE_LOADER)
        entries = [e["proof"]["entry"] for e in data["entries"]]
        assert layout == (stack_of(data["provenance"]), entries, data["provenance"]["device"]), path
    loaded = tables.load(REPO / "tables")
    monkeypatch.setattr(tables, "parse_proofs", lambda *a, **k: pytest.fail("a record was parsed"))
    start = time.perf_counter()
    for class_id in loaded.classes:
        for kernel in loaded.kernels(class_id):
            assert loaded.index(class_id, kernel) is not None
    assert time.perf_counter() - start < 1.0


# ESC ] 52 writes the terminal's clipboard (a command a user then pastes); CR and ESC [ 2 K rewrite the line shown
HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\r\x1b[2Kneurobrix: imported"


def _obeyed(text: str) -> list[str]:
    """The characters of ``text`` a terminal obeys rather than prints (line feeds ending lines aside)."""
    return [c for c in text.replace("\n", "") if c != "\t" and (ord(c) < 32 or 0x7F <= ord(c) <= 0x9F)] + [
        c for c in text if c in "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    ]


def test_what_a_checkpoint_or_a_folder_name_says_reaches_the_terminal_as_text(tmp_path, monkeypatch, capsys):
    """Before: a config.json naming the architecture `Evil<ESC>]52;...<BEL><CR><ESC>[2K...` (a hub repository's
    file) was quoted raw in the import's error, which set the terminal's clipboard and overwrote the line with
    "neurobrix: imported"; a checkpoint folder named so was stored under that name, printed raw by the import, its
    progress bar and every `neurobrix list`, as was a source path holding one. Now the error is one line, each such
    character written as its escape; such a folder name is refused (exit 2), nothing stored; `list` escapes them."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    # a model_type outside the family: a family one runs its model whatever architectures names (text round 49)
    config = {**config_dict(), "model_type": "gpt2", "architectures": [f"Evil{HOSTILE}"]}
    source = make_checkpoint(tmp_path / "src" / "evil", config=config, use_transformers=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["import", str(source)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and not _obeyed(err), err
    assert "architecture Evil\\x1b]52;c;cm0gLXJmIH4=\\x07\\r\\x1b[2Kneurobrix: imported is outside" in err, err

    named = make_checkpoint(tmp_path / "src" / f"tiny{HOSTILE}", config=config_dict(), use_transformers=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["import", str(named)])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2, out + err
    assert err.count("\n") == 1 and not _obeyed(out + err) and "the folder name tiny\\x1b]52" in err, err
    assert not (tmp_path / "home" / "models").exists() or not any((tmp_path / "home" / "models").iterdir())

    for bidi in ("\u202e", "\u2066", "\u2028"):  # a right-to-left override shows "tiny" reversed; a line separator
        odd = make_checkpoint(tmp_path / "src" / f"a{bidi}b", config=config_dict(), use_transformers=False)
        with pytest.raises(SystemExit):
            cli.main(["import", str(odd)])
        assert not _obeyed(capsys.readouterr().err)

    inside = make_checkpoint(tmp_path / f"dl{HOSTILE}" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(inside)]) == 0  # the name is "tiny"; its source path holds the characters
    capsys.readouterr()
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert not _obeyed(out) and f"{tmp_path}/dl\\x1b]52;c;" in out, out


def test_doctor_prints_what_a_finding_quotes_as_text(tmp_path, monkeypatch, capsys):
    """Before: `doctor` printed each finding's value raw, so a tables folder (NEUROBRIX_TABLES) or a message quoting
    one whose name holds ESC or CR rewrote its report. Now each line of a value is printed with such characters
    escaped, its own line breaks kept."""
    root = tmp_path / f"t{HOSTILE}"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    assert cli.main(["doctor"]) in (0, 1)
    out = capsys.readouterr().out
    assert not _obeyed(out) and "t\\x1b]52;c;" in out, out
    assert doctor.render([doctor.Finding("a", doctor.FAIL, f"one{HOSTILE}\ntwo")]).count("\n") == 3


def test_a_checkpoint_path_that_is_no_utf8_is_named_as_such(tmp_path, monkeypatch, capsys):
    """Before: a checkpoint folder whose name holds a byte that is no UTF-8 (b"tiny\\xff", as a copy from another
    system leaves it) was refused as "not a valid tokenizer.json ... fetch the checkpoint again", a download that was
    whole; now the path is named as what it is (exit 2), nothing stored."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    made = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    for name in (b"tiny\xff", b"tiny"):
        parent = tmp_path / os.fsdecode(b"dl\xfe") if name == b"tiny" else tmp_path / "src"
        parent.mkdir(exist_ok=True)
        folder = parent / os.fsdecode(name)
        made = made.rename(folder)
        with pytest.raises(SystemExit) as exit_:
            cli.main(["import", str(folder)])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.count("\n") == 1, err
        assert "the path is not UTF-8 text" in err and "tokenizer.json" not in err, err
    assert not (tmp_path / "home" / "models").exists() or not any((tmp_path / "home" / "models").iterdir())
