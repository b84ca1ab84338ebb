"""The seventh round of text parity: config.json and generation_config.json at their edges, and batches. Tiny random
checkpoints (a byte-level tokenizer, weights drawn wide so that greedy choices are far from ties) are run through
`neurobrix run` (PyTorch's kernels: what is checked is the way from the files to the text, not a kernel) and through
transformers' greedy ``generate`` in float64 on the same folder; the decoded text and the token ids must be equal.
Where transformers would compute something the engine does not, the engine must refuse it by name at import or name
it in a note. The first test failed before its fix; the others hold the ground the round probed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

COMMON = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
    "vocab_size": 320,  # the byte-level fixture's vocabulary
}
PROMPT = "Hello world, the model runs fast. never guess a setting."  # 35 tokens
MARGIN = 1e-3  # least top-2 logit gap (float64) at every greedy step: float32's error here is below 1e-5


def checkpoint(folder: Path, family: str = "LlamaConfig", args=None, fields=None, generation=None) -> Path:
    """A tiny random checkpoint of ``family`` (transformers' config class, ``args`` to it), saved by transformers,
    config.json then given ``fields`` (a rope_scaling replaces the saved rope_parameters), a byte-level tokenizer,
    and generation_config.json as ``generation`` (none when None)."""
    from tokenizer_fixtures import save

    config = getattr(transformers, family)(**{**COMMON, **(args or {})})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(1.0 if "norm" in name else 0.0, 0.2)
    model.save_pretrained(folder, safe_serialization=True)
    data = json.loads((folder / "config.json").read_text())
    if fields and "rope_scaling" in fields:
        data.pop("rope_parameters", None)
    (folder / "config.json").write_text(json.dumps({**data, **(fields or {})}))
    (folder / "generation_config.json").unlink(missing_ok=True)
    if generation is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation))
    save(folder, "bytelevel")
    return folder


def theirs(folder: Path, **options) -> tuple[list[int], str]:
    """transformers' greedy generate (float64, the folder's generation_config.json) after PROMPT: new ids, their
    text; every step's top-2 logit gap at least MARGIN."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False, output_scores=True, return_dict_in_generate=True, **options)
    for step, scores in enumerate(out.scores):
        finite = scores[0][torch.isfinite(scores[0])]
        if finite.numel() > 1:
            top = torch.topk(finite.double(), 2).values
            assert float(top[0] - top[1]) > MARGIN, f"step {step}: a near tie, pick another seed"
    new = out.sequences[0, inputs["input_ids"].shape[1] :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


def ours(
    folder: Path, monkeypatch, max_tokens: int | None = None, stream: bool = False, sampling=None
) -> tuple[list[int], str, list[str]]:
    """`neurobrix run --no-chat --backend torch` (``--no-stream`` unless ``stream``; greedy unless ``sampling``, a
    ``generate.Sampling``) on the imported folder: new ids, text, notes."""
    from neurobrix import run, store
    from neurobrix.generate import Sampling

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    shutil.rmtree(folder.parent / "home" / "models" / folder.name, ignore_errors=True)
    store.import_model(str(folder), progress=False)
    seen: dict[str, list[int]] = {}
    real = run.generate

    def generate(*args, **kwargs):
        seen["ids"], stats = real(*args, **kwargs)
        return seen["ids"], stats

    monkeypatch.setattr(run, "generate", generate)
    text: list[str] = []
    notes: list[str] = []
    options = run.RunOptions(
        model=folder.name,
        prompt=PROMPT,
        max_tokens=max_tokens,
        backend="torch",
        chat=False,
        stream=stream,
        sampling=sampling or Sampling(),
    )
    run.run(options, write=text.append, notice=notes.append)
    return seen["ids"], "".join(text).removesuffix("\n"), notes


# --- generation_config.json settings transformers applies and the engine does not: named ----------------------


@pytest.mark.parametrize(
    # num_return_sequences with do_sample: a model that does not sample cannot set it (refused, round 13)
    "setting",
    [{"num_return_sequences": 2, "do_sample": True}, {"cache_implementation": "quantized"}, {"max_time": 1e-6}],
)
def test_settings_that_make_transformers_refuse_or_cut_the_text_are_named(tmp_path, monkeypatch, setting):
    """Before: the engine ran these silently, printing one greedy text where transformers' generate returns several
    sequences (sampled; greedy refuses), attends over a quantized KV cache (or refuses without its package), or stops
    after max_time seconds. Each changes or stops transformers' greedy generate, and is now named in run's note."""
    generation = {"eos_token_id": 9999, "max_new_tokens": 12}
    folder = checkpoint(tmp_path / "m", generation=generation)
    plain, _ = theirs(folder)
    (folder / "generation_config.json").write_text(json.dumps({**generation, **setting}))
    try:
        changed = theirs(folder)[0] != plain
    except (ValueError, ImportError):  # generate refuses to run with it
        changed = True
    assert changed
    _, _, notes = ours(folder, monkeypatch)
    name = next(iter(setting))
    assert any(f"sets {name}={setting[name]!r}, which NeuroBrix does not apply" in n for n in notes), notes


def test_settings_that_leave_transformers_greedy_text_alone_are_not_named(tmp_path, monkeypatch):
    """The same fields at values that change nothing: one sequence, a plain or static cache, no time limit."""
    generation = {
        "eos_token_id": 9999,
        "max_new_tokens": 12,
        "num_return_sequences": 1,
        "cache_implementation": "static",
        "max_time": None,
    }
    folder = checkpoint(tmp_path / "m", generation=generation)
    want = theirs(folder)
    ids, text, notes = ours(folder, monkeypatch)
    assert (ids, text) == want
    assert not [n for n in notes if "does not apply" in n]


# --- generation_config.json end to end: run's text is transformers' generate's ------------------------------------


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


# ids of the base model's greedy text after PROMPT (checked below): eos ids picked from it end it mid-way
PLAIN = [283, 161, 289, 217, 154, 89, 301, 110, 236, 146, 200, 4]
GENERATION = {
    "eos list, the second one reached first": ({"eos_token_id": [PLAIN[6], PLAIN[3]], "max_new_tokens": 24}, None),
    "min_new_tokens masks eos": ({"eos_token_id": PLAIN[3], "min_new_tokens": 5, "max_new_tokens": 12}, None),
    "max_length alone": ({"eos_token_id": 9999, "max_length": 45}, None),
    "max_new_tokens over max_length": ({"eos_token_id": 9999, "max_length": 37, "max_new_tokens": 6}, None),
    "forced eos at --max-tokens": ({"eos_token_id": [7], "max_new_tokens": 30, "forced_eos_token_id": 7}, 5),
    "penalties and n-grams": (
        {"repetition_penalty": 1.3, "encoder_repetition_penalty": 1.2, "no_repeat_ngram_size": 3, "max_new_tokens": 12},
        None,
    ),
    "sampling settings without do_sample": (
        {"do_sample": False, "temperature": 0.3, "top_p": 0.5, "top_k": 3, "min_p": 0.5, "max_new_tokens": 12},
        None,
    ),
}


def test_the_base_models_text_is_the_one_the_cases_pick_ids_from(model_folder, monkeypatch):
    (model_folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, "max_new_tokens": 12}))
    assert theirs(model_folder)[0] == PLAIN == ours(model_folder, monkeypatch)[0]


@pytest.mark.parametrize("case", GENERATION)
def test_generation_config_through_run_is_transformers_generate(model_folder, monkeypatch, case):
    generation, max_tokens = GENERATION[case]
    (model_folder / "generation_config.json").write_text(json.dumps(generation))
    options = {} if max_tokens is None else {"max_new_tokens": max_tokens}
    want = theirs(model_folder, **options)
    ids, text, _ = ours(model_folder, monkeypatch, max_tokens)
    assert (ids, text) == want


# --- config.json at its edges ------------------------------------------------------------------------------------


def _rope(kind: str, **extra) -> dict:
    return {"rope_theta": 10000.0, "rope_scaling": {"rope_type": kind, **extra}}


CONFIGS = {
    # transformers' attention takes a config's head_dim over hidden_size / heads (here 24, not 16), Qwen2's too
    "qwen2 head_dim": ("Qwen2Config", {"head_dim": 24}, None),
    # transformers' default rotation ignores partial_rotary_factor (Llama's, Mistral's and Qwen2's code alike)
    "llama default rope, partial factor": ("LlamaConfig", None, {"rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
    "mistral default rope, partial factor": (
        "MistralConfig",
        {"sliding_window": None},
        {"rope_theta": 10000.0, "partial_rotary_factor": 0.5},
    ),
    # rope_type wins over type: the default rotation, its factor unused
    "rope_type default over type linear": ("LlamaConfig", None, _rope("default", type="linear", factor=4.0)),
    # linear and llama3 past the original context (35 prompt tokens), integer fields as some files write them
    "llama3 integer fields": (
        "LlamaConfig",
        None,
        {
            "rope_theta": 500000,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 8,
                "low_freq_factor": 1,
                "high_freq_factor": 4,
                "original_max_position_embeddings": 8,
            },
        },
    ),
    "qwen2 linear": ("Qwen2Config", None, _rope("linear", factor=3.0)),
    # dynamic up to exactly the context (35 + 12 = 47 positions, the last new token never fed)
    "dynamic to the context's end": ("LlamaConfig", {"max_position_embeddings": 47}, _rope("dynamic", factor=2.0)),
    "rms_norm_eps large": ("LlamaConfig", {"rms_norm_eps": 0.5}, None),
    # MistralAttention and MistralMLP have no bias, whatever the file says
    "mistral bias fields": ("MistralConfig", {"sliding_window": None}, {"mlp_bias": True, "attention_bias": True}),
}


@pytest.mark.parametrize("case", CONFIGS)
def test_config_json_at_its_edges_gives_transformers_text(tmp_path, monkeypatch, case):
    family, args, fields = CONFIGS[case]
    folder = checkpoint(tmp_path / "m", family, args, fields, {"eos_token_id": 9999, "max_new_tokens": 12})
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


def test_tied_embeddings_with_their_own_head_in_the_file_keep_each(tmp_path, monkeypatch):
    """tie_word_embeddings true and an lm_head.weight of its own: transformers keeps the file's head."""
    from safetensors.torch import load_file, save_file

    folder = checkpoint(tmp_path / "m", fields={"tie_word_embeddings": True}, generation={"max_new_tokens": 12})
    weights = load_file(folder / "model.safetensors")
    weights["lm_head.weight"] = torch.randn_like(weights["model.embed_tokens.weight"]) * 0.2
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


@pytest.mark.parametrize(
    "fields, named",
    [
        (
            _rope("longrope", short_factor=[1.0] * 8, long_factor=[2.0] * 8, original_max_position_embeddings=32),
            "rope scaling 'longrope' is not supported",
        ),
        (_rope("proportional", partial_rotary_factor=0.5), "rope scaling 'proportional' is not supported"),
        ({**_rope("linear", factor=2.0), "partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 with linear"),
    ],
)
def test_rope_transformers_computes_otherwise_is_refused_at_import(tmp_path, monkeypatch, capsys, fields, named):
    """Rope kinds whose frequencies or scale the engine does not compute, refused by name before anything is
    stored (exit 2, as every config.json refusal), where transformers would run them."""
    from neurobrix.cli import main

    folder = checkpoint(tmp_path / "m", fields=fields)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit) as exit:
        main(["import", str(folder)])
    assert exit.value.code == 2
    assert named in capsys.readouterr().err
    assert not list((tmp_path / "home" / "models").glob("*"))


# --- batches -----------------------------------------------------------------------------------------------------


def test_a_batch_gives_each_prompt_its_own_text_and_prompts_of_other_lengths_are_refused(tmp_path, monkeypatch):
    """Prompts of one length in one batch: each row's ids are its single run's and transformers' batched generate's
    (the repetition penalty per row). Prompts of different lengths (which would need padding) are refused with
    their lengths."""
    from neurobrix import store
    from neurobrix.errors import UsageError
    from neurobrix.generate import Sampling, generate, generate_batch
    from neurobrix.run import load_model

    folder = checkpoint(tmp_path / "m", "Qwen2Config", {"num_key_value_heads": 1})
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    stored = store.import_model(str(folder), progress=False)
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, 300, (9,), generator=g).tolist() for _ in range(3)]
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    with torch.no_grad():
        want = hf.generate(
            torch.tensor(prompts),
            attention_mask=torch.ones(3, 9, dtype=torch.long),
            do_sample=False,
            max_new_tokens=6,
            repetition_penalty=1.3,
        )[:, 9:].tolist()
    sampling = Sampling(repetition_penalty=1.3)
    batch = load_model(stored, "torch", "fp32", prompt_len=9, capacity=15, batch=3)
    rows, _ = generate_batch(batch, prompts, 6, sampling, eos=set())
    single = [
        generate(load_model(stored, "torch", "fp32", prompt_len=9, capacity=15), p, 6, sampling, eos=set())[0]
        for p in prompts
    ]
    assert rows == single == want
    with pytest.raises(UsageError, match=r"prompts of one length .* got lengths \[9, 8, 9\]"):
        generate_batch(batch, [prompts[0], prompts[1][:8], prompts[2]], 6, sampling, eos=set())


def test_a_model_that_asks_to_sample_is_decoded_greedily_with_a_note_saying_so(tmp_path, monkeypatch):
    """generation_config.json with do_sample true (as Llama-3-Instruct ships): transformers' plain ``generate()``
    samples, `run` decodes greedily unless given --temperature. Before: nothing said so. The text is transformers'
    with do_sample=False, and the note names the settings; a model that does not ask to sample gets no note."""
    generation = {"eos_token_id": 9999, "max_new_tokens": 12, "do_sample": True, "temperature": 0.6, "top_p": 0.9}
    folder = checkpoint(tmp_path / "m", generation=generation)
    ids, text, notes = ours(folder, monkeypatch)
    assert (ids, text) == theirs(folder)
    said = [n for n in notes if "do_sample=True, temperature=0.6, top_p=0.9" in n]
    assert len(said) == 1 and "decodes greedily" in said[0], notes
    assert "--temperature 0.6 samples as it asks" in said[0], said  # the flag that gives the model's own sampling
    (folder / "generation_config.json").write_text(json.dumps({**generation, "do_sample": False}))
    assert not [n for n in ours(folder, monkeypatch)[2] if "do_sample" in n]
