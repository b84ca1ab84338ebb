"""The thirteenth round, adversarial on the runtime's inputs rather than its code: what a user, a broken download or
an attacker hands `neurobrix import` / `run` / `warmup` and the Python API. Each test failed before the fix it
names (an input accepted, run on uncertified or wrong terms, or a traceback instead of one line and its exit code)
and passes now. No kernel is launched but where a test says so."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from store_fixtures import config_dict, make_checkpoint

from neurobrix.cli import main
from neurobrix.config import ConfigError, ModelConfig

# -- config.json values that parse but are no model ------------------------------------------------------------

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        # a size or count of 0 or less: ZeroDivisionError, a negative tensor dimension, no layer at all (the final
        # norm then read None), or a call of size 0
        ("num_attention_heads", 0),
        ("num_key_value_heads", 0),  # was silently taken for num_attention_heads (transformers keeps 0, and fails)
        ("num_key_value_heads", -1),
        ("hidden_size", 0),
        ("intermediate_size", 0),
        ("num_hidden_layers", 0),
        ("vocab_size", -5),
        ("max_position_embeddings", 0),
        ("head_dim", -8),
        ("head_dim", 0),
        # another type than an integer: TypeError (str % int, torch.empty of a float) or ValueError (float("abc"))
        ("num_key_value_heads", "1"),
        ("num_key_value_heads", 1.0),
        ("head_dim", "8"),
        ("head_dim", 8.0),
        # every rotary angle inf or NaN: the run went on and printed nothing, exit 0
        ("rope_theta", 0),
        ("rope_theta", -1.0),
        ("rope_theta", math.nan),
        ("rope_theta", "abc"),
        ("rope_theta", True),
        # rsqrt of a negative or non-finite number: NaN rows, the run went on, exit 0
        ("rms_norm_eps", -1.0),
        ("rms_norm_eps", math.nan),
        ("rms_norm_eps", math.inf),
        # a string is true to Python: "false" tied the embeddings
        ("tie_word_embeddings", "false"),
        # unhashable or not a list: TypeError
        ("model_type", ["llama"]),
        ("architectures", [["LlamaForCausalLM"]]),
        ("architectures", "LlamaForCausalLM"),
        ("layer_types", 5),
    ],
)
def test_a_config_value_that_is_no_model_is_refused_naming_the_field(field, value):
    """Before: each was accepted (a garbage run, exit 0) or raised a Python error (a traceback, exit 1)."""
    with pytest.raises(ConfigError, match=rf"config.json: .*'?{field}'?"):
        ModelConfig.from_hf({**config_dict(), field: value}, "config.json")


def test_a_hidden_size_below_the_head_count_is_refused():
    """hidden_size // num_attention_heads of 0 was a head dim of 0 (tensors of size 0, a ZeroDivisionError); Llama's
    hidden_size not a multiple of the heads is refused before, as transformers' LlamaConfig refuses it."""
    sizes = {"hidden_size": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
    with pytest.raises(ConfigError, match="head dim of 0"):
        ModelConfig.from_hf(config_dict("mistral", **sizes), "config.json")
    with pytest.raises(ConfigError, match="hidden_size 1 is not a multiple of num_attention_heads 2"):
        ModelConfig.from_hf(config_dict(**sizes), "config.json")


@pytest.mark.parametrize(
    "scaling",
    [
        {"rope_type": "linear", "factor": math.inf},  # every frequency 0: every position the same, exit 0
        {**LLAMA3, "low_freq_factor": 0},  # ZeroDivisionError in rope_cache
        {**LLAMA3, "low_freq_factor": -1},
        {**LLAMA3, "factor": math.inf},  # long wavelengths at frequency 0
        {**LLAMA3, "original_max_position_embeddings": 0},
        {**LLAMA3, "high_freq_factor": math.nan},
    ],
)
def test_rope_scaling_that_spoils_every_angle_is_refused(scaling):
    with pytest.raises(ConfigError, match="rope scaling's"):
        ModelConfig.from_hf(config_dict(rope_scaling=scaling, max_position_embeddings=64), "config.json")


def test_a_qwen2_window_start_that_is_no_number_is_refused():
    """max_window_layers "x": a TypeError comparing it with a layer's index."""
    data = config_dict("qwen2", sliding_window=4, use_sliding_window=True, max_window_layers="x")
    with pytest.raises(ConfigError, match="max_window_layers"):
        ModelConfig.from_hf(data, "config.json")


def test_the_fields_transformers_fills_in_keep_their_defaults():
    """What the refusals above must not take away: a null or absent num_key_value_heads or head_dim is transformers'
    default, an absent tie_word_embeddings is not tied (a null one transformers' LlamaConfig refuses: round 12), and a
    head dim other than hidden / heads is the file's."""
    data = {k: v for k, v in config_dict(num_key_value_heads=None, head_dim=None).items() if k != "tie_word_embeddings"}
    cfg = ModelConfig.from_hf(data)
    assert (cfg.num_kv_heads, cfg.head_dim, cfg.tie_word_embeddings) == (2, 8, False)
    assert ModelConfig.from_hf(config_dict(head_dim=16)).head_dim == 16
    # an integer 0 transformers 5.25 refuses, and so does the engine since text round 41
    assert ModelConfig.from_hf(config_dict(rms_norm_eps=0.0)).rms_norm_eps == 0.0


def test_import_refuses_a_config_with_nan_rope_theta_in_one_line(tmp_path, monkeypatch, capsys):
    """Before: imported, then `run` printed nothing and exited 0 (NaN angles everywhere)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "nan-theta", config=config_dict(rope_theta=math.nan), use_transformers=False)
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "rope_theta must be a finite number > 0, got nan" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "home" / "models" / "nan-theta").exists()


def test_a_stored_config_edited_to_zero_heads_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    """A config.json edited in the store (its manifest size and sha256 fixed up): `run` raised ZeroDivisionError."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    stored = tmp_path / "home" / "models" / "tiny"
    data = json.loads((stored / "config.json").read_text())
    (stored / "config.json").write_text(json.dumps({**data, "num_attention_heads": 0}))
    manifest = json.loads((stored / "neurobrix-model.json").read_text())
    manifest["files"]["config.json"] = (stored / "config.json").stat().st_size
    manifest["sha256"]["config.json"] = hashlib.sha256((stored / "config.json").read_bytes()).hexdigest()  # round 18
    (stored / "neurobrix-model.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "num_attention_heads' must be an integer >= 1, got 0" in err
    assert len(err.strip().splitlines()) == 1


# -- weights that are not floating-point numbers -----------------------------------------------------------------


def _retype(file, name, dtype):
    """Rewrite one tensor of a safetensors file in another dtype (the others as they are)."""
    from safetensors.torch import load_file, save_file

    weights = load_file(str(file))
    weights[name] = weights[name].to(dtype)
    save_file(weights, str(file), metadata={"format": "pt"})


@pytest.mark.parametrize(("dtype", "shown"), [("int8", "I8"), ("bool", "BOOL"), ("float8_e4m3fn", "F8_E4M3")])
def test_import_refuses_weights_stored_as_integers_or_float8(tmp_path, monkeypatch, capsys, dtype, shown):
    """Before: imported, and run cast the integers to floats (a quantized tensor without its scales), exit 0."""
    import torch

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "ints", config=config_dict(), use_transformers=False)
    _retype(folder / "model.safetensors", "model.layers.0.mlp.down_proj.weight", getattr(torch, dtype))
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"model.layers.0.mlp.down_proj.weight ({shown})" in err
    assert len(err.strip().splitlines()) == 1


def test_run_refuses_stored_weights_turned_integer_at_their_size(tmp_path, monkeypatch, capsys):
    """An F32 tensor rewritten as I32 in the store keeps the file's size, so the store's check passes: run cast it
    back to float and generated (exit 0). Now refused from the header, before any tensor is read."""
    import torch

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    weights = tmp_path / "home" / "models" / "tiny" / "model.safetensors"
    size = weights.stat().st_size
    _retype(weights, "model.norm.weight", torch.int32)
    assert weights.stat().st_size == size
    manifest = json.loads((weights.parent / "neurobrix-model.json").read_text())
    del manifest["headers"]  # (recorded since round 19, which finds the header changed: a manifest from before it)
    (weights.parent / "neurobrix-model.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--backend", "torch", "--max-tokens", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "tensor model.norm.weight is stored as I32" in err
    assert len(err.strip().splitlines()) == 1


def test_double_precision_weights_still_import_and_load(tmp_path, monkeypatch):
    """What the refusal must leave alone: F64 weights are cast to the run's dtype, as transformers casts them."""
    import torch

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "wide", config=config_dict(), use_transformers=False)
    _retype(folder / "model.safetensors", "model.norm.weight", torch.float64)
    assert main(["import", str(folder)]) == 0


# -- a table's setting at values no kernel was certified with ----------------------------------------------------

TILED = {"variant": "tiled", "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 4, "num_stages": 2}


@pytest.mark.parametrize(
    ("kernel", "config", "call", "said"),
    [
        # launched: Triton's "arange's range must be a power of 2", a traceback after the weights were loaded
        ("rms_norm", {"BLOCK_M": 3, "num_warps": 4}, (1, 16), "BLOCK_M=3"),
        ("linear", {**TILED, "BLOCK_K": 48}, (5, 16, 16), "BLOCK_K=48"),
        # launched: ZeroDivisionError
        ("attention_decode", {"SPLITS": 0, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}, (1, 5, 8, 2), "SPLITS=0"),
        ("rotary", {"BLOCK_H": 0, "num_warps": 4}, (2, 2, 8), "BLOCK_H=0"),
        # ran to exit 0 on settings nobody proved: a block of True (1), no group, 3 warps
        ("linear", {**TILED, "BLOCK_K": True}, (5, 16, 16), "BLOCK_K=True"),
        ("linear", {**TILED, "GROUP_M": 0}, (5, 16, 16), "GROUP_M=0"),
        ("linear", {**TILED, "num_warps": 3}, (5, 16, 16), "num_warps=3"),
        # refused only at its launch, after the weights were read (exit 2)
        (
            "linear",
            {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 2, "MERGE": "first", "num_warps": 4},
            (1, 16, 16),
            "MERGE='first'",
        ),
    ],
)
def test_preflight_refuses_a_setting_at_values_no_kernel_was_certified_with(tmp_path, kernel, config, call, said):
    """A tables folder whose TRACKED.yaml was rewritten with its tables (NEUROBRIX_TABLES: nothing else binds them)
    held these settings: preflight resolved them, and the launch crashed, divided by zero or ran them. Now the plan
    refuses them before anything is loaded (exit 3), naming the file, the call and the value."""
    from kernel_tables import write_tables

    from neurobrix import tables
    from neurobrix.errors import TablesError
    from neurobrix.plan import resolve

    loaded = tables.load(write_tables(tmp_path / "t", configs={kernel: [({}, config)]}))
    with pytest.raises(TablesError, match=rf"{kernel}.json: the setting for {kernel} .* has {said}, where") as refused:
        resolve({(kernel, "fp32", call)}, loaded, "interpreter")
    assert refused.value.exit_code == 3


def test_every_shipped_setting_has_values_a_kernel_takes():
    """What the refusal must leave alone: every setting of every class shipped today."""
    from neurobrix import tables
    from neurobrix.plan import value_problem

    loaded = tables.load()
    found = [
        (class_id, kernel, dict(config), value_problem(config))
        for class_id in loaded.classes
        for kernel in loaded.kernels(class_id)
        for config in loaded.index(class_id, kernel).configs  # type: ignore[union-attr]
        if value_problem(config)
    ]
    assert not found
