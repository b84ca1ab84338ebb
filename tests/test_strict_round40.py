"""The fortieth round: a stored model's folder and manifest under partial and concurrent states (files changed between
the check against the manifest and their reading, the manifest's own fields edited), environment variables and
command lines at their edges. Three classes were refused by the wrong error or ended in a traceback, each held here:
a manifest naming a file by a lone surrogate (valid JSON, no file name) killed `run` and `list` in UnicodeEncodeError,
and a weight file or tokenizer.json gone (or made a folder) after the check was "has no weights" / "tokenizer.json is
missing", usage errors (exit 2), where the stored model changed under the command (exit 7). Each test failed before
its fix; PyTorch's kernels on a tiny checkpoint, no Triton launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_fixtures import make_checkpoint

from neurobrix import store
from neurobrix.cli import main

RUN = ["run", "--model", "ckpt", "--prompt", "hello world", "--max-tokens", "1", "--no-chat", "--no-stream"]


@pytest.fixture
def stored(tmp_path, monkeypatch, capsys) -> Path:
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    make_checkpoint(tmp_path / "ckpt", use_transformers=False)
    assert main(["import", str(tmp_path / "ckpt")]) == 0
    capsys.readouterr()
    return tmp_path / "home" / "models" / "ckpt"


def _exit(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("neurobrix: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("name", ["\ud800x", "additional_chat_templates/\udbff.jinja"])
def test_a_manifest_naming_a_file_no_os_can_encode_is_damage_not_a_traceback(stored, capsys, name):
    """Before: `run` and `list` died in UnicodeEncodeError ("surrogates not allowed"), stat-ing the name. A lone
    surrogate is valid JSON and no file's name (a non-UTF-8 name reads as \\udcXX, which encodes: see the control)."""
    manifest = stored / store.MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["files"][name] = 1
    manifest.write_text(json.dumps(data), encoding="utf-8")
    assert _exit([*RUN, "--backend", "torch"]) == 7
    line = _one_line(capsys.readouterr().err)
    assert "is damaged" in line and ascii(name)[1:-1] in line and "cannot encode" in line
    assert main(["list"]) == 0  # listed as damaged, with why
    assert "cannot encode" in capsys.readouterr().out
    # control: a name as a non-UTF-8 file name reads (surrogateescape) is one the OS takes: missing, not undecodable
    data["files"] = {k: v for k, v in data["files"].items() if k != name} | {
        "additional_chat_templates/\udcff.jinja": 1
    }
    manifest.write_text(json.dumps(data), encoding="utf-8")
    assert _exit([*RUN, "--backend", "torch"]) == 7
    assert "\\udcff.jinja is missing" in _one_line(capsys.readouterr().err)


def _after_check(monkeypatch, change) -> None:
    """Apply ``change`` right after run's check of the stored files against the manifest (another command)."""
    verify = store._verify

    def verify_then_change(model, *args, **kwargs):
        stamps = verify(model, *args, **kwargs)
        change(model.path)
        return stamps

    monkeypatch.setattr(store, "_verify", verify_then_change)


def _to_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize(
    "change",
    [
        lambda d: _to_folder(d / "model.safetensors"),
        lambda d: (d / "model.safetensors").unlink(),
        lambda d: _to_folder(d / "tokenizer.json"),
        lambda d: (d / "tokenizer.json").unlink(),
    ],
    ids=["weights-folder", "weights-removed", "tokenizer-folder", "tokenizer-removed"],
)
def test_a_file_gone_after_the_check_is_a_change_under_the_command_not_a_usage_error(
    stored, monkeypatch, capsys, change
):
    """Before: exit 2, "... has no weights: no *.safetensors file" or "tokenizer.json is missing; NeuroBrix needs a
    fast tokenizer file", as if the user had imported a folder without them; the check had found each in place."""
    _after_check(monkeypatch, change)
    assert _exit([*RUN, "--backend", "torch"]) == 7
    assert "changed while this command read it" in _one_line(capsys.readouterr().err)


def test_a_checkpoint_folder_without_a_tokenizer_is_still_the_users_mistake(tmp_path, monkeypatch, capsys):
    """Control: importing a folder that has no tokenizer.json stays a usage error (exit 2) naming the file."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    make_checkpoint(tmp_path / "ckpt", use_transformers=False, tokenizer=False)
    assert _exit(["import", str(tmp_path / "ckpt")]) == 2
    assert "tokenizer.json" in _one_line(capsys.readouterr().err)
