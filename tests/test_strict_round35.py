"""The thirty-fifth round, adversarial on the strict runtime from the model's side and the plan's: what an imported
model's config.json or shard index can make the preflight resolve. Two classes: a model whose shapes the interpreter
class's unbounded domains take but whose kernels cannot be built at those shapes (a hidden size of 16,385 makes
rms_norm's certified BLOCK_M 64 a 64 x 32,768 tile, a head dim of 16,386 attention's a 64 x 32,768 one) was resolved,
loaded and ended at its first launch in Triton's own error (a traceback); and one whose head dim (512 in fp32) needs
more shared memory than any GPU has under the interpreter's attention setting was refused as tables "certified for
another neurobrix", with a re-certify command that writes the same tables again. And a shard index naming a file of
more than 255 bytes ended the import in "File name too long" (an OSError), and a KV cache of 10**12 positions
(`run --max-tokens` within a config.json's context of 2**45) ended the preflight in the CPU allocator's RuntimeError,
its shapes-only recording having computed rotary tables on the host. Each test failed before the fix it names
and passes now; the controls pass either way. One small kernel is launched on the interpreter (the evidence that the
refused setting does fail at that shape)."""

from __future__ import annotations

import json

import pytest
import torch
from store_fixtures import config_dict, make_checkpoint

from neurobrix import tables
from neurobrix.cli import main
from neurobrix.config import ModelConfig
from neurobrix.errors import MissingEntryError, TablesError
from neurobrix.plan import generation_calls, resolve

SLIM = {  # a model whose every tensor is small whatever its hidden size or head dim: one head, one layer
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 8,
    "intermediate_size": 2,
    "num_hidden_layers": 1,
    "num_attention_heads": 1,
    "num_key_value_heads": 1,
    "head_dim": 2,
    "vocab_size": 32,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
}


def _plan(dtype: str = "fp32", **fields):
    cfg = ModelConfig.from_hf({**SLIM, **fields})
    return resolve(generation_calls(cfg, 1, 3, 8, dtype), tables.load(), "interpreter")


def test_the_interpreters_rms_norm_setting_fails_past_a_hidden_size_of_16384():
    """The evidence: the setting the interpreter's table certifies for every N (BLOCK_M 64) runs N = 16,384 and fails
    inside Triton at 16,385 (its row block becomes 32,768: a tile of 2**21 elements, past TRITON_MAX_TENSOR_NUMEL)."""
    from neurobrix.ops.rms_norm import rms_norm

    config = tables.load().index("interpreter", "rms_norm").lookup("fp32", (1, 16385)).config
    x = torch.randn(1, 16384)
    rms_norm(x, torch.ones(16384), 1e-5, config=config)
    with pytest.raises(Exception, match="exceeds triton maximum tensor numel"):
        rms_norm(torch.randn(1, 16385), torch.ones(16385), 1e-5, config=config)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"hidden_size": 16385}, r"rms_norm .* N=16385 .* makes a BLOCK_M=64 x BLOCK_N=32768 tile"),
        ({"head_dim": 16386}, r"attention_decode .* D=16386.* x BLOCK_D=32768 tile"),
    ],
    ids=["hidden-16385", "head-dim-16386"],
)
def test_a_shape_whose_tiles_triton_cannot_make_is_refused_before_loading(fields, said):
    """Before: resolve found the interpreter's one entry per kernel (its domain has no upper end), so the model was
    planned, its weights loaded, and its first rms_norm (or attention) launch failed in Triton's error. Now the call is
    refused by the preflight (exit 4) naming the call, the setting and the tile."""
    with pytest.raises(MissingEntryError, match=said) as refused:
        _plan(**fields)
    assert refused.value.exit_code == 4 and "nothing was loaded" in str(refused.value)


def test_the_largest_shapes_those_settings_run_are_planned():
    """Control: a hidden size of 16,384 and a head dim of 256 in fp32 (and 512 in fp16) fit every tile."""
    _plan(hidden_size=16384)
    _plan(head_dim=256)
    _plan("fp16", head_dim=512)


def test_a_head_dim_the_setting_cannot_hold_is_this_calls_refusal_not_the_tables():
    """Before: a head dim of 512 in fp32 needs 393,216 bytes of shared memory under the interpreter's attention_prefill
    setting, which runs every head dim up to 256: refused as tables "certified for another neurobrix" (exit 3) with
    the command to re-certify them, which writes the same unbounded domain again. Now it is this call that has no
    certified setting (exit 4). A setting that runs nowhere in its domain stays the tables' fault (round 15)."""
    with pytest.raises(MissingEntryError, match=r"attention_.* D=512.* bytes of shared memory") as refused:
        _plan(head_dim=512)
    assert refused.value.exit_code == 4 and "Re-certify" not in str(refused.value)
    assert not isinstance(refused.value, TablesError)


def test_run_refuses_such_a_model_in_one_line_before_reading_a_weight(tmp_path, monkeypatch, capsys):
    """Before: `run` loaded the model's weights and ended in the Triton interpreter's traceback at the first launch."""
    import neurobrix.run as run_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "wide", config=config_dict(**{**SLIM, "hidden_size": 16385}))
    assert main(["import", str(folder)]) == 0

    def never(*args, **kwargs):
        raise AssertionError("weights were read")

    monkeypatch.setattr(run_module, "weights_from_files", never)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "wide", "--prompt", "hello", "--no-chat", "--max-tokens", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 4 and "N=16385" in err and len(err.strip().splitlines()) == 1


def test_a_shard_index_naming_a_file_longer_than_any_file_system_keeps_is_refused(tmp_path):
    """Before: looking for the shard ended `checkpoint_files` (and `neurobrix import`) in "OSError: File name too
    long", exit 1 as the machine's refusal. Now the index is refused naming it (exit 2)."""
    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    folder = make_checkpoint(tmp_path / "sharded", shards=2, use_transformers=False)
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    first = next(iter(data["weight_map"].values()))
    long = "x" * 300 + ".safetensors"
    data["weight_map"] = {k: long if v == first else v for k, v in data["weight_map"].items()}
    index.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CheckpointError, match="longer than 255 bytes") as refused:
        checkpoint_files(folder)
    assert refused.value.exit_code == 2


def test_the_preflight_of_a_long_cache_allocates_nothing_on_the_host():
    """Before: the preflight's recording built its rotary tables and positions for a meta device on the CPU
    (capacity x head_dim / 2 floats, three times), so a capacity of 10**12 (`run --max-tokens` within a config.json's
    context of 2**45) ended it in the CPU allocator's RuntimeError, a traceback, before the memory check. Now only
    shapes are made, and the class's preflight names the calls it has no setting for (exit 4)."""
    cfg = ModelConfig.from_hf({**SLIM, "max_position_embeddings": 2**45})
    with pytest.raises(MissingEntryError, match=r"attention_decode +bf16 B=1, S=1000000000000") as refused:
        resolve(generation_calls(cfg, 1, 3, 10**12, "bf16"), tables.load(), "nvidia-h200")
    assert refused.value.exit_code == 4


def test_the_recorded_calls_are_those_of_the_real_tables():
    """Control: the meta tables' width is rope_cache's (a partial rotary factor's odd count of dims included), and the
    calls recorded are the same whether the tables are computed or not (a capacity past the context computes them)."""
    from neurobrix.model import Transformer, meta_weights
    from neurobrix.ops import rope_cache

    scaling = {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.875}
    cfg = ModelConfig.from_hf({**SLIM, "head_dim": 8, "rope_scaling": scaling})
    model = Transformer(cfg, meta_weights(cfg, torch.float32), None, batch=1, capacity=16)  # type: ignore[arg-type]
    real = rope_cache(cfg.head_dim, cfg.rope_theta, 16, cfg.rope_scaling)[0]
    assert model.cos.shape == real.shape and model.cos.device.type == "meta"
    assert generation_calls(cfg, 1, 3, 16, "fp32") == generation_calls(
        ModelConfig.from_hf({**SLIM, "head_dim": 8, "rope_scaling": scaling, "max_position_embeddings": 8}),
        1,
        3,
        16,
        "fp32",
    )
