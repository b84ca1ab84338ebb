"""The thirty-second round, adversarial on the runtime's inputs: what a command reads besides the tables and the
store. A prompt file that never ends (`/dev/zero`, `/dev/urandom`, standard input from either) was read until the
memory ran out; each finding is refused now in one line naming the thing, with the README's exit code."""

from __future__ import annotations

import io

import pytest

from neurobrix import cli


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
