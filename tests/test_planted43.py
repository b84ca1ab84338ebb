"""Round 43 of planted bugs (tests/planted43_plants.py, applied one at a time by tests/planted43_driver.py): the code
merged this session that no round planted. Gate round 49 (gate/report.py's ``shown`` and ``_uncommanded``, the
escaping of every report line for a CI runner; gate/__init__.py's stop line under ``python -m gate``) and strict
round 49 (checkpoint.py's ``name_text`` and ``disk_name``, the tokenizer paths; store.py's names read as UTF-8 text
and the import's permission clearing; cli.py's ``argument_text``, ``utf8_text``, standard output's error handler and
`run`'s strict write; stack.py's engine cache folder made closed to others).

37 plants, each run against the test files a contributor would run for its module, narrowed by ``-k`` (gate round 49's,
round 45's shadowing tests, strict round 49's, test_store.py's, text round 34's standard-output test,
test_engine_cache.py's; 3 to 244 s a plant): 20 were caught before the round (the ``##`` escape narrowed to ``##[``,
leading white space not trimmed or the escape only where there is none, the stop line's ``##`` kept or its control
characters printed raw; names read as the locale decodes them, either tokenizer path handed over undecoded, the folder a
model was imported from compared undecoded, the import's name undecoded; an argument's bytes read as Latin-1, standard
output left ``surrogateescape``, `run`'s strict write dropped, ``utf8_text`` not reading its bytes; the store's folder,
a model's folder not cleared; the engine cache's folder left open or not made, its parents never cleared). 17 survived;
14 now fail a test below (checked: each plant against its test alone, in a copy): r03 (a leading ``::`` written
``\\x3a`` with the second colon dropped: no command, another name), i03 (the stop line's escape from its second
character on), c02 (a name's undecodable bytes read as U+FFFD in the C locale: the import refused a ``x\\xff`` folder as
a missing tokenizer.json, "fetch the checkpoint again"), n04 (the import's UTF-8 check with ``surrogateescape``, which
never fails: the same folder refused as holding "a character a terminal obeys"), n01 (an ``org/name`` folder's second
part undecoded: listed DAMAGED in the C locale), a02 (`remove`'s NAME undecoded: a healthy model "was damaged" in its
line), a04 (standard output's handler escaping a file name's bytes rather than writing them back), u04 (every folder
above the store cleared too, those the import did not make: run as root, it made ``/tmp`` 1775), u01 (others' write
cleared only where the group's is set: ``umask 020`` left 0646), u02 (every permission of others cleared), u05 (the chat
templates' folder's files left 0666), u03 and u06 (a hub import's new org folder left 0777; the hub cache's blobs
changed), k01 (the folders made above the engine's cache closed to others' reading). Three are equivalent: r04 (the
report's escapes made after the command escape rather than before: escaping adds only printable ASCII, never ``#`` at an
end nor ``:``, and the white space Python trims before ``::`` holds every character .NET does, so both orders leave no
command, and both read back to the same text), i01 (``isascii`` dropped from the stop line's test: ``str.isprintable``
is false for every category the report escapes and every separator but the space, so a name printed raw holds no escape,
line break or trimmed space, and ``##`` is still replaced; the report's ``shown`` prints printable non-ASCII raw too),
c03 (``disk_name`` strict: text with lone surrogates reaches it only from an argument's bytes that are no UTF-8, under
an ASCII encoding of names, where both callers catch the error and fall back to the text itself, the same file name; no
import stores such a name).

Found and fixed in the clean code (each test below failing before, shown in a copy without the fix): a local re-proof
recorded by `python -m conformance check` under ``umask 000`` (``$NEUROBRIX_HOME/reproofs/``, which `run` takes to
admit a stack no certificate covers) was made 0777 with the record 0666, so any user of the machine could put there a
record of their choosing for another user's runs (every field is computable there); and the sweep's putting back of
a model moved aside made its org folder again with the umask (0777). Both now lose others' write, as the import's
folders do (README says so).

Left open: the stop line prints the checkout's own path raw (the runner's workspace, not a name an attacker
chooses); a ``reproofs`` record or store folder made 0777 before round 49 is not refused when read (round 27 refuses
only a Triton cache folder so).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from store_fixtures import make_checkpoint
from test_strict_round45 import _cli, _hub_layout
from test_strict_round49 import C_LOCALE, NAME, _env, _neurobrix, _ok, _run_argv, source

from gate.report import shown

__all__ = ["source"]  # strict round 49's checkpoint in a folder named tïny

POSIX = pytest.mark.skipif(os.name != "posix", reason="locales, umask and file-name bytes are POSIX's")


def _read_back(escaped: str) -> str:
    """The text an escaped line stands for, read by Python's own reader of string literals (the escapes are
    Python's: ``\\x23``, ``\\x3a``, ``\\n``, ``\\u2028``)."""
    assert '"' not in escaped
    return ast.literal_eval(f'"{escaped}"')


# -- gate round 49: each escaped line is the text it stands for --------------------------------------------------------

COMMANDED = [
    "::debug::x.py",
    "  ::group::gate: PASSED",
    "\u3000::error::x",
    "\t::add-mask::x",
    "neurobrix/##[debug]x.py",
    "###[group]x",
    "##vso[task.setvariable variable=x]y",
    "x\n::debug::y\u2028##[error]z",
]


@pytest.mark.parametrize("text", COMMANDED)
def test_a_report_line_reads_back_as_the_name_it_escapes(text: str) -> None:
    """Survivor r03: the leading ``::`` was written ``\\x3a`` with the second colon dropped (``::debug::x.py`` shown
    as ``\\x3adebug::x.py``, another name), which no runner obeys, so the round's tests passed. The line holds no
    command and reads back, escapes and all, as the name itself."""
    line = shown(text)
    assert "##" not in line and not line.lstrip().startswith("::"), line
    assert _read_back(line) == text, line


TOP_NAMES = ["x\ny.py", "\u00e9t\u00e9.py", "##[debug]x.py", "a\x1b[2Kb.py"]


@POSIX
def test_the_stop_line_names_each_file_as_it_is(tmp_path: Path) -> None:
    """Survivor i03: ``python -m gate``'s stop line wrote each name's escape from its second character on
    (``ascii(n)[2:-1]``): ``x\\ny.py`` printed as ``\\ny.py``, no longer the file to remove. Each name the line
    gives reads back as a file at the checkout's top."""
    top = tmp_path / "top"
    shutil.copytree(REPO / "gate", top / "gate", ignore=shutil.ignore_patterns("__pycache__"))
    for name in TOP_NAMES:
        (top / name).write_text("raise SystemExit(0)\n")
    result = subprocess.run([sys.executable, "-m", "gate", "--help"], cwd=top, capture_output=True, text=True)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    head = f"gate: error: {top}: "
    assert len(lines) == 1 and lines[0].startswith(head), result.stderr
    named = lines[0][len(head) :].split(": code the repository does not hold")[0]
    assert sorted(_read_back(n) for n in named.split(", ")) == sorted(TOP_NAMES), named


# -- strict round 49: names in the C locale ------------------------------------------------------------------------


@POSIX
def test_a_folder_of_bytes_that_are_no_utf8_is_refused_in_the_c_locale_as_in_utf8(tmp_path, source):
    """Survivor c02: ``name_text`` read a name's bytes that are no UTF-8 as U+FFFD (``replace``) rather than keeping
    them (``surrogateescape``), so in the C locale a folder named ``x\\xff`` passed the import's UTF-8 check and the
    tokenizers library was handed a path through ``x\\ufffd``, which does not exist: "not a valid tokenizer.json (No
    such file or directory); fetch the checkpoint again", the wrong cause and advice. The UTF-8 locale's refusal
    (the reference) names the folder's bytes; the C locale's is now the same line. Also survivor n04 (the import's
    UTF-8 check made with ``surrogateescape``, which never fails: such a folder refused, in either locale, as holding
    "a character a terminal obeys")."""
    folder = os.fsencode(tmp_path) + b"/x\xff"
    shutil.copytree(os.fsencode(source), folder)
    answers = []
    for env in (_env(tmp_path / "utf8"), _env(tmp_path / "c", **C_LOCALE)):
        done = _neurobrix(env, "import", folder)
        assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr
        answers.append(done.stderr.splitlines()[-1])
        assert not list((tmp_path / ("c" if len(answers) == 2 else "utf8")).glob("models/*")), done.stderr
    assert answers[0] == answers[1] and b"not UTF-8 text" in answers[0], answers


@POSIX
def test_an_org_model_named_outside_ascii_runs_in_the_c_locale(tmp_path, source):
    """Survivor n01: the store's scan took a hub-style ``org/name`` folder's second part as the locale decoded it,
    so in the C locale a model stored as ``örg/tïny`` was listed DAMAGED and refused by `run`; nothing stored an org
    name outside ASCII. It lists and runs as in the UTF-8 locale (the reference)."""
    home = tmp_path / "home"
    utf8, c = _env(home), _env(home, **C_LOCALE)
    _ok(_neurobrix(utf8, "import", os.fsencode(source)))
    models = os.fsencode(home / "models")
    org_name = "\u00f6rg/" + NAME
    os.mkdir(models + b"/" + "\u00f6rg".encode())
    os.rename(models + b"/" + NAME.encode(), models + b"/" + org_name.encode())
    manifest = models + b"/" + org_name.encode() + b"/neurobrix-model.json"
    data = json.loads(Path(os.fsdecode(manifest)).read_text(encoding="utf-8"))
    data["name"] = org_name
    Path(os.fsdecode(manifest)).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    want = _neurobrix(utf8, *_run_argv(org_name.encode()))
    _ok(want)
    listed = _ok(_neurobrix(c, "list"))
    assert b"\\xf6rg/t\\xefny" in listed and b"DAMAGED" not in listed, listed
    assert _ok(_neurobrix(c, *_run_argv(org_name.encode()))) == want.stdout


@POSIX
def test_remove_in_the_c_locale_removes_the_model_as_it_is(tmp_path, source):
    """Survivor a02: `remove`'s NAME left as the locale decoded it (main reading ``model`` alone as the text it is).
    The store still finds the folder by those bytes, so round 49's test, which checks the folder is gone, passed;
    but the model was loaded under the undecoded name, not its manifest's, and the line said a healthy model "was
    damaged: its manifest was the one of 'tïny'". The line is the UTF-8 locale's (the reference), escaped."""
    home, other = tmp_path / "home", tmp_path / "other"
    for where in (home, other):
        _ok(_neurobrix(_env(where), "import", os.fsencode(source)))
    got = _ok(_neurobrix(_env(home, **C_LOCALE), "remove", NAME.encode("utf-8")))
    want = _ok(_neurobrix(_env(other), "remove", NAME.encode("utf-8")))
    assert got.replace(os.fsencode(home), b"HOME") == want.replace(os.fsencode(other), b"HOME").replace(
        NAME.encode("utf-8"), NAME.encode("ascii", "backslashreplace")
    ), (got, want)


def test_standard_output_writes_a_names_bytes_back_and_escapes_the_rest():
    """Survivor a04: the handler main sets on standard output tried ``backslashreplace`` first, so a file name's
    undecodable bytes (lone surrogates) were written ``\\udcff`` rather than as the bytes they are. Checked on the
    handler itself against the two handlers it is made of."""
    from neurobrix import cli  # noqa: F401  (registers the handler)

    assert "x\udcff".encode("ascii", "neurobrix.shown") == "x\udcff".encode("ascii", "surrogateescape")
    assert NAME.encode("ascii", "neurobrix.shown") == NAME.encode("ascii", "backslashreplace") == b"t\\xefny"


# -- strict round 49: the umask --------------------------------------------------------------------------------------


def _modes(home: Path) -> dict[str, int]:
    return {str(p.relative_to(home)): stat.S_IMODE(p.lstat().st_mode) for p in [home, *home.rglob("*")]}


@POSIX
def test_an_import_under_a_umask_is_the_import_under_that_umask_closed_to_others_writing(tmp_path, source):
    """Survivors u01 (o+w cleared only where the group may write: under ``umask 020`` the weights stayed 0646), u02
    (every permission of others cleared: under ``umask 000`` the store was closed to other users' reading too, where
    the round keeps the umask's other bits) and u05 (only the model folder's top files cleared: a chat template in
    ``additional_chat_templates/`` stayed 0666). The reference is the import under the same umask with others'
    write added (0o020 as 0o022, 0o000 as 0o002), every folder and file alike."""
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(os.fsencode(source), os.fsencode(checkpoint))
    (checkpoint / "additional_chat_templates").mkdir()
    (checkpoint / "additional_chat_templates" / "plain.jinja").write_text("{{ messages[0]['content'] }}")
    for mask in (0o000, 0o020):
        got, want = tmp_path / f"home{mask:o}", tmp_path / f"home{mask | 0o002:o}"
        _ok(_neurobrix(_env(got), "import", str(checkpoint), umask=mask))
        _ok(_neurobrix(_env(want), "import", str(checkpoint), umask=mask | 0o002))
        assert any("additional_chat_templates/" in p for p in _modes(got))
        assert _modes(got) == _modes(want), oct(mask)


@POSIX
def test_an_import_leaves_the_folders_above_the_store_as_they_were(tmp_path, source):
    """Survivor u04: the store's folders were cleared of others' write whether the import made them or not, so the
    folders above NEUROBRIX_HOME lost it too: ``/tmp`` (1777) made 1775 under root, where any other user's ``chmod``
    fails and the import stopped ("cannot create the model store"). Round 49's tests ran as root here and passed
    (the plant stripped this machine's ``/tmp``, put back by hand). A shared folder above the store keeps its mode."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    _ok(_neurobrix(_env(shared / "home"), "import", os.fsencode(source), umask=0o000))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert not stat.S_IMODE((shared / "home").stat().st_mode) & stat.S_IWOTH


def test_an_org_folder_the_import_makes_is_closed_to_others_writing(tmp_path, monkeypatch):
    """Survivor u03: the import's org folder (``org/name``, a hub id's) was cleared only where it existed before
    (the condition flipped), so under ``umask 000`` a new org folder stayed 0777: any user could rename its models
    away. Every local import is of one part, so no test made one."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.models_dir().mkdir(parents=True)
    tmp = store.models_dir() / ".scratch"
    old = os.umask(0)
    try:
        tmp.mkdir()
        store._install(tmp, store.models_dir() / "org" / "model")
    finally:
        os.umask(old)
    assert (store.models_dir() / "org" / "model").is_dir()
    assert stat.S_IMODE((store.models_dir() / "org").stat().st_mode) == 0o777 & ~stat.S_IWOTH


@POSIX
def test_a_hub_import_under_umask_000_closes_its_org_folder_and_leaves_the_hub_cache_alone(
    tmp_path, monkeypatch, capsys
):
    """Survivors u03 (the org folder cleared only where it existed before) and u06 (every file cleared, the hub
    cache's blobs linked into the store among them): a hub id's import, offline from a cache laid out as
    huggingface_hub lays it, under ``umask 000``. The new org folder loses others' write; the blobs, that cache's
    files (round 49 left their permissions to it), keep theirs: the import changes nothing in another program's
    cache, and a blob another user owns could not be changed at all."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    snapshot = _hub_layout("org/a", make_checkpoint(tmp_path / "a"))
    blobs = sorted((snapshot.parent.parent / "blobs").iterdir())
    for blob in blobs:
        os.chmod(blob, 0o666)  # as huggingface_hub writes them under umask 000
    old = os.umask(0)
    try:
        code, out, err = _cli(capsys, "import", "org/a")
    finally:
        os.umask(old)
    assert code == 0, (out, err)
    stored = store.models_dir() / "org" / "a"
    assert any(p.stat().st_nlink > 1 for p in stored.iterdir())  # blobs linked, not copied: else nothing is shown
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o777 & ~stat.S_IWOTH
    assert {b.name: stat.S_IMODE(b.stat().st_mode) for b in blobs} == {b.name: 0o666 for b in blobs}


@POSIX
def test_the_folders_made_above_the_engine_cache_lose_others_writing_only(tmp_path, monkeypatch):
    """Survivors k01 (the folders made above the cache, NEUROBRIX_HOME among them, lost every permission of others,
    closing the store to other users' reading) and k02 (those folders listed once made, so none was cleared and
    NEUROBRIX_HOME stayed 0777 under ``umask 000``): round 49's test looked at the cache folder alone."""
    from neurobrix import stack

    home = tmp_path / "above" / "home"
    monkeypatch.setenv("NEUROBRIX_HOME", str(home))
    for name in stack.CACHE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(stack, "_ENGINE_CACHE_SET", [None])
    old = os.umask(0)
    try:
        stack.use_engine_cache()
    finally:
        os.umask(old)
        os.environ.pop("TRITON_CACHE_DIR", None)
    for made in (tmp_path / "above", home):
        assert stat.S_IMODE(made.stat().st_mode) == 0o777 & ~stat.S_IWOTH, made
    assert stat.S_IMODE((home / stack.ENGINE_CACHE).stat().st_mode) == 0o770


# -- found in the clean code: what else the engine and the store make, under umask 000 ---------------------------------


@POSIX
def test_a_reproof_recorded_under_umask_000_is_closed_to_others_writing(tmp_path, monkeypatch):
    """Defect (fixed): `python -m conformance check` records a local re-proof in ``$NEUROBRIX_HOME/reproofs/``,
    which `run` takes to admit a stack no certificate covers. Under ``umask 000`` the folder was made 0777 and the
    record 0666, so any user of the machine could replace it with one naming their stack as checked (every field is
    computable there: versions, Triton's build hash, the tables' and kernels' digests) for another user's runs. Now
    the folders it makes and the record lose others' write, as under ``umask 002``."""
    from neurobrix import stack, tables

    home = tmp_path / "above" / "home"
    monkeypatch.setenv("NEUROBRIX_HOME", str(home))
    old = os.umask(0)
    try:
        path = stack.write_reproof(
            "interpreter", tables.load(), stack.running_stack(), {"profile": "ci", "passed": True}, "test", "test"
        )
    finally:
        os.umask(old)
    assert path.is_file() and stack.reproof_problem("interpreter", tables.load(), stack.running_stack()) is None
    made = {p: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "above", home, path.parent, path)}
    assert made == {p: (0o775 if p.is_dir() else 0o664) for p in made}, {str(p): oct(m) for p, m in made.items()}


@POSIX
def test_an_org_folder_the_sweep_makes_again_is_closed_to_others_writing(tmp_path, monkeypatch):
    """Defect (fixed): the sweep puts a model moved aside back under its manifest's name, making its org folder
    again where another command removed it; that mkdir was left to the umask (0777 under ``umask 000``), where the
    import's own is cleared."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.models_dir().mkdir(parents=True)
    aside = store.models_dir() / ".aside"
    aside.mkdir()
    (aside / store.MANIFEST).write_text(json.dumps({"name": "org/model"}), encoding="utf-8")
    old = os.umask(0)
    try:
        store._put_back(aside)
    finally:
        os.umask(old)
    assert (store.models_dir() / "org" / "model" / store.MANIFEST).is_file()
    assert stat.S_IMODE((store.models_dir() / "org").stat().st_mode) == 0o777 & ~stat.S_IWOTH
