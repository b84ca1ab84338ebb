"""The sixty-third round, adversarial on the strict runtime (docs/strictness-rounds.md).

First, what round 62 left: ``python -m conformance check``, ``certify``, ``reformat``, ``schemas`` and
``conformance.bind`` escaped their paths with no test of their own. Every place they print a user path, a table's or a
class's name, an environment variable's value or a file's content, given what a terminal obeys (round 62's hostile
parts), must print it escaped, on its line. Found and fixed: argparse's own errors (every command of ``neurobrix``,
``python -m conformance`` and the gate) printed the words given raw (an argument no option takes, a ``--json`` whose
folder is missing); check's line of a resumed report printed its file's name and its ``seconds`` as given; the
command that finishes a check stopped at its time limit held NEUROBRIX_TABLES and the report's path raw; the re-proof
check records and the lines of ``--record`` went through ``print`` itself (the re-proof's path under NEUROBRIX_HOME
raw); ``schemas --check`` listed stale paths raw and ``reformat`` the class as given; ``conformance.bind`` ended in a
traceback on a record holding a byte no UTF-8 decodes or on a write the machine refused.

Then a new class of input: a lone surrogate (``"\\ud800"``, half of a UTF-16 pair, an escape a JSON text may write and
no Unicode text holds) in the checkpoint's JSON files. Python's reader returns it; the tokenizers library, handed it as
a token, failed: ``run`` ended in a UnicodeEncodeError traceback ("surrogates not allowed") for a special token of
tokenizer_config.json or special_tokens_map.json, an added token, an extra special token; elsewhere it was taken or
refused by another check. ``import`` refuses it now wherever it is, naming the file and the field (exit 2), and so does
the tokenizer's read of a model stored before.

No GPU, no subprocess: the interpreter class's shipped tables copied and tracked, and tiny checkpoints.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, retrack
from store_fixtures import config_dict, make_checkpoint

from neurobrix import stack, store, tables
from neurobrix.errors import _UNPRINTABLE, printable

CLASS = "interpreter"

# what a terminal obeys rather than prints (errors.printable's set), and bytes no UTF-8 decodes: round 62's values
HOSTILE = {
    "line-feed": "a\nb",
    "carriage-return": "x\rtables verified",
    "screen-clear": "\x1b[2J\x1b[H",
    "osc52-clipboard": "\x1b]52;c;aGk=\x07",
    "bell": "\x07",
    "backspace": "abc\x08\x08\x08",
    "delete": "\x7f",
    "c1-csi": "\x9b2J",
    "right-to-left-override": "\u202enosj",
    "left-to-right-isolate": "\u2066x\u2069",
    "arabic-letter-mark": "\u061c",
    "right-to-left-mark": "\u200f",
    "line-separator": "\u2028",
    "paragraph-separator": "\u2029",
    "not-utf8": os.fsdecode(b"\xff\xfe"),
}
ALL = "x\x1b[2J\u202e\ny\rz"  # several at once: a screen clear, an override, a line feed, a carriage return


def _quiet(text: str) -> None:
    """Nothing a terminal obeys in ``text`` but its line feeds."""
    assert _UNPRINTABLE.search(text.replace("\n", "")) is None, ascii(text)


def _run(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    tables.clear_cache()
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as ended:  # argparse's refusals end so
        code = ended.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _conformance(argv, capsys):
    from conformance.__main__ import main

    return _run(main, argv, capsys)


def _neurobrix(argv, capsys):
    from neurobrix.cli import main

    return _run(main, argv, capsys)


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tracked") / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    return root


# --------------------------------------------------------------------------- argparse's errors quote the words given


@pytest.mark.parametrize("case", HOSTILE)
def test_a_report_path_without_its_folder_is_named_escaped(tmp_path, capsys, case):
    """`check --json DIR/r.json` with DIR missing: argparse's error quoted the path raw (the screen cleared, the line
    split or reversed) before anything was checked. One line now, escaped, exit 2."""
    missing = tmp_path / f"no{HOSTILE[case]}" / "r.json"
    code, out, err = _conformance(["check", "--class", CLASS, "--json", str(missing)], capsys)
    _quiet(err)
    last = err.splitlines()[-1]
    assert code == 2 and out == "" and last.startswith("python -m conformance check: error: argument --json: "), err
    assert last.endswith(
        f"{printable(str(missing))}: no folder {printable(str(missing.parent))} to write the report into"
    )
    assert not any(line.startswith(printable(str(missing))[-5:]) for line in err.splitlines()[:-1]), err


@pytest.mark.parametrize(
    "tool, argv",
    [
        ("conformance", ["check", "--class", CLASS]),
        ("conformance", ["certify", "--class", CLASS, "--dtypes", "fp32", "--only-missing"]),
        ("conformance", ["reformat", "--class", CLASS]),
        ("conformance", ["schemas", "--check"]),
        ("neurobrix", ["list"]),
        ("neurobrix", ["run", "--model", "tiny", "--prompt", "hi"]),
    ],
)
def test_an_argument_no_option_takes_is_named_escaped(capsys, tool, argv):
    """`unrecognized arguments: ...` quoted the word raw, in every command of both tools (and the gate's: one
    parser)."""
    code, out, err = (_neurobrix if tool == "neurobrix" else _conformance)([*argv, ALL], capsys)
    _quiet(err)
    assert code == 2 and err.splitlines()[-1].endswith(f"error: unrecognized arguments: {printable(ALL)}"), err


def test_the_gate_names_such_an_argument_escaped(capsys):
    from gate.cli import build_parser

    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args(["check", "dist", "--no-smoke", ALL])
    err = capsys.readouterr().err
    _quiet(err)
    assert ended.value.code == 2 and err.splitlines()[-1].endswith(f"unrecognized arguments: {printable(ALL)}"), err


# ----------------------------------------------------------------------------------------------------- check


def _resumable(root: Path, seconds: object) -> dict:
    """A report check --resume carries every entry of the class over from (the ci profile, every entry passed): the
    check then runs no entry, and prints its lines."""
    from conformance import check

    loaded = tables.load(root)
    versions, files = check.fingerprint_inputs(root, CLASS)
    entries = [
        {
            "kernel": k,
            "dtype": d,
            "domain": e.domain.describe(),
            "config": dict(e.config),
            "passed": True,
            "examples": 25,
        }
        for k in loaded.kernels(CLASS)
        for e, d in check.select(loaded.index(CLASS, k), None)
    ]
    return {
        "class": CLASS,
        "profile": "ci",
        "examples_per_entry": 25,
        "fingerprint": check._digest(versions, files),
        "shipped": False,
        "seconds": seconds,
        "entries": entries,
    }


def test_check_names_its_folder_the_report_it_resumed_and_the_reproof_escaped(tracked, tmp_path, monkeypatch, capsys):
    """A check on another stack than the class's, resumed from a report that carries every entry over: its header
    (the --tables folder), its line of the resumed report (the report's file name and the `seconds` it holds, printed
    as given: the line feed split the line), `report written to`, and the re-proof it records under NEUROBRIX_HOME
    (printed with print itself, raw). Each on its line, escaped."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(stack, "running_stack", lambda: stack.Stack("1.0.0", "0.1.0"))  # not the certified stack
    (tmp_path / ALL).mkdir()
    root = shutil.copytree(tracked, tmp_path / ALL / "tables")
    home = tmp_path / f"home{ALL}"
    monkeypatch.setenv(store.HOME_ENV, str(home))
    report = tmp_path / ALL / f"earlier{HOSTILE['osc52-clipboard']}{ALL}.json"
    seconds = f"9\n{HOSTILE['screen-clear']}\u202e"
    report.write_text(json.dumps(_resumable(root.resolve(), seconds)), encoding="utf-8")
    written = tmp_path / ALL / "now.json"
    argv = ["check", "--class", CLASS, "--profile", "ci", "--tables", str(root), "--resume", str(report)]
    code, out, err = _conformance([*argv, "--json", str(written)], capsys)
    _quiet(out + err)
    lines = out.splitlines()
    assert code == 0 and written.is_file(), (code, out, err)
    assert lines[0].startswith(f"conformance check of class {CLASS} ({printable(str(root.resolve()))}), profile ci")
    resumed = [line for line in lines if "carried over from" in line]
    assert len(resumed) == 1 and resumed[0].startswith("  "), out
    assert f"carried over from {printable(report.name)} (same" in resumed[0], out
    assert f"bounds; {printable(seconds)} s there), 0 checked in this run" in resumed[0], out
    assert f"report written to {printable(str(written))}" in lines, out
    reproof = [line for line in lines if line.startswith("recorded a local re-proof")]
    assert len(reproof) == 1 and f" in {printable(str(stack.reproof_path(CLASS)))}: " in reproof[0], out
    assert stack.reproof_path(CLASS).is_file()


@pytest.mark.parametrize("case", ["line-feed", "screen-clear", "line-separator"])
def test_the_command_finishing_a_stopped_check_is_one_line(tmp_path, monkeypatch, capsys, case):
    """The command a check stopped at its time limit prints to finish it: NEUROBRIX_TABLES (quoted by shlex, its line
    feed kept inside the quotes) and the report's path, printed raw: the command split in two, its escape obeyed."""
    from conformance.__main__ import _print, _resume_hint

    tables_env = str(tmp_path / f"t{HOSTILE[case]}")
    monkeypatch.setenv(tables.ENV_VAR, tables_env)
    report = str(tmp_path / f"r{HOSTILE[case]}.json")
    argv = ["check", "--class", CLASS, "--max-minutes", "1", "--json", report]
    capsys.readouterr()
    _print(_resume_hint(argparse.Namespace(json=report, argv=argv, tables=None)))
    out = capsys.readouterr().out
    _quiet(out)
    assert len(out.splitlines()) == 1 and out.startswith("finish it (its passed entries carried over): "), out
    assert out.count(printable(report)) == 2 and printable(tables_env) in out, out


def test_check_refusals_quoting_what_was_given_are_one_line(tracked, tmp_path, monkeypatch, capsys):
    """Pinned (escaped already): a --tables naming no folder, a --resume that is no report (its path, and one whose
    content is no JSON), a --kernel, --where or --variant given hostile; each one line, escaped, exit 2."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    bad = tmp_path / f"r{ALL}.json"
    bad.write_text(f"{ALL}", encoding="utf-8")
    cases = [
        ["--tables", str(tmp_path / f"none{ALL}")],
        ["--tables", str(tracked), "--resume", str(tmp_path / f"none{ALL}.json")],
        ["--tables", str(tracked), "--resume", str(bad)],
        ["--tables", str(tracked), "--kernel", ALL],
        ["--tables", str(tracked), "--where", f"M={ALL}"],
        ["--tables", str(tracked), "--variant", ALL],
    ]
    for extra in cases:
        code, out, err = _conformance(["check", "--class", CLASS, *extra], capsys)
        _quiet(err)
        assert code == 2 and len(err.splitlines()) == 1 and err.startswith("conformance: error: "), (extra, err)


# --------------------------------------------------------------------------------------------------- certify


def test_certify_names_its_folder_and_a_config_escaped(tracked, tmp_path, monkeypatch, capsys):
    """`certified N entries into FOLDER` (a --tables under a hostile folder, every domain certified already), and a
    --config file missing or holding what a terminal obeys in its fields (file content quoted by the refusal)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    (tmp_path / ALL).mkdir()
    root = shutil.copytree(tracked, tmp_path / ALL / "tables")
    argv = ["certify", "--class", CLASS, "--dtypes", "fp32", "--kernels", "silu_mul", "--only-missing", "--no-check"]
    code, out, err = _conformance([*argv, "--tables", str(root)], capsys)
    _quiet(out + err)
    assert code == 0 and out.splitlines()[0] == f"certified 0 entries into {printable(str(root / CLASS))}", out
    hostile = tmp_path / f"config{ALL}.json"
    hostile.write_text(json.dumps(config_dict(model_type=ALL, hidden_act=ALL)), encoding="utf-8")
    for config in (tmp_path / f"none{ALL}.json", hostile):
        code, out, err = _conformance([*argv, "--tables", str(root), "--config", str(config)], capsys)
        _quiet(err)
        assert code == 2 and len(err.splitlines()) == 1 and printable(str(config)) in err, err


# ---------------------------------------------------------------------------------------------- reformat, schemas


def test_reformat_names_a_class_folder_so_named_escaped(tracked, tmp_path, capsys):
    """`reformat --class C` where C's folder holds nothing to rewrite: the class was printed as given, its line feed
    splitting the line; a --tables under a hostile folder naming no such class: one line, escaped."""
    (tmp_path / ALL).mkdir()
    root = shutil.copytree(tracked, tmp_path / ALL / "tables")
    (root / ALL).mkdir()
    shutil.copy(root / CLASS / tables.CLASS_NAME, root / ALL / tables.CLASS_NAME)
    code, out, err = _conformance(["reformat", "--class", ALL, "--tables", str(root)], capsys)
    _quiet(out)
    assert code == 0 and out.splitlines() == [
        f"nothing to rewrite: every kernel table of {printable(ALL)} is in the current format"
    ], out
    code, out, err = _conformance(["reformat", "--class", f"no{ALL}", "--tables", str(root)], capsys)
    _quiet(err)
    assert code == 2 and len(err.splitlines()) == 1 and printable(str(root)) in err, err


def test_schemas_names_its_folder_escaped(tmp_path, monkeypatch, capsys):
    """The generated validators of a checkout under a hostile folder: `--check` listed the stale ones raw (a line feed
    splitting the line), and `wrote` (escaped already) pinned."""
    from neurobrix import schema

    package = tmp_path / ALL / "neurobrix"
    (package / "_schemas").mkdir(parents=True)
    monkeypatch.setattr(schema, "__file__", str(package / "schema.py"))
    code, out, err = _conformance(["schemas", "--check"], capsys)
    _quiet(err)
    assert code == 1 and len(err.splitlines()) == 1, err
    assert err.count(printable(str(package / "_schemas"))) == len(schema.SCHEMAS), err
    code, out, err = _conformance(["schemas"], capsys)
    _quiet(out)
    assert code == 0 and out.splitlines() == [
        f"wrote {printable(str(package / '_schemas' / f'{kind}_format.py'))}" for kind in schema.SCHEMAS
    ], out


# --------------------------------------------------------------------------------------------------------- bind


def _unbound(tracked: Path, where: Path) -> Path:
    """The tables as certify wrote them before proofs carried their entry's digest (tests/test_planted25.py)."""
    import re

    root = shutil.copytree(tracked, where)
    for path in sorted((root / CLASS).glob("*.proofs.yaml")):
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"(?<=\n  proof:\n)    entry: '?[0-9a-f]{16}'?\n", "", text), encoding="utf-8")
    retrack(root)
    return root


def _bind(argv, capsys):
    from conformance import bind

    return _run(bind.main, argv, capsys)


def test_bind_names_what_it_bound_and_refused_escaped(tracked, tmp_path, capsys):
    """Pinned: `bound PATH` under a hostile folder, one line a record; a folder that is none; a record holding an
    escape (its content refused naming its line)."""
    (tmp_path / ALL).mkdir()
    root = _unbound(tracked, tmp_path / ALL / "tables")
    code, out, err = _bind([str(root)], capsys)
    _quiet(out)
    records = sorted((root / CLASS).glob("*.proofs.yaml"))
    assert code == 0 and out.splitlines() == [f"bound {printable(str(path))}" for path in records], out
    code, out, err = _bind([str(tmp_path / f"none{ALL}")], capsys)
    _quiet(err)
    assert code == 3 and err.splitlines() == [
        f"error: {printable(str(tmp_path / f'none{ALL}'))}: not a tables folder "
        "(no class folder with a class.yaml in it)"
    ], err
    root = _unbound(tracked, tmp_path / "escape" / "tables")
    with (root / CLASS / "rms_norm.proofs.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"# {HOSTILE['screen-clear']}{HOSTILE['right-to-left-override']}\n")
    code, out, err = _bind([str(root)], capsys)
    _quiet(err)
    assert code == 3 and len(err.splitlines()) == 1 and "rms_norm.proofs.yaml:" in err, err


def test_bind_refuses_a_record_not_utf8_in_one_line(tracked, tmp_path, capsys):
    """A record holding a byte no UTF-8 decodes: bind read its text before reading it as a table, and ended in a
    UnicodeDecodeError traceback. Refused as the table read refuses it now (exit 3), nothing written."""
    root = _unbound(tracked, tmp_path / "tables")
    with (root / CLASS / "rms_norm.proofs.yaml").open("ab") as fh:
        fh.write(b"# \xff\xfe\n")
    before = {p: p.read_bytes() for p in (root / CLASS).iterdir()}
    code, out, err = _bind([str(root)], capsys)
    _quiet(err)
    assert code == 3 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {root / CLASS / 'rms_norm.proofs.yaml'}: ") and "utf-8" in err, err
    assert {p: p.read_bytes() for p in (root / CLASS).iterdir()} == before


def test_bind_names_a_write_the_machine_refuses_in_one_line(tracked, tmp_path, monkeypatch, capsys):
    """A write refused (a read-only file system: EROFS, as the machine raises it) ended in a traceback: one line naming
    the file, exit 1, as `python -m conformance` ends."""
    import errno

    root = _unbound(tracked, tmp_path / ALL / "tables")

    def refused(self, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    monkeypatch.setattr(Path, "write_text", refused)
    code, out, err = _bind([str(root)], capsys)
    _quiet(err)
    assert code == 1 and len(err.splitlines()) == 1 and err.startswith("error: Read-only file system: "), err
    assert printable(str(root / CLASS)) in err, err


# ---------------------------------------------- the new class: a lone surrogate in the checkpoint's JSON files

# (file, what is set, the field the refusal names); json.dumps writes each lone surrogate as its \u escape
SURROGATES = {
    "tokenizer-config-eos": ("tokenizer_config.json", {"eos_token": "\ud800"}, "eos_token"),
    "tokenizer-config-bos-inside": ("tokenizer_config.json", {"bos_token": "x\udfffy"}, "bos_token"),
    "tokenizer-config-pad": ("tokenizer_config.json", {"pad_token": "\udbff"}, "pad_token"),
    "tokenizer-config-eos-object": (
        "tokenizer_config.json",
        {"eos_token": {"content": "\udcff", "__type": "AddedToken"}},
        "eos_token.content",
    ),
    "tokenizer-config-decoder": (
        "tokenizer_config.json",
        {"added_tokens_decoder": {"10": {"content": "\ud800", "special": True}}},
        "added_tokens_decoder.10.content",
    ),
    "tokenizer-config-extra": (
        "tokenizer_config.json",
        {"extra_special_tokens": ["ok", "\ud800"]},
        "extra_special_tokens[1]",
    ),
    "tokenizer-config-template": ("tokenizer_config.json", {"chat_template": "{{ '\ud800' }}"}, "chat_template"),
    "tokenizer-config-class": ("tokenizer_config.json", {"tokenizer_class": "\ud800"}, "tokenizer_class"),
    "tokenizer-config-key": ("tokenizer_config.json", {"\ud800": 1}, "the key \\ud800"),
    "tokenizer-config-control-tokens": (
        "tokenizer_config.json",
        {"chat_control_tokens": ["\ud800"]},
        "chat_control_tokens[0]",
    ),
    "special-tokens-map": ("special_tokens_map.json", {"eos_token": "\ud800"}, "eos_token"),
    "special-tokens-map-object": ("special_tokens_map.json", {"bos_token": {"content": "\ud800"}}, "bos_token.content"),
    "special-tokens-map-additional": (
        "special_tokens_map.json",
        {"additional_special_tokens": ["\udfff"]},
        "additional_special_tokens[0]",
    ),
    "added-tokens": ("added_tokens.json", {"\ud800": 40}, "the key \\ud800"),
    "generation-stop-strings": ("generation_config.json", {"stop_strings": ["\ud800"]}, "stop_strings[0]"),
    "generation-key": ("generation_config.json", {"\ud800": 1}, "the key \\ud800"),
    "config-model-type": ("config.json", {"model_type": "\ud800"}, "model_type"),
    "config-architectures": ("config.json", {"architectures": ["\ud800"]}, "architectures[0]"),
    "config-rope-type": (
        "config.json",
        {"rope_scaling": {"rope_type": "\ud800", "factor": 2.0}},
        "rope_scaling.rope_type",
    ),
    "config-hidden-act": ("config.json", {"hidden_act": "\ud800"}, "hidden_act"),
    "config-torch-dtype": ("config.json", {"torch_dtype": "\ud800"}, "torch_dtype"),
    "config-key": ("config.json", {"\ud800": 1}, "the key \\ud800"),
}
# what `run` did before (the tiny model, stored by the import of before): a traceback, taken, or another refusal
TRACEBACK = {
    "tokenizer-config-eos",
    "tokenizer-config-bos-inside",
    "tokenizer-config-pad",
    "tokenizer-config-eos-object",
    "tokenizer-config-decoder",
    "tokenizer-config-extra",
    "special-tokens-map",
    "special-tokens-map-object",
    "special-tokens-map-additional",
    "added-tokens",
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("ck") / "tiny", config=config_dict())


def _edited(checkpoint: Path, where: Path, name: str, values: dict) -> Path:
    folder = shutil.copytree(checkpoint, where)
    path = folder / name
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    path.write_text(json.dumps({**data, **values}), encoding="utf-8")  # (ensure_ascii: the \ud800 escape)
    return folder


@pytest.mark.parametrize("case", SURROGATES)
def test_import_refuses_a_lone_surrogate_naming_the_file_and_field(checkpoint, tmp_path, monkeypatch, capsys, case):
    name, values, field = SURROGATES[case]
    folder = _edited(checkpoint, tmp_path / "m", name, values)
    monkeypatch.setenv(store.HOME_ENV, str(tmp_path / "home"))
    code, out, err = _neurobrix(["import", str(folder)], capsys)
    _quiet(err)
    assert code == 2 and err.splitlines() == [
        f"neurobrix: error: {folder / name}: {field} holds a lone surrogate (a \\u escape of half a UTF-16 pair, which "
        "no Unicode text holds): the tokenizers library fails on such text, as transformers' tokenizer does where it "
        "is a token; fix the file"
    ], err
    assert not (tmp_path / "home" / "models" / "m").exists()


@pytest.mark.parametrize("case", sorted(c for c in SURROGATES if SURROGATES[c][0] != "config.json"))
def test_the_tokenizer_refuses_it_in_a_model_stored_before(checkpoint, tmp_path, case):
    """A model an older import stored, read by run's tokenizer (the ten that ended in a traceback among them): a
    TokenizerError naming the file and field, exit 2 (not damage: the file is as it was imported)."""
    from neurobrix.tokenizer import Tokenizer, TokenizerError, TokenizerFileError

    name, values, field = SURROGATES[case]
    folder = _edited(checkpoint, tmp_path / "m", name, values)
    with pytest.raises(TokenizerError) as caught:
        Tokenizer(folder)
    assert not isinstance(caught.value, TokenizerFileError) and caught.value.exit_code == 2
    assert str(caught.value).startswith(f"{folder / name}: {field} holds a lone surrogate"), str(caught.value)


def test_a_surrogate_pair_and_an_escaped_backslash_are_taken(checkpoint, tmp_path, monkeypatch, capsys):
    """The control: a pair (an emoji, "\\ud83d\\ude00") is one character, and "\\\\ud800" a backslash and text."""
    values = {"chat_template": "{{ '\U0001f600' }}\\ud800{{ messages[0]['content'] }}"}
    folder = _edited(checkpoint, tmp_path / "m", "tokenizer_config.json", values)
    assert "\\ud83d\\ude00" in (folder / "tokenizer_config.json").read_text(encoding="utf-8")
    monkeypatch.setenv(store.HOME_ENV, str(tmp_path / "home"))
    code, out, err = _neurobrix(["import", str(folder)], capsys)
    assert code == 0, err


def test_a_lone_surrogate_written_in_upper_case_hex_is_refused(checkpoint, tmp_path, monkeypatch, capsys):
    """JSON reads `\\uDC00` as `\\udc00` (json.dumps writes lower case, a hand or another writer upper case)."""
    folder = shutil.copytree(checkpoint, tmp_path / "m")
    path = folder / "tokenizer_config.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"</s>"', '"\\uDC00"'), encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))["eos_token"] == "\udc00"
    monkeypatch.setenv(store.HOME_ENV, str(tmp_path / "home"))
    code, out, err = _neurobrix(["import", str(folder)], capsys)
    assert code == 2 and err.startswith(f"neurobrix: error: {path}: eos_token holds a lone surrogate"), err


def test_a_shard_index_naming_a_shard_by_a_lone_surrogate_is_refused(tmp_path, monkeypatch, capsys):
    """model.safetensors.index.json's weight_map, one tensor's shard named "\\ud800.safetensors" (no file can be)."""
    folder = make_checkpoint(tmp_path / "sharded", config=config_dict(), shards=2)
    path = folder / "model.safetensors.index.json"
    index = json.loads(path.read_text(encoding="utf-8"))
    index["weight_map"]["model.norm.weight"] = "\ud800.safetensors"
    path.write_text(json.dumps(index), encoding="utf-8")
    monkeypatch.setenv(store.HOME_ENV, str(tmp_path / "home"))
    code, out, err = _neurobrix(["import", str(folder)], capsys)
    assert code == 2 and err.startswith(
        f"neurobrix: error: {path}: weight_map.model.norm.weight holds a lone surrogate (a \\u escape"
    ), err
