"""The thirty-third round of text parity: the prompt `--prompt-file` reads, and what round 32 left open.

- `--prompt-file` read the file (and standard input) with Python's universal newlines, so a file's "\\r\\n" and lone
  "\\r" reached the tokenizer (and the chat template) as "\\n": the model saw another prompt than the file holds, and
  than `--prompt` with the same text, and `run` printed other text than transformers' generate on the file's text.
  The file's text is now read as written (``newline=""``), standard input as its bytes in UTF-8 (whatever the
  locale's encoding), and a UTF-8 byte order mark at the file's start, an encoding signature a Windows editor writes
  and no part of the text, is left out ("utf-8-sig"). A file that is not UTF-8 (Latin-1, UTF-16 with its own byte
  order mark) stays refused in one line. Standard input closed (``<&-``: Python sets no sys.stdin) ended `run
  --prompt-file -` in an AttributeError traceback; it is refused in one line.
- A system message: transformers renders [system, user] through apply_chat_template; `run` had no way to give one.
  `--system TEXT` places it through the model's chat template; with --no-chat or without a template (where
  apply_chat_template refuses) it is refused in one line.
- Held (probed outside CI, no difference): eos ids from generation_config.json, config.json and the tokenizer,
  max_new_tokens 0 and 1, stop strings spanning tokens and prefixes of each other, through `run` against greedy
  generate; 12,000 drawn id sequences (byte tokens and specials drawn often) streamed against ``decode``.

Each test failed before its fix (the first: the CRLF file's run printed the "\\n" prompt's text), but the one on
files that are not UTF-8, which holds the refusal.
"""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

# "\r\n" and a lone "\r" where the byte-level fixture has tokens of its own for them; prompt text of round 7's model
TEXT = "Hello world,\r\nthe model runs fast.\rnever guess\r\n a setting.\r\n"


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    from test_text_round7 import checkpoint

    return checkpoint(tmp_path_factory.mktemp("gen") / "m")


def _theirs(folder: Path, prompt: str, new: int) -> str:
    """transformers' greedy generate (float64) after ``prompt`` as the tokenizer encodes it: the new ids' text."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    inputs = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False, max_new_tokens=new)
    return tok.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    from neurobrix.cli import main

    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_prompt_file_is_read_as_written_line_ends_kept_its_byte_order_mark_left_out(
    model_folder, tmp_path, monkeypatch, capsys
):
    """Before: "\\r\\n" and "\\r" in the file reached the tokenizer as "\\n" (and a byte order mark as "\\ufeff"), so
    `run --prompt-file` printed the text of another prompt than transformers' generate on the file's text."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(model_folder), progress=False)
    tok = transformers.AutoTokenizer.from_pretrained(model_folder)
    translated = TEXT.replace("\r\n", "\n").replace("\r", "\n")
    assert tok(TEXT)["input_ids"] != tok(translated)["input_ids"]  # "\r" is a prompt token of its own here
    want = _theirs(model_folder, TEXT, 8)
    assert want != _theirs(model_folder, translated, 8)  # the model's text tells the two prompts apart
    argv = ["run", "--model", "m", "--no-chat", "--backend", "torch", "--max-tokens", "8"]
    given = _run(capsys, [*argv, "--prompt", TEXT])
    assert given[:2] == (0, want + "\n")  # `--prompt` passes the text as given
    for name, data in (("crlf.txt", TEXT.encode()), ("bom.txt", b"\xef\xbb\xbf" + TEXT.encode())):
        (tmp_path / name).write_bytes(data)
        for flags in ([], ["--no-stream"]):
            assert _run(capsys, [*argv, *flags, "--prompt-file", str(tmp_path / name)])[:2] == (0, want + "\n"), name
        # standard input: the process's own stream is a TextIOWrapper over its bytes
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        assert _run(capsys, [*argv, "--prompt-file", "-"])[:2] == (0, want + "\n"), name


@pytest.mark.parametrize(
    "data",
    [TEXT.encode("latin-1") + "café".encode("latin-1"), TEXT.encode("utf-16"), b"\xef\xbb\xbf\xff"],
    ids=["latin-1", "utf-16 with its byte order mark", "a byte order mark and no UTF-8 after it"],
)
def test_a_prompt_file_that_is_not_utf8_is_refused_in_one_line(tmp_path, monkeypatch, capsys, data):
    """Held: a file (or standard input) that is not UTF-8 is refused in one line naming it, before any model is
    read."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    (tmp_path / "p.txt").write_bytes(data)
    for where, shown in ((str(tmp_path / "p.txt"), "p.txt"), ("-", "standard input")):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        code, out, err = _run(capsys, ["run", "--model", "m", "--prompt-file", where])
        assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1, err
        assert shown in err and err.strip().endswith("not UTF-8 text"), err


# --- a system message: `--system`, through the model's chat template ---------------------------------------------


def _templated(folder: Path, template: str | None) -> None:
    from tokenizer_fixtures import save

    for name in ("chat_template.jinja", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink(missing_ok=True)
    save(folder, "bytelevel", chat_template=template)


@pytest.mark.parametrize("family", ["llama3", "qwen2.5", "zephyr"])
def test_a_system_message_is_placed_by_the_chat_template_as_apply_chat_template_places_it(
    model_folder, tmp_path, monkeypatch, capsys, family
):
    """Before: `run` had no way to give a system message (argparse refused --system), so a chat with one, which
    transformers renders through apply_chat_template, could not be run at all."""
    from test_text_round27 import FAMILIES

    from neurobrix import store

    folder = tmp_path / "m"
    shutil.copytree(model_folder, folder)
    _templated(folder, FAMILIES[family])
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(folder), progress=False)
    system, prompt = "Answer\r\nbriefly.", "the model runs fast"
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    chat = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    ids = tok.apply_chat_template(chat, add_generation_prompt=True, return_dict=True, return_tensors="pt")
    assert (
        ids["input_ids"].tolist()
        != tok.apply_chat_template(chat[1:], add_generation_prompt=True, return_dict=True)["input_ids"]
    )
    with torch.no_grad():
        out = model.generate(**ids, do_sample=False, max_new_tokens=6)
    want = tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    argv = ["run", "--model", "m", "--backend", "torch", "--max-tokens", "6", "--prompt", prompt]
    assert _run(capsys, [*argv, "--system", system])[:2] == (0, want + "\n")
    code, out_text, err = _run(capsys, [*argv, "--system", system, "--no-chat"])
    assert (code, out_text) == (2, "") and "--system" in err and "drop --no-chat" in err and len(err.splitlines()) == 1


def test_a_system_message_for_a_model_without_a_chat_template_is_refused_in_one_line(
    model_folder, tmp_path, monkeypatch, capsys
):
    """transformers' apply_chat_template refuses a model without a chat template; `run` with --system says so in one
    line (without --system it keeps using the prompt as is, with its note)."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(model_folder), progress=False)
    code, out, err = _run(capsys, ["run", "--model", "m", "--backend", "torch", "--prompt", "hi", "--system", "s"])
    assert (code, out) == (2, "") and "--system" in err and "no chat template" in err and len(err.splitlines()) == 1


def test_a_prompt_from_standard_input_when_it_is_closed_is_refused_in_one_line(monkeypatch, capsys):
    """Before: `neurobrix run --prompt-file - <&-` (Python sets sys.stdin to None) ended in an AttributeError
    traceback."""
    monkeypatch.setattr(sys, "stdin", None)
    code, out, err = _run(capsys, ["run", "--model", "m", "--prompt-file", "-"])
    assert (code, out) == (2, "") and "standard input is closed" in err and len(err.splitlines()) == 1, err
