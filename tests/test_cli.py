"""The `neurobrix` command line: doctor, tables list/show/verify, errors without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, undocumented

from neurobrix import __version__
from neurobrix.cli import main


def run(*args, env=None):
    """The real console entry, as a user would run it (python -m neurobrix == the neurobrix script)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "neurobrix", *args], capture_output=True, text=True, env=full_env)


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"neurobrix {__version__}"


def test_help_lists_the_commands():
    result = run("--help")
    assert result.returncode == 0
    for word in ("doctor", "tables", "import", "warmup", "run", "Exit codes"):
        assert word in result.stdout


def test_every_command_and_option_says_in_its_help_what_it_does():
    from neurobrix.cli import build_parser

    assert undocumented(build_parser(), "neurobrix") == []


def test_doctor_on_the_interpreter_is_ready(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "interpreter" in out and "every sha256 and size matches" in out and "verdict: ready" in out


def test_doctor_json(capsys):
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    names = {f["name"]: f for f in report["findings"]}
    for name in ("python", "neurobrix", "torch", "triton", "tables", "integrity", "device", "class", "kernels"):
        assert name in names
    assert names["class"]["value"].startswith("interpreter")
    assert "CPU-only build" in names["torch"]["value"] or "CUDA" in names["torch"]["value"]


def test_doctor_without_gpu_or_interpreter_is_blocked():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = run("doctor", env={"TRITON_INTERPRET": "0"})
    assert result.returncode == 1
    assert "FAIL  device" in result.stdout and "verdict: blocked by device" in result.stdout


def test_doctor_blocked_by_damaged_tables(fixture_tables, capsys):
    (fixture_tables / "interpreter" / "demo.json").unlink()
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  integrity  interpreter/demo.json: tracked but missing" in out


def test_tables_verify_source_checkout(capsys, monkeypatch):
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    assert main(["tables", "verify"]) == 0
    assert "tables verified" in capsys.readouterr().out


def test_tables_verify_json_failure_names_the_file(fixture_tables, capsys):
    (fixture_tables / "interpreter" / "demo.json").write_text("altered")
    assert main(["tables", "verify", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert report["problems"][0]["path"] == "interpreter/demo.json"
    assert "altered" in report["problems"][0]["message"]


def test_tables_verify_checks_the_proofs_run_never_reads(fixture_tables, capsys):
    from conftest import rebind, retrack

    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    path.write_text(path.read_text().replace("BLOCK_N: 128", "BLOCK_N: 129"))
    rebind(path, "interpreter", "demo")  # its digest follows the edit: what differs is the proof from its index
    retrack(fixture_tables)
    assert main(["tables", "verify", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["problems"][0]["path"] == "interpreter/demo"
    assert "differs from entry 1 of its index" in report["problems"][0]["message"]


def test_tables_list_and_show(fixture_tables, capsys):
    assert main(["tables", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {c["class"]: c["kernels"] for c in listing["classes"]} == {"fake-gpu": {}, "interpreter": {"demo": 4}}
    assert listing["classes"][1]["certified_with"] == ["torch 2.13.0, triton 3.9.0"]
    assert main(["tables", "show", "interpreter", "demo"]) == 0
    out = capsys.readouterr().out
    assert "4 entries, key (M pow2, N exact)" in out and "fp32/fp16 M=1..16, N=1..4096" in out and "BLOCK_N=64" in out
    assert "worst error 0.250" in out and "demo.proofs.yaml" in out
    assert main(["tables", "show", "interpreter", "demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"][2]["domain"]["ranges"][0] == ["M", 65, None]


def test_user_mistakes_print_one_line_no_traceback(fixture_tables):
    result = run("tables", "show", "nosuch", env={"NEUROBRIX_TABLES": str(fixture_tables)})
    assert result.returncode == 2
    assert result.stderr.startswith("neurobrix: error: no GPU class 'nosuch'")
    assert "Traceback" not in result.stderr


def test_damaged_tables_exit_3_and_debug_shows_the_traceback(fixture_tables):
    (fixture_tables / "TRACKED.yaml").unlink()
    env = {"NEUROBRIX_TABLES": str(fixture_tables)}
    plain = run("tables", "list", env=env)
    assert plain.returncode == 3 and "tracked-file list is missing" in plain.stderr
    assert "Traceback" not in plain.stderr
    debug = run("--debug", "tables", "list", env=env)
    assert debug.returncode == 3 and "Traceback" in debug.stderr


def test_env_var_to_missing_folder(tmp_path):
    result = run("tables", "verify", env={"NEUROBRIX_TABLES": str(tmp_path / "nope")})
    assert result.returncode == 3 and "is not a folder" in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, a file every write to fails")
def test_output_on_a_full_disk_is_one_line_and_exit_1():
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "neurobrix", "tables", "list"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert result.returncode == 1
    assert result.stderr == (  # the resource named since strict round 48
        "neurobrix: error: No space left on device: standard output; the disk is full: free some space there "
        "(--debug shows where)\n"  # standard output named since strict round 51
    )


def test_a_closed_pipe_is_not_an_error():
    full_env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "neurobrix", "tables", "show", "interpreter", "linear"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
    )
    proc.stdout.close()  # the reader is gone before the command writes (like `| head -0`)
    assert proc.wait() == 141  # quietly, 128 + SIGPIPE as coreutils and git end (0 before strict round 51)
    assert b"Traceback" not in proc.stderr.read()


# --- run: what a user reads ----------------------------------------------------------------------


@pytest.fixture
def sentencepiece_model(tmp_path, monkeypatch):
    """A stored model whose tokenizer is SentencePiece-style (Llama 2), and `run` with its generation replaced
    by a fixed id sequence (``generated.ids``): what is under test is what `run` prints for those ids."""
    pytest.importorskip("transformers")
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import generate_these, save

    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "sp-model", use_transformers=False)
    save(folder, "sentencepiece")
    store.import_model(str(folder), progress=False)
    generated = generate_these(monkeypatch, [])
    generated.folder = folder
    return generated


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_run_prints_exactly_what_transformers_decodes(sentencepiece_model, capsys, stream):
    import transformers

    from neurobrix.tokenizer import Tokenizer

    tokenizer = Tokenizer(sentencepiece_model.folder)
    # a new line's first word keeps its leading space; multi-byte characters split over byte tokens
    sentencepiece_model.ids = tokenizer.encode_text("first line\n second line\n  third 🙂 naïve\n end") + [2]
    args = ["run", "--model", "sp-model", "--prompt", "hi", "--no-chat"] + ([] if stream else ["--no-stream"])
    assert main(args) == 0
    hf = transformers.AutoTokenizer.from_pretrained(sentencepiece_model.folder)
    expected = hf.decode(sentencepiece_model.ids, skip_special_tokens=True)
    assert " second line" in expected and "🙂" in expected
    assert capsys.readouterr().out == expected + "\n"


def test_run_stops_on_the_eos_ids_transformers_stops_on(sentencepiece_model):
    """generation_config.json's eos ids (all of them), not config.json's nor the tokenizer's eos_token then."""
    from neurobrix import store

    folder = sentencepiece_model.folder
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [5, 7]}))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "eos_token_id": 6}))
    store.import_model(str(folder), progress=False)
    sentencepiece_model.ids = [20, 21]
    assert main(["run", "--model", "sp-model", "--prompt", "hi", "--no-chat"]) == 0
    assert sentencepiece_model.eos == {5, 7}


def test_a_long_prompt_comes_from_a_file_or_standard_input(sentencepiece_model, tmp_path, monkeypatch, capsys):
    import io

    from neurobrix.tokenizer import Tokenizer

    text = "a document\n of two lines\n"  # the fixture's context is 64 tokens
    (tmp_path / "doc.txt").write_text(text, encoding="utf-8")
    expected = Tokenizer(sentencepiece_model.folder).encode_prompt(text, chat=False)
    assert main(["run", "--model", "sp-model", "--prompt-file", str(tmp_path / "doc.txt"), "--no-chat"]) == 0
    assert sentencepiece_model.prompt == expected and len(expected) > 5
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["run", "--model", "sp-model", "--prompt-file", "-", "--no-chat"]) == 0
    assert sentencepiece_model.prompt == expected
    for args, says in (
        (["--prompt-file", str(tmp_path / "missing.txt")], "No such file"),
        (["--prompt", "hi", "--prompt-file", str(tmp_path / "doc.txt")], "not allowed with"),
    ):
        with pytest.raises(SystemExit) as info:
            main(["run", "--model", "sp-model", "--no-chat", *args])
        err = capsys.readouterr().err
        assert info.value.code == 2 and says in err and "Traceback" not in err
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "sp-model", "--prompt-file", str(tmp_path / "bin.txt")])
    assert info.value.code == 2 and "not UTF-8 text" in capsys.readouterr().err
    # bytes that are not UTF-8 reach Python as lone surrogates, from argv and from standard input
    monkeypatch.setattr("sys.stdin", io.StringIO(b"a\xff".decode("utf-8", "surrogateescape")))
    for args in (["--prompt", "a\udcff"], ["--prompt-file", "-"]):
        with pytest.raises(SystemExit) as info:
            main(["run", "--model", "sp-model", *args])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.startswith(f"neurobrix: error: {args[0]}") and "not UTF-8 text" in err


def test_chat_mode_on_a_model_without_a_chat_template_says_the_prompt_is_used_as_is(sentencepiece_model, capsys):
    from neurobrix.tokenizer import Tokenizer

    assert Tokenizer(sentencepiece_model.folder).chat_template is None
    sentencepiece_model.ids = [20]
    assert main(["run", "--model", "sp-model", "--prompt", "hello"]) == 0
    assert "has no chat template; the prompt is used as is" in capsys.readouterr().err
    assert sentencepiece_model.prompt == Tokenizer(sentencepiece_model.folder).encode_prompt("hello", chat=False)
    assert main(["run", "--model", "sp-model", "--prompt", "hello", "--no-chat"]) == 0
    assert "chat template" not in capsys.readouterr().err


def test_an_empty_prompt_without_the_chat_template_is_a_usage_error(sentencepiece_model, capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "sp-model", "--prompt", "", "--no-chat"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "the prompt is empty" in err and "Traceback" not in err
    assert sentencepiece_model.eos is None  # nothing was generated


def test_an_empty_prompt_file_is_refused_naming_both_ways_to_give_a_prompt(sentencepiece_model, tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "sp-model", "--prompt-file", str(tmp_path / "empty.txt"), "--no-chat"])
    assert info.value.code == 2
    assert "give some text with --prompt or --prompt-file" in capsys.readouterr().err


def test_sampling_options_without_a_temperature_are_named_as_unused(sentencepiece_model, capsys):
    sentencepiece_model.ids = [20]
    assert main(["run", "--model", "sp-model", "--prompt", "hello", "--top-k", "5", "--seed", "1"]) == 0
    assert "note: --top-k, --seed only apply when sampling (--temperature above 0)" in capsys.readouterr().err
    assert main(["run", "--model", "sp-model", "--prompt", "hello", "--top-k", "5", "--temperature", "0.7"]) == 0
    assert "only appl" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "command", [["doctor"], ["import"], ["list"], ["remove"], ["warmup"], ["tables"], ["tables", "verify"]]
)
def test_every_command_s_help_ends_with_the_exit_codes(capsys, command):
    """A script checking `neurobrix import`'s (or list's, remove's, a tables action's) status finds what each code
    means in that command's own help, as run's and warmup's show it (walk-through 37: they said nothing of it)."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert help_text.count("Exit codes: 0 ok, 1 failed or blocked, 2 usage") == 1
    assert help_text.rstrip().endswith("141 SIGPIPE: the output's reader went away).")


@pytest.mark.parametrize(
    "program, command",
    [("neurobrix", ["list"]), ("neurobrix", ["tables", "verify"]), ("conformance", ["check"]), ("gate", ["build"])],
)
def test_an_unknown_option_of_a_command_is_refused_with_that_command_s_usage(program, command):
    """argparse hands an option a command does not know back to the top parser, whose error showed the top usage
    (`neurobrix [-h] ... COMMAND ...` for `neurobrix list --bogus`): the command's own usage says what it takes."""
    result = subprocess.run(
        [sys.executable, "-m", program, *command, "--bogus"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    name = {"neurobrix": "neurobrix", "conformance": "python -m conformance", "gate": "python -m gate"}[program]
    spelled = " ".join([name, *command])
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"usage: {spelled} ") and "Traceback" not in result.stderr
    assert result.stderr.rstrip().endswith(f"{spelled}: error: unrecognized arguments: --bogus")


def test_run_help_says_each_sampling_default(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--max-tokens N most new tokens to generate (default: as transformers' generate takes it" in help_text


def test_run_help_shows_examples_and_the_exit_codes(capsys):
    """run's help, like warmup's, shows a run and what each exit code means (a refusal's code is looked up there)."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "examples: neurobrix run --model" in help_text and "--prompt-file report.txt" in help_text
    assert "Exit codes: 0 ok, 1 failed or blocked, 2 usage" in help_text and "7 stored model damaged" in help_text
    assert "max_new_tokens, else its max_length less the prompt, else transformers' 20" in help_text
    assert (
        "--top-k K sample among the K most likely tokens, 0 = all (default: the model's generation_config.json "
        "top_k, else 50, as transformers' generate)" in help_text
    )
    assert (
        "--top-p P sample within the top-P probability mass, 0 <= P <= 1 (0: the most likely token; default: the "
        "model's top_p, else 1, all)" in help_text
    )
    assert "--seed S random seed for sampling (default: none" in help_text


def test_the_default_max_tokens_fits_a_small_context_with_a_notice(sentencepiece_model, capsys):
    from neurobrix import store
    from neurobrix.run import DEFAULT_MAX_TOKENS
    from neurobrix.tokenizer import Tokenizer

    context = store.resolve("sp-model").config().max_positions
    tokenizer = Tokenizer(sentencepiece_model.folder)
    # a prompt that leaves fewer tokens than the default in the context (transformers' generate cuts there too)
    prompt = next(
        text
        for k in range(1, context)
        if context - DEFAULT_MAX_TOKENS < len(tokenizer.encode_prompt(text := " ".join(["hello world"] * k), False))
    )
    prompt_len = len(tokenizer.encode_prompt(prompt, chat=False))
    assert prompt_len < context
    sentencepiece_model.ids = [20]
    assert main(["run", "--model", "sp-model", "--prompt", prompt, "--no-chat"]) == 0
    assert sentencepiece_model.max_tokens == context - prompt_len
    assert f"note: generating at most {context - prompt_len} tokens" in capsys.readouterr().err
    # asked for explicitly, too many tokens is still the user's mistake
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "sp-model", "--prompt", "hello world", "--no-chat", "--max-tokens", "256"])
    assert info.value.code == 2 and "exceeds the model's context" in capsys.readouterr().err


def test_the_statistics_line_times_loading_apart_from_the_first_token(sentencepiece_model, monkeypatch, capsys):
    """Loading (preflight and weights) is its own phase; time to first token is what generate measured
    from the start of the prefill, whatever loading took."""
    import re
    import time

    def slow_load(*args, **kwargs):
        time.sleep(0.3)

    monkeypatch.setattr("neurobrix.run.load_model", slow_load)
    sentencepiece_model.ids = [20, 21]
    assert main(["run", "--model", "sp-model", "--prompt", "hello", "--no-chat"]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    found = re.fullmatch(
        r"\[prompt \d+ tokens \| generated 2 tokens \| load ([\d.]+) s \| capture 0.00 s \| "
        r"time to first token 0.0 ms \| prefill 0 tokens/s \| decode 0.0 tokens/s\]",
        line,
    )
    assert found, line
    assert float(found.group(1)) >= 0.3


def test_the_statistics_line_without_a_load_time():
    from neurobrix.generate import Stats

    line = Stats(26, 200, 0.0125, 622.14, capture_s=0.31).line()
    assert line == (
        "[prompt 26 tokens | generated 200 tokens | capture 0.31 s | time to first token 12.5 ms | "
        f"prefill {26 / 0.0125:.0f} tokens/s | decode 622.1 tokens/s]"
    )
    one = Stats(1, 1, 0.0125, 0.0).line()  # "1 tokens" before
    assert one.startswith("[prompt 1 token | generated 1 token | capture 0.00 s |"), one


def test_debug_works_before_and_after_the_subcommand(fixture_tables):
    (fixture_tables / "TRACKED.yaml").unlink()
    env = {"NEUROBRIX_TABLES": str(fixture_tables)}
    for args in (["--debug", "tables", "list"], ["tables", "--debug", "list"], ["tables", "list", "--debug"]):
        result = run(*args, env=env)
        assert result.returncode == 3 and "Traceback" in result.stderr, args
    assert "Traceback" not in run("tables", "list", env=env).stderr


def test_every_exit_code_is_in_the_readme_and_the_help():
    """The exit codes the program uses (each error class's, and 128+N for a signal) are the ones documented."""
    import importlib
    import pkgutil
    import re

    import neurobrix
    from neurobrix.cli import EXIT_CODES
    from neurobrix.errors import NeuroBrixError

    for module in pkgutil.iter_modules(neurobrix.__path__):
        if module.name not in ("__main__",):
            importlib.import_module(f"neurobrix.{module.name}")

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    used = {cls.exit_code for cls in subclasses(NeuroBrixError)} | {NeuroBrixError.exit_code}
    readme = (REPO / "README.md").read_text()
    after = readme[readme.index("Exit codes:") :]
    # the table: its rows up to the first line that is not one (a fixed window of 3000 characters cut its last off)
    rows = re.search(r"(?:^\|.*\n)+", after, re.M)
    assert rows, "no exit-code table after 'Exit codes:' in the README"
    table = rows.group(0)
    documented = {int(n): meaning for n, meaning in re.findall(r"^\| (\d+) \| (.+) \|$", table, re.M)}
    assert used <= set(documented), f"exit codes used but not in the README: {sorted(used - set(documented))}"
    assert "interrupted" in documented[130] and "stored model damaged" in documented[7]
    for code in used | {130}:
        assert re.search(rf"(?<!\d){code}(?!\d)", EXIT_CODES)


def test_text_that_encodes_to_no_tokens_is_not_called_an_empty_prompt(tmp_path, monkeypatch, capsys):
    """A prompt of text the vocabulary encodes to nothing (here spaces, which a WordPiece tokenizer's pre-tokenizer
    drops) is refused as the empty prompt is, but named as text that encodes to no tokens, with its length."""
    pytest.importorskip("transformers")
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import generate_these, save

    from neurobrix import store
    from neurobrix.tokenizer import Tokenizer

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "wp-model", use_transformers=False)
    save(folder, "wordpiece")
    store.import_model(str(folder), progress=False)
    generated = generate_these(monkeypatch, [])
    text = " \t "
    assert Tokenizer(folder).encode_text(text) == []
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "wp-model", "--prompt", text, "--no-chat"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "the prompt's 3 characters encode to no tokens of this model's vocabulary" in err
    assert "the prompt is empty" not in err and "Traceback" not in err
    assert generated.eos is None  # nothing was generated
