"""Strict round 49: the environment a command runs in.

Every variable and process setting a user may have set for another program that could change what the engine
computes, which tables or kernels it reads, or where it reads and writes: NEUROBRIX_*, Triton's knobs, torch's,
CUDA_VISIBLE_DEVICES / CUDA_LAUNCH_BLOCKING, HF_*, the locale (LC_ALL=C, LANG unset, PYTHONUTF8), TZ, the umask,
PYTHONHASHSEED and the current folder. Real `neurobrix` processes on a tiny random checkpoint, on the interpreter
class, each output compared byte for byte with the one the plain environment gives.

Found and fixed:
- the C locale with Python's UTF-8 mode off (`LC_ALL=C PYTHONUTF8=0`, the second set for another program): Python
  decodes file names and arguments as ASCII, each other byte a lone surrogate. A model stored under a UTF-8 locale as
  `tïny` was read back as `t\\udcc3\\udcafny`, not its manifest's name: `run` called it damaged and advised removing it
  (exit 7), and `list` ended in a UnicodeEncodeError traceback printing that damage; importing the folder was refused
  as "not UTF-8 text" (it is) and `--prompt café` too. Model names and the paths the tokenizers library is handed
  are now the UTF-8 text of the bytes on the disk in every locale (`checkpoint.name_text` / `disk_name`), an
  argument's undecoded bytes are taken as UTF-8 (`cli.argument_text`, as Python's UTF-8 mode takes them), and
  standard output writes what its encoding lacks as an escape (`t\\xefny`), the model's own text still refused by
  name (round 15's line).
- `umask 000`: the store's folders and files were made writable by every user of the machine, and a run checks the
  weights by their size and headers only (round 40), so any user could change the numbers a model runs with; the
  import now takes write permission for others from all it makes (the umask's group bits kept). The engine's own
  Triton cache folder (`$NEUROBRIX_HOME/triton-cache`) was made by Triton with the umask: under 000 every user could
  write it and the next GPU run refused it (round 27's check); the engine now makes it itself, closed to others.

Pinned (the same ids, byte for byte, as the plain environment): PYTHONHASHSEED, TZ, `LC_ALL=C` and LANG unset
(Python's UTF-8 mode, on by default there), a current folder elsewhere than the checkout, CUDA_LAUNCH_BLOCKING,
CUDA_VISIBLE_DEVICES empty, and Triton's compile knobs (TRITON_DEBUG, TRITON_F32_DEFAULT, TRITON_DEFAULT_FP_FUSION) on
the interpreter class, which reads none of them for a number (on a GPU class they are refused: rounds 21, 39, 44).

Left open: an ISO-8859-1 (or other non-UTF-8) locale decodes an argument's bytes as that locale says (the terminal's
own encoding; a UTF-8 terminal under such a locale gives `tÃ¯ny`, another name, found by neither); a hub import's
weights are hard links to huggingface_hub's blobs, whose permissions are that cache's (made with the same umask);
tables certify writes take the umask (a contributor's tool; TRACKED.yaml holds their digests).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from store_fixtures import WORDS, make_checkpoint

pytestmark = pytest.mark.skipif(os.name != "posix", reason="locales, umask and file-name bytes are POSIX's")

NAME = "t\u00efny"  # tïny: a model name outside ASCII
WORD = "caf\u00e9"  # café: a word of the tokenizer outside ASCII
PROMPT = f"hello {WORD} world"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    env.update(
        NEUROBRIX_HOME=str(home),
        HF_HOME=str(home.parent / "hf"),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        TRITON_INTERPRET="1",
        PYTHONPATH=str(REPO),
        PYTHONUTF8="1",
    )
    env.update(extra)
    return env


C_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0"}  # Python decodes names and arguments as ASCII


def _neurobrix(env, *argv: str | bytes, cwd: Path | None = None, umask: int | None = None):
    return subprocess.run(
        [sys.executable, "-m", "neurobrix", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=300,
        preexec_fn=None if umask is None else (lambda: os.umask(umask)),
    )


def _ok(done) -> bytes:
    err = done.stderr.decode("utf-8", "backslashreplace")
    assert done.returncode == 0 and b"Traceback" not in done.stderr, err
    return done.stdout


def _prompt_tokens(done) -> int:
    return int(re.search(rb"\[prompt (\d+) tokens", done.stderr).group(1))


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A tiny checkpoint in a folder named tïny (its bytes UTF-8 whatever the test's own locale), whose tokenizer
    knows café."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    root = tmp_path_factory.mktemp("strict49")
    folder = make_checkpoint(root / "tiny", use_transformers=False)
    words = [WORD if w == "a" else w for w in WORDS]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    named = os.fsencode(root) + b"/" + NAME.encode("utf-8")
    os.rename(os.fsencode(folder), named)
    return Path(os.fsdecode(named))


def _run_argv(model: str | bytes) -> list[str | bytes]:
    return ["run", "--model", model, "--prompt", PROMPT.encode("utf-8"), "--max-tokens", "4", "--no-chat"]


# ----------------------------------------------------------------------------------------- 1. the locale
def test_a_model_stored_in_utf8_runs_in_the_c_locale(tmp_path, source):
    """Before: `list` ended in a UnicodeEncodeError traceback (exit 1), `run --model tïny` called the model damaged
    (exit 7, "Remove it"), `--prompt café` was "not UTF-8 text". Now list shows it, run gives the UTF-8 run's ids and
    prompt, remove removes it."""
    home = tmp_path / "home"
    utf8, c = _env(home), _env(home, **C_LOCALE)
    _ok(_neurobrix(utf8, "import", os.fsencode(source)))
    want = _neurobrix(utf8, *_run_argv(NAME.encode("utf-8")))
    _ok(want)
    listed = _ok(_neurobrix(c, "list"))
    assert b"t\\xefny" in listed and b"DAMAGED" not in listed, listed
    got = _neurobrix(c, *_run_argv(NAME.encode("utf-8")))
    assert _ok(got) == want.stdout and _prompt_tokens(got) == _prompt_tokens(want) == 3
    by_folder = _neurobrix(c, *_run_argv(os.fsencode(source)))  # the folder it was imported from names it too
    assert _ok(by_folder) == want.stdout
    _ok(_neurobrix(c, "remove", NAME.encode("utf-8")))
    assert os.listdir(home / "models") == []


def test_an_import_in_the_c_locale_is_the_utf8_import(tmp_path, source):
    """Before: importing tïny in the C locale was refused ("the path is not UTF-8 text ... rename the folder", exit
    2). Now it stores the model under the same bytes and manifest name, and a UTF-8 run of it gives the same ids."""
    home, other = tmp_path / "home", tmp_path / "other"
    _ok(_neurobrix(_env(home, **C_LOCALE), "import", os.fsencode(source)))
    _ok(_neurobrix(_env(other), "import", os.fsencode(source)))
    stored = os.listdir(os.fsencode(home / "models"))
    assert stored == [NAME.encode("utf-8")]
    manifest = (home / "models" / os.fsdecode(stored[0]) / "neurobrix-model.json").read_bytes()
    assert f'"name": "{NAME}"'.encode("ascii", "backslashreplace").replace(b"\\x", b"\\u00") in manifest
    got = _neurobrix(_env(home), *_run_argv(NAME.encode("utf-8")))
    want = _neurobrix(_env(other), *_run_argv(NAME.encode("utf-8")))
    assert _ok(got) == _ok(want)


def test_an_argument_s_bytes_are_read_as_utf8():
    """The CLI's reading of an argument: undecoded bytes (lone surrogates) taken as UTF-8, text kept, bytes that are
    no UTF-8 left for the refusal."""
    from neurobrix.cli import UsageError, argument_text, utf8_text

    undecoded = os.fsdecode(WORD.encode("utf-8")) if sys.getfilesystemencoding() == "ascii" else "caf\udcc3\udca9"
    if sys.getfilesystemencoding().lower().replace("-", "") == "utf8":
        assert argument_text("caf\udcc3\udca9") == WORD
    assert argument_text(WORD) == WORD and argument_text(undecoded) in (WORD, undecoded)
    with pytest.raises(UsageError, match="not UTF-8 text"):
        utf8_text("caf\udce9", "--prompt")  # b"caf\xe9": Latin-1 bytes, no UTF-8


# ----------------------------------------------------------------------------------------- 2. the umask
def test_umask_000_leaves_nothing_writable_by_every_user(tmp_path, source):
    """Before: under umask 000 the store (home, models/, the model's folder) was 0777 and its files, the weights
    among them, 0666. Now nothing the import makes has write permission for others; the umask's group bits stay."""
    for mask, group_writes in ((0o000, True), (0o002, True), (0o022, False)):
        home = tmp_path / f"home{mask:o}"
        _ok(_neurobrix(_env(home), "import", os.fsencode(source), umask=mask))
        made = [home, *home.rglob("*")]
        writable = [p for p in made if p.lstat().st_mode & stat.S_IWOTH]
        assert writable == [], (oct(mask), writable)
        weights = next(home.rglob("model.safetensors"))
        assert bool(weights.stat().st_mode & stat.S_IWGRP) == group_writes, oct(mask)
        _ok(_neurobrix(_env(home), *_run_argv(NAME.encode("utf-8")), umask=mask))


def test_the_engine_cache_is_made_closed_to_other_users(tmp_path, monkeypatch):
    """Before: the engine's Triton cache folder was left for Triton to make with the umask (0777 under umask 000),
    and the next GPU run refused it as writable by every user. Now the engine makes it, with no permission for
    others, and the check a GPU class runs passes on it."""
    from neurobrix import stack

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    for name in stack.CACHE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(stack, "_ENGINE_CACHE_SET", [None])
    old = os.umask(0)
    try:
        stack.use_engine_cache()
    finally:
        os.umask(old)
        os.environ.pop("TRITON_CACHE_DIR", None)
    folder = tmp_path / "home" / stack.ENGINE_CACHE
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) & stat.S_IRWXO == 0
    assert stack._cache_folder_state(str(folder), "the engine's cache") is None


# ----------------------------------------------------------------------------------------- 3. held
HELD = {
    "PYTHONHASHSEED=1": {"PYTHONHASHSEED": "1"},
    "PYTHONHASHSEED=2": {"PYTHONHASHSEED": "2"},
    "TZ": {"TZ": "Pacific/Kiritimati"},
    "LC_ALL=C, LANG unset": {"LC_ALL": "C", "PYTHONUTF8": ""},
    "CUDA_LAUNCH_BLOCKING": {"CUDA_LAUNCH_BLOCKING": "1"},
    "CUDA_VISIBLE_DEVICES empty": {"CUDA_VISIBLE_DEVICES": ""},
    "Triton's compile knobs": {"TRITON_DEBUG": "1", "TRITON_F32_DEFAULT": "ieee", "TRITON_DEFAULT_FP_FUSION": "0"},
    "TRITON_INTERPRET=yes": {"TRITON_INTERPRET": "yes"},
}


def test_settings_that_change_no_number(tmp_path, source):
    """Each setting gives the plain environment's output byte for byte, run from another folder than the checkout."""
    home = tmp_path / "home"
    _ok(_neurobrix(_env(home), "import", os.fsencode(source)))
    want = _ok(_neurobrix(_env(home), *_run_argv(NAME.encode("utf-8")), cwd=REPO))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for label, extra in HELD.items():
        env = {k: v for k, v in _env(home, **extra).items() if v != ""}
        got = _neurobrix(env, *_run_argv(NAME.encode("utf-8")), cwd=elsewhere)
        assert _ok(got) == want, label
