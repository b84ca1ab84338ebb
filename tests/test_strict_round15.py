"""The fifteenth round, adversarial on the runtime's inputs: settings beyond what any kernel can run, a relative
NEUROBRIX_HOME, checkpoints whose tensors are not their config's, proofs whose numbers prove nothing, and stored
models changed beside their manifest. Each test failed before the fix it names (an input accepted, or a traceback
instead of one line and its exit code) and passes now. No kernel is launched."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml
from conftest import retrack
from kernel_tables import write_tables
from store_fixtures import config_dict, make_checkpoint

from neurobrix import tables
from neurobrix.cli import main
from neurobrix.errors import TablesError

# -- settings beyond what any kernel can run ----------------------------------------------------------------------

TILED = {"variant": "tiled", "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 4, "num_stages": 2}
GEMV = {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 2, "num_warps": 4}
DECODE = {"SPLITS": 2, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}
FLASH = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2}


@pytest.mark.parametrize(
    ("kernel", "config", "call", "said"),
    [
        # a tl.arange longer than Triton's largest tensor: Triton refuses it at the launch, after the weights loaded
        ("linear", {**TILED, "BLOCK_K": 2**21}, (5, 16, 16), "BLOCK_K=2097152, beyond Triton's largest tensor"),
        ("rms_norm", {"BLOCK_M": 2**30, "num_warps": 4}, (1, 16), "BLOCK_M=1073741824, beyond Triton's largest"),
        # each block within it, their tile not
        ("linear", {**TILED, "BLOCK_M": 2048, "BLOCK_N": 1024}, (5, 16, 16), "a tile of 2097152 elements"),
        ("silu_mul", {"BLOCK_M": 1024, "BLOCK_I": 2048, "num_warps": 4}, (1, 16), "a tile of 2097152 elements"),
        # a grid axis of 10**9 programs: refused by the GPU at the launch; the interpreter runs them one by one
        ("linear", {**GEMV, "SPLIT_K": 10**9}, (1, 16, 16), "SPLIT_K=1000000000, a grid axis of more programs"),
        ("attention_decode", {**DECODE, "SPLITS": 70_000}, (1, 256, 8, 2), "SPLITS=70000, a grid axis"),
        # pipelined tiles times num_stages beyond any GPU's shared memory: out of resources at the launch
        ("linear", {**TILED, "num_stages": 10**9}, (5, 16, 16), "bytes of shared memory, more than the most"),
        ("attention_prefill", {**FLASH, "num_stages": 10**6}, (16, 8, 2), "bytes of shared memory"),
        # a count no 32-bit integer holds
        ("linear", {**TILED, "GROUP_M": 2**40}, (5, 16, 16), "GROUP_M=1099511627776, beyond the 32-bit integers"),
        ("rotary", {"BLOCK_H": 4, "num_warps": 4, "num_stages": 2**33}, (2, 2, 8), "num_stages=8589934592"),
    ],
)
def test_preflight_refuses_a_setting_no_kernel_can_run(tmp_path, kernel, config, call, said):
    """Tables re-tracked with these settings: preflight resolved them (every value passed its lower bound) and the
    launch failed inside Triton, or the interpreter ran a setting nobody proved. Now the plan refuses each before
    anything is loaded (exit 3), naming the file, the call and the value, from Triton's and the GPU's own limits."""
    from neurobrix.plan import resolve

    loaded = tables.load(write_tables(tmp_path / "t", configs={kernel: [({}, config)]}))
    with pytest.raises(TablesError, match=rf"{kernel}.json: the setting for {kernel} .*") as refused:
        resolve({(kernel, "fp32", call)}, loaded, "interpreter")
    assert said in str(refused.value) and refused.value.exit_code == 3


def test_run_refuses_a_huge_split_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    linear = [({"M": [1, 4]}, {**GEMV, "SPLIT_K": 10**9}), ({"M": [5, None]}, TILED)]
    monkeypatch.setenv(tables.ENV_VAR, str(write_tables(tmp_path / "t", configs={"linear": linear})))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3 and "SPLIT_K=1000000000" in err and len(err.strip().splitlines()) == 1


def test_the_shared_memory_limit_is_the_class_gpus():
    """The H200's class is held to sm_90's 232,448 bytes: the tile triton 3.6 asked 262,144 bytes for (BM 128, BN 256,
    BK 64, 4 stages, bf16), which certify rejected as out of resources, is refused by preflight too."""
    from neurobrix.plan import limit_problem

    h200 = tables.load().classes["nvidia-h200"]
    big = {**TILED, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_stages": 4}
    said = limit_problem("linear", big, ("linear", "bf16", (256, 4096, 4096)), h200)
    assert said is not None and "262144 bytes" in said and "compute capability 9.0 (232448)" in said
    assert limit_problem("linear", {**big, "num_stages": 3}, ("linear", "bf16", (256, 4096, 4096)), h200) is None


def test_every_shipped_setting_is_within_every_limit():
    """What the refusals must leave alone: every entry of every class shipped today, at its domain's first call."""
    from neurobrix.plan import limit_problem

    loaded = tables.load()
    found = []
    for class_id, gpu_class in loaded.classes.items():
        for kernel in loaded.kernels(class_id):
            for entry in loaded.index(class_id, kernel).entries:  # type: ignore[union-attr]
                call = (kernel, entry.domain.dtypes[0], tuple(lo for _, lo, _ in entry.domain.ranges))
                problem = limit_problem(kernel, entry.config, call, gpu_class)
                if problem:
                    found.append((class_id, kernel, entry.domain.describe(), problem))
    assert not found


# -- a relative NEUROBRIX_HOME ------------------------------------------------------------------------------------


def test_a_relative_home_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """NEUROBRIX_HOME=store: each command used ./store of the folder it ran in, so an import from one folder was
    "not imported" for a run from another, and a re-proof recorded in one admitted nothing elsewhere. Now refused by
    every store command (exit 2) and reported by doctor."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEUROBRIX_HOME", "store")
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    for argv in (["import", str(folder)], ["list"], ["run", "--model", "tiny", "--prompt", "hello"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "NEUROBRIX_HOME=store is a relative path" in err, argv
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()
    assert main(["doctor"]) == 1
    assert "NEUROBRIX_HOME=store is a relative path" in capsys.readouterr().out


def test_a_home_under_the_users_folder_still_works(tmp_path, monkeypatch):
    """What the refusal must leave alone: ~ is the user's folder, an absolute path."""
    from neurobrix import store

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NEUROBRIX_HOME", "~/nb")
    assert store.home() == tmp_path / "nb"


# -- checkpoint tensors that are not their config's ---------------------------------------------------------------


def _rewrite_weights(folder, change):
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    change(weights)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _zeros(*shape):
    import torch

    return torch.zeros(shape)


@pytest.mark.parametrize(
    ("model_type", "change", "said"),
    [
        ("llama", lambda w: w.update({"model.norm.weight": _zeros(17)}), "'model.norm.weight' has shape [17]"),
        (
            "llama",
            lambda w: w.update({"model.layers.0.input_layernorm.weight": _zeros(16, 1)}),
            "'model.layers.0.input_layernorm.weight' has shape [16, 1], config.json implies [16]",
        ),
        (
            "qwen2",
            lambda w: w.update({"model.layers.0.self_attn.k_proj.bias": _zeros(3)}),
            "'model.layers.0.self_attn.k_proj.bias' has shape [3], config.json implies [8]",
        ),
        ("llama", lambda w: w.pop("model.layers.0.mlp.up_proj.weight"), "no tensor 'model.layers.0.mlp.up_proj"),
        ("llama", lambda w: w.update({"model.extra.weight": _zeros(2)}), "would ignore (model.extra.weight)"),
        ("llama", lambda w: w.update({"lm_head.weight": _zeros(33, 16)}), "'lm_head.weight' has shape [33, 16]"),
    ],
)
def test_import_refuses_tensors_that_are_not_the_configs(tmp_path, monkeypatch, capsys, model_type, change, said):
    """A tensor of another shape than config.json implies (a norm, a bias, the head), one missing or one extra: import
    stored the model (exit 0) and every run refused it while loading the weights. Now import refuses it from the
    headers (exit 2), naming the tensor, and stores nothing."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "bad", config=config_dict(model_type), use_transformers=False)
    _rewrite_weights(folder, change)
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "the weights do not match its config.json" in err and said in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "home" / "models" / "bad").exists()


@pytest.mark.parametrize("keep", ["both", "head only"])
def test_tied_embeddings_import_as_transformers_ties_them(tmp_path, monkeypatch, keep):
    """What the refusal must leave alone: tied embeddings with the head stored too, or only the head (from_pretrained
    gives it to the embedding)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tied", config=config_dict(tie_word_embeddings=True), use_transformers=False)
    if keep == "head only":
        _rewrite_weights(folder, lambda w: w.pop("model.embed_tokens.weight"))
    assert main(["import", str(folder)]) == 0


# -- proofs whose numbers prove nothing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("worst_error_ratio", ".nan", "must be a finite number, got nan"),  # NaN passed "at most 1"
        ("time_best_us", ".inf", "must be a finite number, got inf"),
        ("time_median_us", ".nan", "must be a finite number, got nan"),
        ("time_best_us", "9.0", "9.0 us is above time_median_us"),  # the best of the timings above their median
    ],
)
def test_tables_verify_refuses_proof_numbers_that_prove_nothing(tmp_path, monkeypatch, capsys, field, value, said):
    """A proofs file edited and re-tracked: `tables verify` said every proof valid (exit 0) and `tables show` printed
    "worst error nan of bound". Now both refuse it (exit 3), naming the file and the field."""
    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / "rms_norm.proofs.yaml"
    data = yaml.safe_load(path.read_text())
    text = path.read_text()
    old = f"{field}: {data['entries'][0]['proof'][field]}"
    assert old in text
    path.write_text(text.replace(old, f"{field}: {value}", 1))
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    assert main(["tables", "verify"]) == 3
    err = capsys.readouterr().err
    assert f"rms_norm.proofs.yaml: field 'entries[0].proof.{field}': {said}" in err
    with pytest.raises(SystemExit) as exit_:
        main(["tables", "show", "interpreter", "rms_norm"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3 and said in err and len(err.strip().splitlines()) == 1


# -- stored models changed beside their manifest ------------------------------------------------------------------


def _stored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    return tmp_path / "home" / "models" / "tiny"


def _run_refused(capsys, said):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "tiny", "--prompt", "hello", "--backend", "torch", "--max-tokens", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 7 and "stored model tiny" in err and said in err
    assert len(err.strip().splitlines()) == 1
    assert main(["list"]) == 0
    assert "DAMAGED" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("chat_template.jinja", "{{ 'another prompt' }}"),  # every chat rendered with it
        ("generation_config.json", json.dumps({"eos_token_id": 3})),  # the model had none: other stops
        ("special_tokens_map.json", json.dumps({"bos_token": "hello"})),
    ],
)
def test_a_file_run_reads_added_after_the_import_is_damage(tmp_path, monkeypatch, capsys, name, text):
    """A file the engine reads dropped into a stored model's folder after its import (the manifest does not list it):
    every run read it (exit 0), the stored model no longer the one imported. Now the model is damaged (exit 7) and
    `list` marks it so."""
    stored = _stored(tmp_path, monkeypatch, capsys)
    if name == "generation_config.json":
        (stored / name).unlink()
        manifest = json.loads((stored / "neurobrix-model.json").read_text())
        del manifest["files"][name]
        del manifest["sha256"][name]  # (recorded since round 18)
        (stored / "neurobrix-model.json").write_text(json.dumps(manifest))
    (stored / name).write_text(text)
    _run_refused(capsys, f"{name} is not among the files imported")


def test_a_stored_file_replaced_by_a_link_is_damage(tmp_path, monkeypatch, capsys):
    """model.safetensors replaced by a symbolic link to a file of its size elsewhere: the size check followed the link
    and every run read the other file. An import never makes a link: now damaged (exit 7)."""
    stored = _stored(tmp_path, monkeypatch, capsys)
    elsewhere = tmp_path / "elsewhere.safetensors"
    shutil.copy(stored / "model.safetensors", elsewhere)
    (stored / "model.safetensors").unlink()
    os.symlink(elsewhere, stored / "model.safetensors")
    _run_refused(capsys, "model.safetensors is a symbolic link")


def test_other_files_beside_a_stored_model_are_left_alone(tmp_path, monkeypatch, capsys):
    """What the refusal must leave alone: a file run never reads (a note, an editor's backup)."""
    stored = _stored(tmp_path, monkeypatch, capsys)
    (stored / "NOTES.txt").write_text("mine")
    assert main(["run", "--model", "tiny", "--prompt", "hello", "--backend", "torch", "--max-tokens", "1"]) == 0
