"""The fifteenth round of text parity: token ids written as other kinds of JSON value where transformers' generate reads
them as ids, infinite penalties and biases, remove_invalid_values, and the named chat templates of
``additional_chat_templates/``.

- generation_config.json's eos_token_id: generate makes ``torch.tensor(value, dtype=torch.long)`` of it, so 289.0 and
  289.5 end the text at 289, true at 1, [[289]] at 289, and [289, true] at either. The engine refused every value that
  was not an integer or a list of them; it now reads the value as that tensor, and refuses what torch cannot make one
  of (a number past int64), or an empty one without a pad id ([[]], as []).
- true and false inside bad_words_ids and sequence_bias: their processor checks ``isinstance(id, int)`` (true passes)
  and builds tensors of the sequences' ids, where a bool beside an integer is 1 or 0; only where the last ids of the
  one-token sequences (or of the longer ones of one length) are all bools does it index the scores with a mask and
  fail. The engine refused every bool; it now reads them as ids, and refuses the mask by name. An empty sequence in
  sequence_bias, which the processor passes over, ran there and was refused here.
- Infinity: repetition_penalty, encoder_repetition_penalty (from the file or ``--repetition-penalty``) and a
  sequence_bias bias may be infinite in transformers' processors (a held token's score 0 or -inf, +-inf for a biased
  one); the engine refused them. NaN is still refused.
- remove_invalid_values: transformers' InfNanRemoveLogitsProcessor (after the forced tokens) makes an eos id masked by
  min_new_tokens the smallest float32 rather than -inf, which exponential_decay_length_penalty then raises, so the text
  ends earlier. The engine ignored the setting.
- additional_chat_templates/NAME.jinja: transformers 5 reads each as the chat template NAME, "default.jinja" in place
  of chat_template.jinja, and they replace tokenizer_config.json's template (with named templates only, a plain chat
  has no default: apply_chat_template refuses). `neurobrix import` stored none of them (from a folder or the hub), so
  a model's default template there was lost and tokenizer_config.json's rendered instead.

Round 7's tiny random checkpoints are run through `neurobrix run` (PyTorch's kernels) and transformers' greedy
``generate`` in float64; the chat templates through transformers' tokenizer. Each test failed before its fix."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, checkpoint, ours, theirs  # noqa: E402
from test_text_round13 import _no_text, refused  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def _write(folder: Path, setting: dict) -> None:
    (folder / "generation_config.json").write_text(json.dumps({**GENERATION, **setting}))


# --- eos_token_id as generate's int64 tensor ---------------------------------------------------------------------

EOS = {
    "a fraction": {"eos_token_id": PLAIN[3] + 0.5},
    "true": {"eos_token_id": True},
    "a nested list": {"eos_token_id": [[PLAIN[3]]]},
    "true beside an id, under min_new_tokens": {"eos_token_id": [True, PLAIN[3]], "min_new_tokens": 4},
    "floats under the decay": {"eos_token_id": [float(PLAIN[5])], "exponential_decay_length_penalty": [2, 3.0]},
    "an empty nested list with a pad id": {"eos_token_id": [[]], "pad_token_id": 0},
}


@pytest.mark.parametrize("case", EOS)
def test_an_eos_token_id_generate_makes_ids_of_runs_as_it_reads_it(model_folder, monkeypatch, case):
    """Before: refused ("eos_token_id must be a token id or a list of ids") where generate ends the text there."""
    _write(model_folder, EOS[case])
    want = theirs(model_folder)
    assert want[0] != PLAIN or case in ("true", "an empty nested list with a pad id")  # an eos id read from it acts
    assert ours(model_folder, monkeypatch)[:2] == want


@pytest.mark.parametrize(
    "setting, named",
    [
        ({"eos_token_id": [[]]}, "eos_token_id [[]]"),  # before: ran to the limit (no eos, no pad)
        ({"eos_token_id": [PLAIN[3], 1e30]}, "eos_token_id must be a token id or a list of ids, got [283, 1e+30]"),
    ],
)
def test_an_eos_token_id_generate_makes_no_tensor_of_is_refused(model_folder, monkeypatch, capsys, setting, named):
    _write(model_folder, setting)
    _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, named.replace("283", str(PLAIN[3])))


# --- true and false among a sequence's ids -----------------------------------------------------------------------

BOOLS = {
    "a bad word starting with true": {"bad_words_ids": [[True, PLAIN[1]], [PLAIN[0]]]},
    "true beside an id among one-token bad words": {"bad_words_ids": [[True], [PLAIN[0]]]},
    "a bias on true beside one on an id": {"sequence_bias": [[[True], 30.0], [[PLAIN[0]], -1.0]]},
    "a bias after false": {"sequence_bias": [[[False, PLAIN[1]], -30.0], [[PLAIN[0]], -1.0]]},
    "an empty biased sequence": {"sequence_bias": [[[], -1.0], [[PLAIN[0]], -30.0]]},
}


@pytest.mark.parametrize("case", BOOLS)
def test_bools_the_sequence_processors_read_as_ids_run(model_folder, monkeypatch, case):
    """Before: refused ("must be a token id or a list of ids"; sequence_bias's empty sequence as no pair) where
    transformers generates this text (with a bias of 30 on true, token 1 throughout)."""
    _write(model_folder, BOOLS[case])
    want = theirs(model_folder)
    assert want[0] != PLAIN
    assert ours(model_folder, monkeypatch)[:2] == want


@pytest.mark.parametrize(
    "setting, named",
    [
        ({"bad_words_ids": [[True]]}, "bad_words_ids [[True]]"),
        ({"bad_words_ids": [[PLAIN[0], True]]}, f"bad_words_ids [[{PLAIN[0]}, True]]"),
        ({"sequence_bias": [[[PLAIN[0], False], -1.0]]}, "sequence_bias"),
    ],
)
def test_bools_that_are_a_mask_to_the_processor_are_refused(model_folder, monkeypatch, capsys, setting, named):
    _write(model_folder, setting)
    _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, named, also="all true or false")


# --- infinity ------------------------------------------------------------------------------------------------------

INFINITE = {
    "repetition_penalty": {"repetition_penalty": math.inf},
    "encoder_repetition_penalty": {"encoder_repetition_penalty": math.inf},
    "sequence_bias -inf": {"sequence_bias": [[[PLAIN[0]], -math.inf]]},
    "sequence_bias +inf": {"sequence_bias": [[[PLAIN[1]], math.inf]]},
}


@pytest.mark.parametrize("case", INFINITE)
def test_infinite_penalties_and_biases_run_as_transformers_processors_take_them(model_folder, monkeypatch, case):
    """Before: refused ("a number > 0", "a finite bias")."""
    _write(model_folder, INFINITE[case])
    want = theirs(model_folder)
    assert want[0] != PLAIN
    assert ours(model_folder, monkeypatch)[:2] == want


def test_an_infinite_repetition_penalty_given_to_run_is_applied(model_folder, monkeypatch):
    from neurobrix.generate import Sampling

    _write(model_folder, {})
    want = theirs(model_folder, repetition_penalty=math.inf)
    assert ours(model_folder, monkeypatch, sampling=Sampling(repetition_penalty=math.inf))[:2] == want


def test_a_nan_bias_is_refused_by_name(model_folder, monkeypatch, capsys):
    _write(model_folder, {"sequence_bias": [[[PLAIN[0]], math.nan]]})
    refused(
        model_folder, monkeypatch, capsys, "sequence_bias [[[283], nan]]: a bias of NaN".replace("283", str(PLAIN[0]))
    )


# --- remove_invalid_values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("remove", [True, False, 1])
def test_remove_invalid_values_lets_the_decay_raise_a_masked_eos(model_folder, monkeypatch, remove):
    """InfNanRemoveLogitsProcessor (on only for exactly true) makes the eos id min_new_tokens masks the smallest
    float32, which the decay then raises past every other score: the text ends at the eos id at the first step past
    the decay's start. Before: the setting was ignored (the text of false)."""
    decay = {"exponential_decay_length_penalty": [2, 2.0], "min_new_tokens": 8, "eos_token_id": PLAIN[5]}
    _write(model_folder, {**decay, "remove_invalid_values": remove})
    want = theirs(model_folder)
    assert (want[0][-1] == PLAIN[5] and len(want[0]) < 6) == (remove is True)
    assert ours(model_folder, monkeypatch)[:2] == want


# --- additional_chat_templates/ ----------------------------------------------------------------------------------

A = "A:{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}>>{% endif %}"
B = "B:{% for m in messages %}[{{ m['content'] }}]{% endfor %}{% if add_generation_prompt %}<<{% endif %}"
MESSAGES = [{"role": "user", "content": "hello world"}]


def _templated(folder: Path, jinja: str | None, named: dict[str, str], in_config: str | None = None) -> Path:
    from tokenizer_fixtures import save

    save(folder, "bytelevel")
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    if in_config is not None:
        config["chat_template"] = in_config
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    if jinja is not None:
        (folder / "chat_template.jinja").write_text(jinja)
    (folder / "additional_chat_templates").mkdir(exist_ok=True)
    for name, text in named.items():
        (folder / "additional_chat_templates" / f"{name}.jinja").write_text(text)
    return folder


@pytest.mark.parametrize(
    "jinja, named, in_config",
    [(A, {"default": B}, None), (None, {"default": B}, A), (A, {"tool_use": B}, None)],
    ids=["default.jinja over chat_template.jinja", "default.jinja over tokenizer_config", "a named one beside"],
)
def test_the_named_templates_are_read_as_transformers_reads_them(tmp_path, jinja, named, in_config):
    from neurobrix.tokenizer import Tokenizer

    folder = _templated(tmp_path / "m", jinja, named, in_config)
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    want = hf.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert Tokenizer(folder).render_chat(MESSAGES) == want
    ids = hf.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    assert Tokenizer(folder).encode_prompt("hello world", chat=True) == ids


def test_named_templates_without_a_default_leave_no_chat_template(tmp_path, monkeypatch, capsys):
    """Named templates only (tokenizer_config.json's template replaced by them): transformers' apply_chat_template
    refuses a plain chat; the engine uses the prompt as is, saying so (as for a model without a template). Before: it
    rendered tokenizer_config.json's template."""
    from neurobrix.cli import main

    folder = checkpoint(tmp_path / "m", generation={**GENERATION, "max_new_tokens": 2})
    _templated(folder, None, {"tool_use": B}, in_config=A)
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    with pytest.raises(ValueError, match="multiple chat templates with no default"):
        hf.apply_chat_template(MESSAGES, add_generation_prompt=True)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    assert main(["run", "--model", "m", "--prompt", "hello world", "--backend", "torch", "--no-stream"]) == 0
    err = capsys.readouterr().err
    assert "note: this model's chat templates (tool_use) include no default one; the prompt is used as is" in err


def test_import_stores_the_named_templates_and_run_reads_them(tmp_path, monkeypatch):
    """Before: `neurobrix import` copied chat_template.jinja and no named template, so the stored model rendered
    chat_template.jinja's template where transformers renders default.jinja's. A template dropped into the stored
    folder after the import is damage, as any file run reads."""
    from neurobrix import store

    folder = checkpoint(tmp_path / "m", generation=GENERATION)
    _templated(folder, A, {"default": B, "tool_use": A})
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    model = store.import_model(str(folder), progress=False)
    assert {"additional_chat_templates/default.jinja", "additional_chat_templates/tool_use.jinja"} <= set(model.files)
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    stored = store.resolve("m")
    assert stored.tokenizer().render_chat(MESSAGES) == hf.apply_chat_template(
        MESSAGES, add_generation_prompt=True, tokenize=False
    )
    (stored.path / "additional_chat_templates" / "x.jinja").write_text(A)
    with pytest.raises(store.DamagedModelError, match="additional_chat_templates/x.jinja is not among the files"):
        store.resolve("m")


def test_a_hub_import_fetches_the_named_templates(tmp_path, monkeypatch):
    """The same repository on the hub (served from a local cache): additional_chat_templates/default.jinja is fetched
    and stored, as transformers lists and fetches that folder's templates."""
    import hashlib
    import os

    from store_fixtures import populate_hub_cache
    from test_store import FakeHub

    from neurobrix import store

    folder = checkpoint(tmp_path / "m", generation=GENERATION)
    _templated(folder, A, {})
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    snapshot = populate_hub_cache(tmp_path / "hf", "org/named", folder)
    blob = snapshot.parent.parent / "blobs" / hashlib.sha256(B.encode()).hexdigest()
    blob.write_text(B)
    (snapshot / "additional_chat_templates").mkdir()
    link = snapshot / "additional_chat_templates" / "default.jinja"
    os.symlink(os.path.relpath(blob, link.parent), link)
    FakeHub(
        monkeypatch, [*(p.name for p in folder.iterdir() if p.is_file()), "additional_chat_templates/default.jinja"]
    )
    model = store.import_model("org/named", progress=False)
    assert "additional_chat_templates/default.jinja" in model.files
    hf = transformers.AutoTokenizer.from_pretrained(snapshot)  # the repository as transformers reads it
    want = hf.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert want != transformers.AutoTokenizer.from_pretrained(folder).apply_chat_template(MESSAGES, tokenize=False)
    assert store.resolve("org/named").tokenizer().render_chat(MESSAGES) == want
