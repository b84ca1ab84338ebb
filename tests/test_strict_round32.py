"""The thirty-second round, adversarial on the runtime's inputs: what a command reads besides the tables and the
store. A prompt file that never ends (`/dev/zero`, `/dev/urandom`, standard input from either), a check report to
resume or a model config handed to certify that never ends, were read until the memory ran out; a re-proof written to
a full disk or a read-only home (or interrupted) left its half-written file and ended the check that earned it in an
error naming no file. Each is refused now in one line naming the thing, with the README's exit code."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest
from store_fixtures import make_checkpoint

from neurobrix import cli, stack, store, tables
from neurobrix.store import StoreError


def _refused(capsys, args: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main(args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_prompt_file_that_never_ends_is_refused_not_read_until_the_memory_runs_out(monkeypatch, capsys):
    # /dev/zero is NUL characters without end, UTF-8 all of them: `f.read()` grew the text until a MemoryError (under
    # a 3 GB limit, after 16 s; without one, the machine's memory). The prompt is read before the model is looked up
    monkeypatch.setattr(cli, "PROMPT_FILE_LIMIT", 1 << 16)
    err = _refused(capsys, ["run", "--model", "nothing-stored", "--prompt-file", "/dev/zero"])
    assert "--prompt-file /dev/zero: more than 65,536 characters" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("x" * (1 << 16) + "y"))  # `< /dev/zero`, one past the limit
    assert "--prompt-file - (standard input): more than" in _refused(
        capsys, ["run", "--model", "nothing-stored", "--prompt-file", "-"]
    )
    # at the limit it is a prompt (refused here for the model not stored, after the prompt was read)
    monkeypatch.setattr("sys.stdin", io.StringIO("x" * (1 << 16)))
    err = _refused(capsys, ["run", "--model", "nothing-stored", "--prompt-file", "-"])
    assert "more than" not in err and "nothing-stored" in err


def test_the_limit_is_past_any_prompt_the_certified_contexts_hold():
    # 2,048 characters a token over the 32,768-token prompts the certified classes cover; /dev/zero read to it fast
    assert cli.PROMPT_FILE_LIMIT >= 2048 * 32768
    with pytest.raises(cli.UsageError, match="more than 67,108,864 characters"):
        cli.read_prompt_file("/dev/zero")


def _full_disk(monkeypatch, error: BaseException) -> None:
    """Writing a file puts its first bytes down, then fails as a full disk (or Ctrl-C) makes it fail."""
    real = Path.write_text

    def write_text(self: Path, data: str, *args, **kwargs) -> int:
        real(self, data[:10], *args, **kwargs)
        raise error

    monkeypatch.setattr(Path, "write_text", write_text)


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EROFS, "Read-only file system")]
)
def test_a_reproof_that_cannot_be_written_is_named_and_leaves_no_half_written_file(tmp_path, monkeypatch, error):
    # a whole `conformance check` on another stack passed, then its re-proof met a full disk or a read-only home:
    # the check ended in "conformance: error: No space left on device" naming no file, and left the half-written
    # .<class>.json.<pid> in the re-proofs folder
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    _full_disk(monkeypatch, error)
    with pytest.raises(StoreError) as info:
        stack.write_reproof("interpreter", loaded, stack.running_stack(), {"passed": True}, "cpu", "check")
    path = tmp_path / "home" / "reproofs" / "interpreter.json"
    assert str(info.value).startswith(f"the check passed, but its re-proof could not be written to {path}: ")
    assert error.strerror in str(info.value) and info.value.exit_code == 1
    assert list(path.parent.iterdir()) == []


def test_ctrl_c_while_a_reproof_is_written_leaves_no_half_written_file(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    _full_disk(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        stack.write_reproof("interpreter", loaded, stack.running_stack(), {"passed": True}, "cpu", "check")
    assert list((tmp_path / "home" / "reproofs").iterdir()) == []


def test_a_report_to_resume_or_a_config_that_never_ends_is_refused_naming_the_option(monkeypatch):
    # `conformance check --resume /dev/zero` and `certify --config /dev/zero` read until the memory ran out (a
    # MemoryError traceback after ~15 s under a 4 GB limit)
    from conformance import __main__ as conformance_main
    from conformance import check

    monkeypatch.setattr(check, "FILE_LIMIT", 1 << 16)
    with pytest.raises(
        cli.UsageError, match=r"^--resume /dev/zero: cannot read a check report there \(more than 65,536"
    ):
        check.carried_over(Path("/dev/zero"), None)  # type: ignore[arg-type]  # refused before the report is read
    with pytest.raises(cli.UsageError, match=r"^--config /dev/zero: cannot be read as JSON: more than 65,536"):
        conformance_main._configs(["/dev/zero"])


@pytest.mark.parametrize("stored_before", [False, True])
def test_two_imports_of_one_model_at_once_each_store_a_whole_model(tmp_path, monkeypatch, stored_before):
    # the second import renames its folder into place just before the first does (or moves the model there aside
    # first): the first ended in "could not write tiny into the store: [Errno 39] Directory not empty ... (check the
    # free space and permissions there)", or "No such file or directory" where the model was stored before
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    source = make_checkpoint(tmp_path / "tiny", use_transformers=False)
    if stored_before:
        store.import_model(str(source), progress=False)
    real, other = os.rename, []

    def rename(src, dst):
        if not other and Path(src).name.startswith(".tmp-") and Path(dst).name == "tiny":
            other.append(None)
            other[0] = store.import_model(str(source), progress=False)  # the other import, finishing first
        return real(src, dst)

    monkeypatch.setattr(store.os, "rename", rename)
    first = store.import_model(str(source), progress=False)
    assert other and first.path == other[0].path and store.resolve("tiny").files == first.files
    assert [p.name for p in (tmp_path / "home" / "models").iterdir()] == ["tiny"]  # nothing left aside


def test_a_model_removed_during_a_run_is_named_as_removed_not_as_damaged(tmp_path, monkeypatch):
    # `neurobrix remove tiny` while a run of tiny loads it: the run said "stored model tiny is damaged: ... has no
    # config.json ... Import it again or remove it (`neurobrix remove tiny`)", or the same of its weights
    from neurobrix import run
    from neurobrix.store import DamagedModelError

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny", use_transformers=False)), progress=False)
    stored = store.resolve("tiny")  # checked, as run checks it, then removed before its config.json is read
    store.remove("tiny")
    with pytest.raises(DamagedModelError, match=r"^stored model tiny \(.*\) was removed while this command read it"):
        run.load_model(stored, "torch", None, 4, 16)
    store.import_model(str(tmp_path / "tiny"), progress=False)
    stored, real = store.resolve("tiny"), run.weights_from_files

    def removed_first(*args, **kwargs):  # removed between config.json's read and the weights'
        store.remove("tiny")
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "weights_from_files", removed_first)
    with pytest.raises(DamagedModelError, match="was removed while this command read it") as info:
        run.load_model(stored, "torch", None, 4, 16)
    assert info.value.exit_code == 7 and "damaged" not in str(info.value)


@pytest.mark.parametrize("link", ["home", "loop", "under", "models"])
def test_a_store_behind_a_link_that_leads_nowhere_is_refused_naming_the_link(tmp_path, monkeypatch, capsys, link):
    # NEUROBRIX_HOME (or a folder above it, or its models/) a link to a missing path or a loop of links: `list` said
    # "no models imported yet", doctor "ready", and every import failed in "File exists" or "Too many levels of
    # symbolic links"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    home = {"home": "dangling", "loop": "loop", "under": "loop/home", "models": "real"}[link]
    if link == "models":
        (tmp_path / "real").mkdir()
        (tmp_path / "real" / "models").symlink_to(tmp_path / "nowhere")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / home))
    source = make_checkpoint(tmp_path / "tiny", use_transformers=False)
    for args in (["list"], ["import", str(source)]):
        with pytest.raises(SystemExit) as exit_:
            cli.main(args)
        err = capsys.readouterr().err
        # the home refused as a home that is a file is (exit 2), models/ as a models/ that is a file (exit 1)
        assert (
            exit_.value.code == (1 if link == "models" else 2)
            and "which leads nowhere" in err
            and len(err.strip().splitlines()) == 1
        ), err
    assert "which leads nowhere" in str(store.store_problem())
