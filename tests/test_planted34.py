"""Planted-bug round 34: tests for the plants of tests/planted34_plants.py that the existing tests let through, in text
round 33 (``read_prompt_file``, ``run --system``, ``Tokenizer.encode_prompt(system=)``, ``has_chat_template``),
strict round 39 (tokenizer.py's refusals of generation settings transformers' generate fails on or reads otherwise,
config.py's id2label / is_encoder_decoder / Qwen2 sliding_window) and walk-through 33 (numpy declared, conformance
workers quiet on Ctrl-C, the conformance command's own SIGINT handler). Each test fails under the plant(s) its
docstring names (checked: ``python tests/planted34_driver.py COPY OUT --with tests/test_planted34.py ID``, each plant
against this file alone) and passes on the clean code. Where a test says what transformers does, it computes it.

Outcomes (55 plants): 31 caught by the tests before the round (--prompt-file's universal newlines, its byte order
mark kept, standard input's newline or strict errors dropped, a StringIO taken for the process's stream, closed
standard input unrefused; --system without a template unrefused, its messages swapped, left out of encode_prompt,
placed after the user message; an unusable default template taken for none; assistant_early_exit true and its 0
refused, prompt lookup's 0 and 1.5 taken, its n-gram size 0 refused, use_cache false refused, force_words_ids 0 not
named, contrastive search from top_k 1 or without a top_k named otherwise; id2label's [] and text keys, an
is_encoder_decoder of 1.5, a window of 1.5; numpy undeclared or unnamed, a worker without its handler, the lost
Ctrl-C not recorded, the handler not restored; w08, the record kept: the suite interrupted); 24 survived and are
caught here: t07 t08 t09 t11 t14, g01 g02 g03 g04 g06 g10 g14 g15 g17 g19 g20 g22, c03 c06, w03 w05 w07 w09
w10 (and w08, as a failure rather than an interrupted run). None was equivalent. w08's run found a defect, fixed:
a Ctrl-C lost in a conformance command was still recorded after it, and interrupted a later Workers map outside any
command."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from conftest import exit_status  # noqa: E402
from test_text_round7 import checkpoint, ours, theirs  # noqa: E402

BASE = {"eos_token_id": 9999, "max_new_tokens": 6}


def _cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    from neurobrix.cli import main

    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


# --- text round 33: --system ---------------------------------------------------------------------------------------


def test_a_system_message_that_is_not_utf8_is_refused_naming_system(monkeypatch, capsys):
    """t07 (--system handed to the run unchecked): a system message with bytes that are not UTF-8 (Python passes them
    as lone surrogates) reached the run, which named the model instead; it is refused first, naming --system."""
    from neurobrix import run as run_module

    def run(opts, write=None, notice=None):
        raise AssertionError("the run was reached")

    monkeypatch.setattr(run_module, "run", run)
    code, out, err = _cli(capsys, ["run", "--model", "m", "--prompt", "hi", "--system", "caf\udce9"])
    assert (code, out) == (2, "") and err.strip().endswith("--system: not UTF-8 text") and err.count("\n") == 1, err


def test_an_empty_system_message_is_given_to_the_run(monkeypatch, capsys):
    """t08 (--system without empty_ok: argparse's check of empty values refused `--system ""`): an empty system
    message is one transformers' apply_chat_template places (checked below), so the option takes it."""
    from neurobrix import run as run_module

    seen = []

    def run(opts, write=None, notice=None):
        seen.append(opts.system)
        raise KeyboardInterrupt  # ends the command at once, in one line

    monkeypatch.setattr(run_module, "run", run)
    _cli(capsys, ["run", "--model", "m", "--prompt", "hi", "--system", ""])
    assert seen == [""]


def test_a_system_message_that_is_no_string_is_refused_by_the_python_api():
    """t09 (RunOptions.system unchecked): a system message of 5 would reach the chat template as a number; refused
    naming RunOptions.system, as the other options are."""
    from neurobrix.errors import UsageError
    from neurobrix.run import RunOptions, check_options

    with pytest.raises(UsageError, match=r"^RunOptions\.system must be a string or None, got 5"):
        check_options(RunOptions(model="m", prompt="p", system=5))


def _stub_run(monkeypatch, template: bool) -> list:
    """run() on a stored model whose tokenizer has (or has not) a chat template; what encode_prompt was handed."""
    from types import SimpleNamespace

    from test_config import BASE as CONFIG_BASE

    from neurobrix.config import ModelConfig

    handed: list = []

    class Tok:
        chat_template = "x" if template else None

        def has_chat_template(self):
            return template

        def encode_prompt(self, prompt, chat, system=None):
            handed.append((chat, system))
            return []

    config = lambda: ModelConfig.from_hf(CONFIG_BASE)  # noqa: E731
    stored = SimpleNamespace(path=None, config=config, tokenizer=lambda given=None: Tok())
    monkeypatch.setattr("neurobrix.store.resolve", lambda name: stored)
    return handed


@pytest.mark.parametrize("template", [False, True])
def test_an_empty_system_message_without_a_chat_is_refused_as_any_system_message(monkeypatch, template):
    """t11 (`opts.system and ...`: an empty system message taken for none): `--system "" --no-chat`, or `--system ""`
    for a model without a chat template, ran the prompt as if no system message were given; refused as a non-empty
    one is."""
    from neurobrix import run as run_module
    from neurobrix.errors import UsageError

    handed = _stub_run(monkeypatch, template)
    with pytest.raises(UsageError, match="^--system is a system message"):
        run_module.run(run_module.RunOptions(model="m", prompt="p", system="", chat=not template))
    assert handed == []


@pytest.mark.parametrize("family", ["llama3", "qwen2.5"])
def test_an_empty_system_message_is_placed_as_apply_chat_template_places_it(tmp_path, family):
    """t14 (`first = [] if not system`: an empty system message dropped): transformers' apply_chat_template renders
    [system "", user] otherwise than [user] under these templates (checked); the engine's ids are its."""
    from test_text_round27 import FAMILIES
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    save(tmp_path, "bytelevel", chat_template=FAMILIES[family])
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    user = [{"role": "user", "content": "hi"}]

    def ids(chat):
        return tok.apply_chat_template(chat, add_generation_prompt=True, return_dict=True)["input_ids"]

    want = ids([{"role": "system", "content": ""}, *user])
    assert want != ids(user)
    assert Tokenizer(tmp_path).encode_prompt("hi", chat=True, system="") == want


# --- strict round 39: generation settings ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen34") / "base")


def _settings(folder: Path, setting: dict) -> None:
    (folder / "generation_config.json").write_text(json.dumps({**BASE, **setting}))


RUNS = {  # transformers' generate runs each to its greedy text (computed), which the engine prints with no note
    "top_k true": ({"top_k": True}, "g01 (a boolean taken for no number)"),
    "penalty_alpha 0": ({"penalty_alpha": 0}, "g04 (contrastive from 0 on)"),
    "penalty_alpha 0.5 top_k 1": ({"penalty_alpha": 0.5, "top_k": 1}, "g05 (contrastive from top_k 1 on)"),
    "penalty_alpha text top_k 1": ({"penalty_alpha": "x", "top_k": 1}, "g15 (penalty_alpha compared at top_k 1)"),
    "prefill_chunk_size 4": ({"prefill_chunk_size": 4}, "g17 (a chunked prefill refused without use_cache)"),
    "use_cache 1": ({"use_cache": 1}, "g19 (every use_cache but a boolean refused)"),
    "early exit 0 beside prompt lookup 0": (
        {"assistant_early_exit": 0, "prompt_lookup_num_tokens": 0},
        "g10 (an early exit of 0 taken for none: the prompt lookup judged)",
    ),
}


@pytest.mark.parametrize("case", RUNS)
def test_settings_transformers_generate_runs_are_run_unnamed(model_folder, monkeypatch, case):
    """g01 g04 g05 g10 g15 g17 g19: each setting here was refused (or named as unapplied) by its plant."""
    setting, _ = RUNS[case]
    _settings(model_folder, setting)
    ids, text, notes = ours(model_folder, monkeypatch)
    assert (ids, text) == theirs(model_folder)
    assert not any(name in note for note in notes for name in setting), notes


FAILS = {  # transformers' generate raises on each (computed): refused by name
    "num_beams 1 beside top_k text": ({"num_beams": 1, "top_k": "x"}, "top_k 'x'", "g02 (num_beams 1 taken for beams)"),
    "max_matching_ngram_size text": (
        {"prompt_lookup_num_tokens": 2, "max_matching_ngram_size": "x"},
        "max_matching_ngram_size 'x'",
        "g13 (the n-gram size compared with 1 whatever its type: a TypeError traceback)",
    ),
}


@pytest.mark.parametrize("case", FAILS)
def test_settings_transformers_generate_fails_on_are_refused_by_name(model_folder, monkeypatch, capsys, case):
    """g02 g13."""
    from test_strict_round39 import FAILED, _refused

    setting, named, _ = FAILS[case]
    _settings(model_folder, setting)
    with pytest.raises(FAILED):
        theirs(model_folder)
    _refused(model_folder, monkeypatch, capsys, named)


NAMED = {  # transformers' generate runs another decoding than greedy (or loads it from the hub): named, not refused
    "constraints [] beside top_k text": ({"constraints": [], "top_k": "x"}, "constraints=[]", "g03"),
    "constraints 0": ({"constraints": 0}, "constraints=0", "g22"),
    "constraints {}": ({"constraints": {}}, "constraints={}", "g22"),
    "beams beside penalty_alpha": ({"num_beams": 2, "penalty_alpha": 0.5}, "num_beams=2", "g06"),
    "beams beside top_k text": ({"num_beams": 2, "top_k": "x"}, "num_beams=2", "g14"),
}


@pytest.mark.parametrize("case", NAMED)
def test_settings_of_another_decoding_are_named_alone(model_folder, monkeypatch, case):
    """g03 (an empty constraints list taken for no constrained beam search: the top_k beside it refused, where
    transformers takes constrained beam search and never compares it), g22 (constraints other than a list not named),
    g06 (penalty_alpha named beside beams, where transformers runs beam search: it runs, where contrastive search
    would load from the hub), g14 (a top_k of text refused beside beams, which never compare it). The note names the
    setting transformers decodes by, and no other of these settings."""
    setting, named, _ = NAMED[case]
    _settings(model_folder, setting)
    if "num_beams" in setting:
        theirs(model_folder)  # beam search runs: no contrastive search, no comparison of top_k
    else:
        with pytest.raises(ValueError, match="Constrained Beam Search requires `trust_remote_code"):
            theirs(model_folder)
    notes = ours(model_folder, monkeypatch)[2]
    assert [n for n in notes if "does not apply" in n and named in n], notes
    others = [name for name in setting if name not in named]
    assert not any(f"{name}=" in note for note in notes for name in others), notes


def test_settings_read_from_config_json_include_use_cache(tmp_path, monkeypatch, capsys):
    """g20 (use_cache left out of GENERATION_FIELDS): without generation_config.json, transformers takes the settings
    from config.json, its use_cache among them, and refuses a chunked prefill without a cache (computed); the engine
    read prefill_chunk_size there but not use_cache, and ran."""
    from test_strict_round39 import _refused

    folder = checkpoint(tmp_path / "m", fields={"prefill_chunk_size": 4, "use_cache": False})
    with pytest.raises(ValueError, match="prefill chunking without a cache"):
        theirs(folder, max_new_tokens=6)
    _refused(folder, monkeypatch, capsys, "prefill_chunk_size 4")


# --- strict round 39: config.json -----------------------------------------------------------------------------------


def test_labels_keyed_by_any_integer_int_reads_are_taken(tmp_path, monkeypatch):
    """c03 (keys tested with str.isdigit: "-1" and " 2", which int() and so transformers' config read, refused). The
    model runs to transformers' text."""
    folder = checkpoint(tmp_path / "m", fields={"id2label": {"-1": "a", " 2": "b"}}, generation=BASE)
    assert transformers.AutoConfig.from_pretrained(folder).id2label == {-1: "a", 2: "b"}
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


# --- walk-through 33: Ctrl-C in the conformance command ------------------------------------------------------------


def test_a_pool_worker_interrupted_ends_quietly(capfd):
    """w03 (the pool workers' initializer without the quiet Ctrl-C handler), w05 (the handler raising SystemExit, not
    ending the process): a ProcessPoolExecutor worker catches whatever its item raises, BaseException included, and
    hands it back as the item's result, so the worker served on (and printed a traceback where idle). It ends, exit
    130, silently."""
    from conformance import workers

    pool = workers.Workers(2, [None])._pool(1)
    try:
        assert pool.submit(time.sleep, 0).result(60) is None  # the worker serves, its initializer run
        (process,) = list(pool._processes.values())  # type: ignore[attr-defined]
        pool.submit(time.sleep, 60)
        time.sleep(0.5)
        os.kill(process.pid, signal.SIGINT)
        assert exit_status(process, 60) == 128 + signal.SIGINT
    finally:
        for process in list(pool._processes.values()):  # type: ignore[attr-defined]
            if process.is_alive():
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


@pytest.fixture
def python_ctrl_c():
    """Python's own SIGINT handler while the test runs, as a terminal's command starts with it (pytest run as a
    background job, `&` in a script, starts with SIGINT ignored, which the conformance command leaves alone)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _items(monkeypatch, ran: list, done: list, lose: bool) -> None:
    """`python -m conformance track --check` made to run three items here (the interpreter's way), the first losing
    a Ctrl-C inside a garbage-collection callback where ``lose``."""
    from test_walkthrough33 import _lose_a_ctrl_c

    from conformance import __main__ as cli
    from conformance import workers

    def items(args):
        with workers.Workers(1, [None]) as pool:
            pool.map(lambda n: _lose_a_ctrl_c() if lose and n == 0 else ran.append(n), [(0,), (1,), (2,)], done.append)
        return 0

    monkeypatch.setattr(cli, "cmd_track", items)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost Ctrl-C, printed
def test_the_item_under_way_is_done_before_a_lost_ctrl_c_is_raised_again(monkeypatch, capsys, python_ctrl_c):
    """w07 (the lost Ctrl-C raised before the item's on_done): the item that ran to its end was not recorded as
    done (certify's progress, check's count)."""
    from conformance import __main__ as cli

    ran: list = []
    done: list = []
    _items(monkeypatch, ran, done, lose=True)
    assert cli.main(["track", "--check"]) == 128 + signal.SIGINT
    assert (ran, done) == ([], [0])


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_lost_ctrl_c_stops_only_the_command_it_reached(monkeypatch, capsys, python_ctrl_c):
    """w08 (the record of lost Ctrl-Cs kept from one command to the next): a Python caller running the conformance
    command again after an interrupted one had the new command interrupted after its first item (as merged, each
    command cleared the record as it began; now as it ends)."""
    from conformance import __main__ as cli

    ran: list = []
    _items(monkeypatch, ran, [], lose=True)
    assert cli.main(["track", "--check"]) == 128 + signal.SIGINT
    _items(monkeypatch, ran, [], lose=False)
    assert cli.main(["track", "--check"]) == 0 and ran == [0, 1, 2]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_lost_ctrl_c_is_forgotten_once_its_command_ends(monkeypatch, capsys, python_ctrl_c):
    """Found by w08's run (a KeyboardInterrupt out of test_conformance's out-of-memory test, which maps entries through
    Workers in this process): the record of a Ctrl-C lost in an interrupted command outlived it, so items a Python
    caller ran through Workers afterwards, outside any command, were interrupted after the first. The command clears
    it as it ends (w08: that clear left out)."""
    from conformance import __main__ as cli
    from conformance import workers

    ran: list = []
    _items(monkeypatch, ran, [], lose=True)
    assert cli.main(["track", "--check"]) == 128 + signal.SIGINT
    try:
        with workers.Workers(1, [None]) as pool:
            pool.map(ran.append, [(0,), (1,), (2,)])
    except KeyboardInterrupt:
        pytest.fail(f"interrupted after the items {ran}: the ended command's Ctrl-C raised again")
    assert ran == [0, 1, 2]


def test_the_conformance_command_runs_from_another_thread(monkeypatch, capsys, python_ctrl_c):
    """w09 (the SIGINT handler set whatever the thread): Python sets signal handlers in the main thread only, so
    main() called from another thread ended in "ValueError: signal only works in main thread"."""
    from conformance import __main__ as cli

    ran: list = []
    _items(monkeypatch, ran, [], lose=False)
    result: list = []
    thread = threading.Thread(target=lambda: result.append(cli.main(["track", "--check"])))
    thread.start()
    thread.join(60)
    assert result == [0] and ran == [0, 1, 2]


@pytest.mark.parametrize("handler", [signal.SIG_IGN, lambda signum, frame: None], ids=["ignored", "the caller's"])
def test_a_ctrl_c_handler_the_command_did_not_find_as_pythons_is_left_alone(monkeypatch, handler):
    """w10 (the command's handler set over any): a SIGINT ignored (a background job's `nohup`, `&` in a script) or
    handled by the Python caller was replaced while the command ran: Ctrl-C then interrupted a job meant to ignore
    it."""
    from conformance import __main__ as cli

    seen: list = []
    monkeypatch.setattr(cli, "cmd_track", lambda args: seen.append(signal.getsignal(signal.SIGINT)) or 0)
    previous = signal.signal(signal.SIGINT, handler)
    try:
        assert cli.main(["track", "--check"]) == 0
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [handler]


def test_a_qwen2_window_of_null_is_taken(tmp_path, monkeypatch):
    """c06 (Qwen2's sliding_window typed "int", not "int?"): Qwen2Config types it an integer or null, and a file with
    null (use_sliding_window false) runs to transformers' text."""
    folder = checkpoint(tmp_path / "m", "Qwen2Config", fields={"sliding_window": None}, generation=BASE)
    assert transformers.AutoConfig.from_pretrained(folder).sliding_window is None
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
