"""yarn rope scaling, compared with transformers on CPU (round 20's way: the tables element for element, then the
greedy text of tiny random checkpoints in float32).

- Qwen2.5's model cards tell users to add ``{"type": "yarn", "factor": 4.0, "original_max_position_embeddings":
  32768}`` for long contexts, and Llama-family files carry yarn too; the engine refused the rule by name. rope_cache
  now computes transformers' ``_compute_yarn_parameters`` in its float32 operations (the ramp between the correction
  dims of beta_fast and beta_slow, truncated or not, each frequency blended with itself over the factor) and scales
  cos and sin by the attention factor as its rotary embedding does; config.json's reading resolves every field as
  transformers' config does (a top-level original_max_position_embeddings first, a null factor as the ratio of the
  contexts, beta 0 or null as the defaults, a null truncate as false, mscale over mscale_all_dim) and refuses by name
  what transformers refuses or fails on.

Every table and text test failed before the change (the tables: the rule refused; the texts: import refused)."""

from __future__ import annotations

import json
import re

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint, ours  # noqa: E402
from test_text_round20 import _theirs32  # noqa: E402

POSITIONS = 16384
QWEN_CARD = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
TABLES = {  # family, config arguments, config.json fields (a rope_scaling replaces the saved rope_parameters)
    "Qwen2.5's card, theta 1e6, head dim 128": (
        "Qwen2Config",
        {"rope_theta": 1000000.0, "head_dim": 128, "max_position_embeddings": 131072},
        {"rope_scaling": QWEN_CARD},
    ),
    "Llama, the original context at the top level, not truncated": (
        "LlamaConfig",
        {"rope_theta": 500000.0, "head_dim": 64},
        {
            "original_max_position_embeddings": 2048,
            "rope_scaling": {
                "rope_type": "yarn",
                "factor": 8,
                "original_max_position_embeddings": 8192,
                "truncate": False,
            },
        },
    ),
    "Llama, beta 16 and 2, an explicit attention factor": (
        "LlamaConfig",
        {},
        {
            "rope_scaling": {
                "rope_type": "yarn",
                "factor": 16.0,
                "original_max_position_embeddings": 1024,
                "beta_fast": 16,
                "beta_slow": 2.0,
                "attention_factor": 0.75,
            }
        },
    ),
    "Qwen2, mscale over mscale_all_dim, factor null (the contexts' ratio)": (
        "Qwen2Config",
        {"rope_theta": 10000.0, "head_dim": 32},
        {
            "rope_scaling": {
                "type": "yarn",
                "factor": None,
                "original_max_position_embeddings": 1000,
                "mscale": 1.3,
                "mscale_all_dim": 0.7,
            }
        },
    ),
    "Mistral, rope_parameters, factor below 1, truncate null, beta 0": (
        "MistralConfig",
        {"sliding_window": None},
        {
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 20000.0,
                "factor": 0.5,
                "original_max_position_embeddings": 300,
                "truncate": None,
                "beta_fast": 0,
            }
        },
    ),
    "Llama, a ramp of zero width (the 0.001 guard)": (
        "LlamaConfig",
        {},
        {"rope_scaling": {"rope_type": "yarn", "factor": 3.0, "original_max_position_embeddings": 64, "beta_slow": 32}},
    ),
}


def _transformers_tables(folder, family: str) -> tuple[torch.Tensor, torch.Tensor]:
    config = transformers.AutoConfig.from_pretrained(folder)
    module = {"LlamaConfig": "llama", "Qwen2Config": "qwen2", "MistralConfig": "mistral"}[family]
    models = getattr(transformers.models, module)
    rotary = getattr(getattr(models, f"modeling_{module}"), f"{family.removesuffix('Config')}RotaryEmbedding")(config)
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.arange(POSITIONS)[None])
    return cos[0], sin[0]


@pytest.mark.parametrize("case", TABLES)
def test_yarn_tables_are_transformers_own(tmp_path, case):
    """Before: refused by name (config.json's reading and rope_cache alike)."""
    from neurobrix.config import ModelConfig
    from neurobrix.ops import rope_cache

    family, args, fields = TABLES[case]
    base = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096}
    getattr(transformers, family)(**{**base, **args}).save_pretrained(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    data.pop("rope_parameters", None)
    data.update(fields)
    (tmp_path / "config.json").write_text(json.dumps(data))
    cos, sin = _transformers_tables(tmp_path, family)
    cfg = ModelConfig.from_hf(data)
    ours_cos, ours_sin = rope_cache(cfg.head_dim, cfg.rope_theta, POSITIONS, cfg.rope_scaling)
    half = cfg.head_dim // 2
    assert torch.equal(ours_cos, cos[:, :half]) and torch.equal(ours_sin, sin[:, :half])
    assert torch.equal(cos[:, :half], cos[:, half:])  # transformers' halves: the engine's table twice


TEXTS = {  # family, config.json rope fields: frequencies and the attention factor both move the text
    "Llama, yarn past a 16-position original context": (
        "LlamaConfig",
        {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}},
    ),
    "Qwen2, the card's form, attention factor 2": (
        "Qwen2Config",
        {
            "rope_scaling": {
                "type": "yarn",
                "factor": 8.0,
                "original_max_position_embeddings": 16,
                "attention_factor": 2.0,
            }
        },
    ),
}


@pytest.mark.parametrize("case", TEXTS)
def test_yarn_text_is_transformers_greedy_text(tmp_path, monkeypatch, case):
    """Before: import refused the file ("rope scaling 'yarn' is not supported")."""
    family, fields = TEXTS[case]
    folder = checkpoint(
        tmp_path / "m", family, {"rope_theta": 100.0}, fields, {"eos_token_id": 9999, "max_new_tokens": 12}
    )
    assert ours(folder, monkeypatch)[0] == _theirs32(folder)


REFUSED = {  # rope_scaling fields beside rope_type yarn, the refusal's words, what transformers raises (or None)
    "no factor": ({"original_max_position_embeddings": 64}, "has no 'factor'", KeyError),
    "original context 0": (
        {"factor": 2.0, "original_max_position_embeddings": 0},
        "'original_max_position_embeddings' must be a finite number > 0, got 0",
        ZeroDivisionError,
    ),
    "beta_fast negative": (
        {"factor": 2.0, "beta_fast": -1},
        "'beta_fast' must be a finite number > 0, got -1",
        ValueError,
    ),
    "mscale_all_dim making its scale 0": (
        {"factor": 2.718281828459045, "mscale": 1.0, "mscale_all_dim": -10.0},
        "division by zero",
        ZeroDivisionError,
    ),
    "theta 1": ({"factor": 2.0, "rope_theta": 1.0}, "with rope_theta 1", ZeroDivisionError),
    "truncate a string": ({"factor": 2.0, "truncate": "no"}, "'truncate' must be true or false", None),
    "attention factor 0": (
        {"factor": 2.0, "attention_factor": 0.0},
        "attention factor must be a finite number > 0",
        None,
    ),
    "an odd rotary dim": (
        {"factor": 2.0, "partial_rotary_factor": 0.9375},
        "partial_rotary_factor 0.9375 with yarn rope scaling is not supported",
        RuntimeError,
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_yarn_fields_transformers_refuses_or_that_do_not_describe_a_model_are_named(tmp_path, case):
    """Each refused at config.json's reading, naming the field; where transformers fails, it does as stated."""
    from neurobrix.config import ConfigError, ModelConfig

    fields, named, raised = REFUSED[case]
    base = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096}
    transformers.LlamaConfig(**base).save_pretrained(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    data.pop("rope_parameters", None)
    data["rope_scaling"] = {"rope_type": "yarn", **fields}
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=re.escape(named)):
        ModelConfig.from_hf(data)
    if raised is not None:
        with pytest.raises(raised):
            _transformers_tables(tmp_path, "LlamaConfig")


def test_the_conformance_bound_holds_for_yarn_tables_and_sees_a_frequency_off():
    """The rotary record's yarn draws (every optional field drawn, present and absent): the engine's tables within
    ``bounds.rope_table`` of the reference's float64 ones, past the original context; one frequency off by one part
    in 10^4, or the attention factor dropped, shows. Before: both rope_cache and the reference refused yarn."""
    import random

    from conformance import bounds, reference
    from conformance.specs.rotary import QWEN_CARD, _draw_yarn
    from neurobrix.ops import rope_cache

    rng = random.Random(0)
    draws = [QWEN_CARD, *(_draw_yarn(rng) for _ in range(12))]
    fields = {name for rope in draws for name, _ in rope.scaling or ()}
    assert {"beta_fast", "beta_slow", "truncate", "attention_factor"} <= fields
    rows = 8192 + 100
    positions = torch.arange(rows, dtype=torch.float64)[:, None]
    for rope in draws:
        head_dim = rng.choice([64, 128])
        tables = reference.rope_frequencies(head_dim, rope.theta, rows, rope.rope_scaling)
        angle = positions * tables.inv_freq[None, :]
        cos, sin = rope_cache(head_dim, rope.theta, rows, rope.rope_scaling)
        for engine, table in ((cos, tables.cos), (sin, tables.sin)):
            bound = bounds.rope_table(table, angle=angle, scaling=rope.rope_scaling, theta=rope.theta)
            assert bounds.ratio(engine, table, bound) <= 1, str(rope)
        bound = bounds.rope_table(tables.cos, angle=angle, scaling=rope.rope_scaling, theta=rope.theta)
        off = tables.inv_freq.clone()
        off[head_dim // 4] *= 1 + 1e-4
        scale = float(tables.cos[0, 0])  # the attention factor
        assert bounds.ratio((scale * (positions * off[None, :]).cos()).float(), tables.cos, bound) > 1, str(rope)
        if scale != 1.0:
            assert bounds.ratio(cos / scale, tables.cos, bound) > 1, str(rope)
