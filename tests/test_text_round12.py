"""The twelfth round of text parity: the edges of sampling settings transformers' ``generate`` accepts, the settings
that make it decode otherwise than token by token, and config.json values that make transformers load other weights
or refuse the model. Tiny random checkpoints (round 7's) are run through `neurobrix run` (PyTorch's kernels) and
through transformers on the same folder, greedy in float64 or sampled in float32 after ``torch.manual_seed`` (round
10's); ids and text must be equal, or the engine must refuse the input in one line naming the field (exit 2), where
transformers computes what the engine does not. Each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, theirs  # noqa: E402
from test_text_round7 import ours as round7_ours  # noqa: E402

SEED, TEMPERATURE = 5, 1.3
GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def sampled(folder: Path, **options) -> tuple[list[int], str]:
    """transformers' generate(do_sample=True, temperature=TEMPERATURE, **options) after torch.manual_seed(SEED), in
    float32 (the engine's CPU dtype), with the folder's generation_config.json: new ids, their text."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    torch.manual_seed(SEED)
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=True, temperature=TEMPERATURE, **options)
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


def ours(folder: Path, monkeypatch, **sampling) -> tuple[list[int], str, list[str]]:
    """`neurobrix run --no-chat --backend torch` on the imported folder, sampling with --temperature TEMPERATURE
    --seed SEED and ``sampling`` (``Sampling``'s other fields) when given any, else greedy: new ids, text, notes."""
    from neurobrix.generate import Sampling

    if sampling.pop("sample", bool(sampling)):
        return round7_ours(folder, monkeypatch, sampling=Sampling(TEMPERATURE, seed=SEED, **sampling))
    return round7_ours(folder, monkeypatch)


def refused(folder: Path, monkeypatch, capsys, named: str, *flags: str) -> None:
    """`neurobrix run` on the imported folder (with ``flags``) exits 2 with one line naming ``named``, no traceback."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch", *flags])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err, err


# --- top_p 0 and top_k 0, as transformers' generate takes them ----------------------------------------------------


@pytest.mark.parametrize(
    "setting, given",
    [
        ({"top_p": 0.0}, {}),  # the model's top_p 0: only the most likely token is kept
        ({"top_k": 0, "top_p": 0.0}, {}),
        ({}, {"top_p": 0.0}),  # --top-p 0
        ({"top_k": 5}, {"top_k": 0}),  # --top-k 0 turns the model's top_k off, as generate(top_k=0) does
        ({}, {"top_k": 0}),  # ... and transformers' default of 50
        ({"top_k": 3, "top_p": 0.9}, {"top_k": 0, "top_p": 0.0}),
    ],
)
def test_top_p_zero_and_top_k_zero_sample_as_transformers_generate(model_folder, monkeypatch, setting, given):
    """transformers' TopPLogitsWarper takes top_p in [0, 1] (0 keeps the most likely token) and generate builds no
    top-k warper for top_k 0 (every token kept, the default of 50 included). Before: the engine refused a model's
    top_p of 0 naming --top-p, and --top-p 0 and --top-k 0 themselves, so a user could neither sample as the model
    says nor turn top-k off as generate(top_k=0) does."""
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, **setting}))
    want = sampled(model_folder, **given)
    assert (ours(model_folder, monkeypatch, sample=True, **given))[:2] == want


def test_top_k_zero_is_not_the_default_top_k(model_folder, monkeypatch):
    """The case above is not vacuous: with top_k 50 (transformers' default) the draws part from those with every
    token kept, and --top-k 0 gives the latter."""
    (model_folder / "generation_config.json").write_text(json.dumps(GENERATION))
    assert sampled(model_folder) != sampled(model_folder, top_k=0)


# --- assisted generation: greedy, the same tokens; sampling, other draws ------------------------------------------

ASSISTED = {"prompt lookup": {"prompt_lookup_num_tokens": 3}, "early exit": {"assistant_early_exit": 1}}


@pytest.mark.parametrize("case", ASSISTED)
def test_assisted_generation_when_sampling_is_refused_naming_the_setting(model_folder, monkeypatch, capsys, case):
    """generation_config.json's prompt_lookup_num_tokens or assistant_early_exit make transformers' generate decode by
    assisted generation: greedy, it keeps plain greedy decoding's tokens (checked here: the engine's text is
    transformers'); sampling, it draws candidates' checks together (prompt lookup) or by speculative sampling from a
    draft (early exit), so the same seed draws other tokens. Before: the engine sampled token by token, silently
    printing other text than transformers' seeded generate; now it refuses to sample, naming the setting."""
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, **ASSISTED[case]}))
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)
    plain = model_folder.parent / "plain"
    if not plain.exists():
        import shutil

        shutil.copytree(model_folder, plain)
    (plain / "generation_config.json").write_text(json.dumps(GENERATION))
    assert sampled(model_folder) != sampled(plain)  # transformers' assisted draws are not token-by-token draws
    name = next(iter(ASSISTED[case]))
    refused(model_folder, monkeypatch, capsys, f"sets {name}=", "--temperature", str(TEMPERATURE), "--seed", "5")


# --- config.json that makes transformers load other weights --------------------------------------------------------


def _import_refused(folder: Path, monkeypatch, capsys, named: str) -> None:
    """`neurobrix import` refuses the folder (exit 2, as every config.json refusal) naming ``named``; nothing stored."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    with pytest.raises(SystemExit) as exit:
        main(["import", str(folder)])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err, err
    assert not list((folder.parent / "home" / "models").glob("*"))


@pytest.mark.parametrize(
    "quantization",
    [
        {"quant_method": "bitsandbytes", "load_in_8bit": True},
        {"quant_method": "fp8", "weight_block_size": [16, 16]},
        {"quant_method": "quanto", "weights": "int8"},
        {},
    ],
)
def test_a_quantization_config_is_refused_by_name(tmp_path, monkeypatch, capsys, quantization):
    """config.json's quantization_config makes transformers' from_pretrained load the weights through its quantizer
    (8-bit or fp8 numbers in place of the file's, or a refusal where the quantizer's package or a GPU is missing; an
    empty one it refuses). Before: the engine ran the file's full-precision weights as if the field were not there."""
    plain = theirs(checkpoint(tmp_path / "plain", generation=GENERATION))
    folder = checkpoint(tmp_path / "m", fields={"quantization_config": quantization}, generation=GENERATION)
    try:
        runs_plain = theirs(folder) == plain
    except (ImportError, ValueError, RuntimeError, AssertionError):  # transformers does not run it here at all
        runs_plain = False
    assert not runs_plain
    _import_refused(
        folder, monkeypatch, capsys, f"quantization_config (quant_method {quantization.get('quant_method')!r})"
    )


def test_a_null_quantization_config_runs(tmp_path, monkeypatch):
    """quantization_config null is no quantization to transformers: the text is the plain model's."""
    folder = checkpoint(tmp_path / "m", fields={"quantization_config": None}, generation=GENERATION)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


# --- config.json values with which transformers cannot build the model ---------------------------------------------


def _config(folder: Path, **fields) -> Path:
    """``folder`` with config.json given ``fields`` (None: written as null)."""
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, **fields}))
    return folder


def _as_llama(folder: Path) -> Path:
    """A Mistral checkpoint's folder read as Llama (the same tensor names): model_type and architectures rewritten,
    Mistral's own fields dropped."""
    data = json.loads((folder / "config.json").read_text())
    data = {k: v for k, v in data.items() if k not in ("sliding_window", "layer_types")}
    (folder / "config.json").write_text(
        json.dumps({**data, "model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    )
    return folder


REFUSED = {
    "llama tie_word_embeddings null": (
        ("LlamaConfig", None),
        {"tie_word_embeddings": None},
        "field 'tie_word_embeddings' is null",
    ),
    "llama attention_bias null": (("LlamaConfig", None), {"attention_bias": None}, "field 'attention_bias' is null"),
    "mistral num_key_value_heads null": (
        ("MistralConfig", {"sliding_window": None, "num_key_value_heads": 4}),
        {"num_key_value_heads": None},
        "field 'num_key_value_heads' is null",
    ),
    "qwen2 max_window_layers null": (
        ("Qwen2Config", None),
        {"max_window_layers": None},
        "field 'max_window_layers' is null",
    ),
    "qwen2 use_sliding_window null": (
        ("Qwen2Config", None),
        {"use_sliding_window": None},
        "field 'use_sliding_window' is null",
    ),
    "qwen2 head_dim null": (("Qwen2Config", None), {"head_dim": None}, "field 'head_dim' is null"),
    "pad_token_id past the vocabulary": (("LlamaConfig", None), {"pad_token_id": 320}, "pad_token_id 320 is not a row"),
    "pad_token_id below it": (("Qwen2Config", None), {"pad_token_id": -321}, "pad_token_id -321 is not a row"),
    "llama hidden_size over heads not whole": (
        ("MistralConfig", {"sliding_window": None, "num_attention_heads": 6, "num_key_value_heads": 3, "head_dim": 16}),
        "llama",
        "hidden_size 64 is not a multiple of num_attention_heads 6",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_config_values_transformers_cannot_build_a_model_from_are_refused(tmp_path, monkeypatch, capsys, case):
    """Values transformers 5 refuses when it reads config.json or builds the model: null in a field its config class
    types without None (its strict validation), a null head_dim on Qwen2 (its attention takes the field as written),
    a pad_token_id outside the embedding (nn.Embedding's padding index), a Llama hidden_size that is not a multiple
    of num_attention_heads (LlamaConfig's check, even where head_dim sizes the heads). Before: the engine ran each,
    reading null as the class's default, printing text where transformers has none; now import refuses it by name."""
    (family, args), fields, named = REFUSED[case]
    folder = checkpoint(tmp_path / "m", family, args, generation=GENERATION)
    folder = _as_llama(folder) if fields == "llama" else _config(folder, **fields)
    with pytest.raises(Exception) as failed:  # transformers' own refusal (its validation, or the model's build)
        theirs(folder)
    assert not isinstance(failed.value, AssertionError) or "Padding_idx" in str(failed.value)
    _import_refused(folder, monkeypatch, capsys, named)


def test_values_transformers_builds_from_still_run(tmp_path, monkeypatch):
    """Their neighbours run as before: a pad_token_id of -1 (the embedding's last row, as some Llama files write it),
    null where the class takes None (Llama's num_key_value_heads and head_dim, Qwen2's sliding_window)."""
    folder = checkpoint(tmp_path / "m", "Qwen2Config", {"num_key_value_heads": 4}, generation=GENERATION)
    _config(folder, pad_token_id=-1, num_key_value_heads=None, sliding_window=None)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
    folder = checkpoint(tmp_path / "l", "LlamaConfig", {"num_key_value_heads": 4}, generation=GENERATION)
    _config(folder, pad_token_id=-1, num_key_value_heads=None, head_dim=None)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


# --- renormalize_logits: the draw's distribution bit for bit ------------------------------------------------------


def test_renormalize_logits_hands_the_draw_transformers_distribution_bit_for_bit():
    """generation_config.json's renormalize_logits makes transformers' last processor a log-softmax of the warped
    scores (LogitNormalization), whose softmax the draw takes: in float32 not the plain softmax bit for bit (checked),
    so a seeded draw near a boundary picks another token. Before: the engine ignored the setting and handed the draw
    the plain softmax."""
    from test_model_reference import handed_to_the_draw
    from transformers.generation import logits_process as lp

    from neurobrix.generate import Sampling

    gen = torch.Generator().manual_seed(0)
    rows = [torch.randn((4, 64), generator=gen) * 3, torch.randint(-3, 4, (4, 40), generator=gen).float()]
    differs = False
    for logits in rows:
        for option in ({}, {"top_k": 7}, {"top_p": 0.8, "min_p": 0.05}):
            scores = logits / 0.8
            for name, warper in (("top_k", lp.TopKLogitsWarper), ("top_p", lp.TopPLogitsWarper)):
                if name in option:
                    scores = warper(option[name])(None, scores)
            if "min_p" in option:
                scores = lp.MinPLogitsWarper(option["min_p"])(None, scores)
            want = lp.LogitNormalization()(None, scores).softmax(dim=-1)
            differs |= not torch.equal(want, scores.softmax(dim=-1))
            _, (handed,) = handed_to_the_draw(logits, Sampling(0.8, renormalize_logits=True, **option))
            assert torch.equal(handed, want), option
    assert differs


def test_renormalize_logits_from_the_model_is_sampled_with(model_folder, monkeypatch):
    """The model's renormalize_logits is taken when sampling (named in the note), and the seeded text is
    transformers'."""
    (model_folder / "generation_config.json").write_text(
        json.dumps({**GENERATION, "renormalize_logits": True, "top_k": 20})
    )
    ids, text, notes = ours(model_folder, monkeypatch, sample=True)
    assert (ids, text) == sampled(model_folder)
    assert any("top_k 20, renormalize_logits from the model's" in n for n in notes), notes
