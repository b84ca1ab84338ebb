"""Round 31 of planted bugs: the code the last session merged and no round planted: strict round 35 (the blocks a
launcher derives from the call's shape held to Triton's largest tensor, ``plan.shape_problem``; a setting that runs
its domain's smallest call but not this one blamed on the call; shard names past 255 bytes; the preflight's rotary
tables made as shapes only), strict round 36 (``memory.host_memory`` and the CPU plan checked against it, exit 5),
and lines of gate round 34, text round 30, kernel-mutant round 6 and walk-through 31 that round 30 left unplanted.
The plants and the driver: tests/planted31_plants.py, tests/planted31_driver.py (round 26's ``run_round`` on this
round's plants). Each test here fails with the plant named in its docstring and passes on the clean code.

Outcomes (58 plants): 32 caught by the tests before this round (p01, p02, p06, p07, p12-p14, p16, p19; o02; h01, h02,
h04, h07, h10-h15; g21, g22, g25, y03; t14; m21, m22, m24; w21, w22, w24, w25), 26 survived, each caught here (p03-p05,
p08-p11, p17; c01-c04; o03; h03, h05, h06, h08, h09; g23, g24; t11, t12, t15; m23, m25; w23). One plant was dropped as
equivalent: o01, the meta tables' width taken as head_dim // 2 instead of rope_cache's at one position (config.json's
reading admits even head dims only and a rotary dim of head_dim or head_dim - 1, both of which give head_dim / 2
frequencies, so the width is the same for every model it admits). The plants ran against strict rounds 35 and 15
(the shape limit, the blame), round 35 and test_loading_planted.py (shard names), round 35 and test_engine.py (the
meta tables; text round 14 and test_config.py for o03), round 36 and test_memory.py (the host's plan), gate round 34's
and test_workflows.py, text rounds 30, 29 and 14 with planted 23 and 28-30 and test_tokenizer.py, kmut6's with
planted 30's store and explicit tests, and walk-through 31's with test_cli.py, planted 30, test_gate_units.py and
test_conformance.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from neurobrix.plan import max_tensor_numel, shape_problem

# -- plan: the blocks a launcher derives from the call's shape ------------------------------------------------------
# Each boundary below is the kernel's own arithmetic: a launcher's tl.arange lengths (the block it derives) and the
# 2-D tiles its kernel makes of them with the setting's blocks, beside Triton's largest tensor.


def test_the_limit_itself_is_triton_s():
    """The boundaries below are written for TRITON_MAX_TENSOR_NUMEL = 2**20 (Triton 3.6-3.9)."""
    assert max_tensor_numel() == 2**20


def test_greedy_picks_parts_count_every_part_of_the_row():
    """Planted p04: the parts of a row counted as V // BLOCK_V (pick.py launches cdiv(V, BLOCK_V) programs and makes
    tl.arange(0, next_pow2(parts))), so a vocabulary one logit past 2**20 parts made a PARTS block of 2**21 and
    passed; p05: a block of exactly Triton's largest tensor refused (tl.arange takes 2**20 elements)."""
    config = {"BLOCK_V": 256, "num_warps": 4}
    past = shape_problem("greedy_pick", config, ("greedy_pick", "fp32", (1, 256 * 2**20 + 1)))
    assert past is not None and "PARTS=2097152" in past
    assert shape_problem("greedy_pick", config, ("greedy_pick", "fp32", (1, 256 * 2**20))) is None


def test_rotarys_value_copy_tile_is_twice_its_half_block():
    """Planted p03: rotary's block for v's copy taken as next_pow2(D / 2), not twice it (rotary.py's
    tl.arange(0, 2 * BLOCK_HALF)), so a head dim of 65,538 under BLOCK_H 16 (a 16 x 131,072 tile) passed; p11: the
    tile never looked at."""
    config = {"BLOCK_H": 16, "num_warps": 4}
    past = shape_problem("rotary", config, ("rotary", "fp32", (1, 1, 65538)))
    assert past is not None and "BLOCK_H=16 x BLOCK_E=131072" in past
    assert shape_problem("rotary", config, ("rotary", "fp32", (1, 1, 65536))) is None  # 16 x 65,536 = 2**20


@pytest.mark.parametrize(
    ("kernel", "config", "key", "tile"),
    [
        # a group of 64 query heads per KV head: BLOCK_G 64 x BLOCK_D 32,768
        ("attention_decode", {"SPLITS": 1, "BLOCK_N": 16}, (1, 1, 16385, 64), "BLOCK_G=64 x BLOCK_D=32768"),
        # 64 splits' partials merged: BLOCK_S 64 x BLOCK_D 32,768 (every other tile 2**19 or less)
        ("attention_decode", {"SPLITS": 64, "BLOCK_N": 16}, (1, 1, 16385, 1), "BLOCK_S=64 x BLOCK_D=32768"),
        # the key block wider than the query block: BLOCK_N 64 x BLOCK_D 32,768
        ("attention_prefill", {"BLOCK_M": 16, "BLOCK_N": 64}, (1, 16385, 1), "BLOCK_N=64 x BLOCK_D=32768"),
    ],
    ids=["decode-group", "decode-merge", "prefill-keys"],
)
def test_each_attention_tile_is_held_to_the_limit(kernel, config, key, tile):
    """Planted p08: decode's group x head-dim tile (its q block) left out; p09: its merge's splits x head-dim tile;
    p10: prefill's key-block x head-dim tile. Each shape here makes that tile alone past 2**20 elements."""
    found = shape_problem(kernel, {**config, "num_warps": 4}, (kernel, "fp32", key))
    assert found is not None and tile in found


def test_decodes_group_block_is_the_groups_not_the_head_dims():
    """Planted p17: decode's group block derived from the head dim, so one KV head per query head at a head dim of
    2,048 made a 2,048 x 2,048 group tile and was refused; the group block is max(16, next_pow2(G)) = 16 there."""
    config = {"SPLITS": 2, "BLOCK_N": 32, "num_warps": 4}
    assert shape_problem("attention_decode", config, ("attention_decode", "fp32", (1, 1, 2048, 1))) is None


# -- checkpoint: shard names past 255 bytes ---------------------------------------------------------------------------


def _sharded(tmp_path, name: str):
    """A two-shard checkpoint whose first shard is renamed ``name`` (the file itself too where it can be made)."""
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "sharded", shards=2, use_transformers=False)
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    first = sorted(set(data["weight_map"].values()))[0]
    data["weight_map"] = {k: name if v == first else v for k, v in data["weight_map"].items()}
    index.write_text(json.dumps(data), encoding="utf-8")
    if len(name.encode("utf-8")) <= 255:
        (folder / first).rename(folder / name)
    return folder


def test_a_shard_name_of_255_bytes_is_read_and_one_of_256_refused(tmp_path):
    """Planted c02: a name of exactly 255 bytes (every Linux file system's NAME_MAX: a file can have it) refused;
    c01: one of 256 bytes let through to the look-up, "File name too long"."""
    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    at = "x" * (255 - len(".safetensors")) + ".safetensors"
    files = checkpoint_files(_sharded(tmp_path / "a", at))
    assert at in {Path(p).name for p in files}
    past = "x" * (256 - len(".safetensors")) + ".safetensors"
    with pytest.raises(CheckpointError, match=r"longer than 255 bytes.*\(256 bytes\)"):
        checkpoint_files(_sharded(tmp_path / "b", past))


def test_a_shard_name_is_measured_in_bytes_not_characters(tmp_path):
    """Planted c03: the name's length counted in characters, so 130 two-byte characters (272 bytes with the suffix,
    142 characters) went on to "File name too long"; c04: the refusal gave the count in characters."""
    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    name = "é" * 130 + ".safetensors"
    with pytest.raises(CheckpointError, match=r"longer than 255 bytes.*\(272 bytes\)") as refused:
        checkpoint_files(_sharded(tmp_path, name))
    assert refused.value.exit_code == 2


# -- model: the preflight's shapes-only tables -----------------------------------------------------------------------


def test_the_preflight_still_refuses_dynamic_scaling_past_the_context():
    """Planted o03: the shapes-only tables made for every capacity, so rope_cache's refusal of dynamic scaling past
    max_position_embeddings (transformers' NTK rule is not supported there) was left to the real model, after the
    weights were read; the preflight (generation_calls) refuses it, and plans the same model within its context."""
    from neurobrix.config import ModelConfig
    from neurobrix.errors import InvalidInputError
    from neurobrix.plan import generation_calls

    fields = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 8,
        "intermediate_size": 2,
        "num_hidden_layers": 1,
        "num_attention_heads": 1,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "vocab_size": 32,
        "max_position_embeddings": 8,
        "rms_norm_eps": 1e-5,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
    }
    cfg = ModelConfig.from_hf(fields)
    assert generation_calls(cfg, 1, 3, 8, "fp32")  # control: within the context
    with pytest.raises(InvalidInputError, match="dynamic rope scaling past max_position_embeddings"):
        generation_calls(cfg, 1, 3, 16, "fp32")


# -- memory: the host's figure ----------------------------------------------------------------------------------------


def _host(monkeypatch, meminfo: str | None):
    """memory.host_memory() with /proc/meminfo reading ``meminfo`` (None: no such file)."""
    from neurobrix import memory

    def fake_open(path, *args, **kwargs):
        assert path == "/proc/meminfo"
        if meminfo is None:
            raise FileNotFoundError(path)
        return io.StringIO(meminfo)

    monkeypatch.setattr(memory, "open", fake_open, raising=False)
    return memory.host_memory()


def test_memavailable_is_read_in_kibibytes_and_no_other_line(monkeypatch):
    """Planted h03: the kernel's kB taken as 1,000 bytes (2.4% short: the test of round 36 allows a GiB); h04: MemFree
    read instead (the page cache left out); h15: the line's last field (its unit) read, an error taken as no line."""
    meminfo = "MemTotal:       16000000 kB\nMemFree:          100000 kB\nMemAvailable:    8000000 kB\n"
    available, total = _host(monkeypatch, meminfo)
    assert available == 8000000 * 1024
    assert total is not None and total > 0


def test_without_a_readable_memavailable_the_figure_is_the_physical_memory(monkeypatch):
    """Planted h05: a host without /proc/meminfo (another system) given 0 bytes available, so every run was refused;
    h06: a MemAvailable line that is not a number ended `run` in a ValueError (or an IndexError) traceback."""
    import os

    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert _host(monkeypatch, None) == (physical, physical)
    assert _host(monkeypatch, "MemAvailable: lots kB\n") == (physical, physical)
    assert _host(monkeypatch, "MemAvailable:\n") == (physical, physical)


def test_the_hosts_refusal_names_the_host_and_its_margin():
    """Planted h08: weights alone past the host's memory told "another GPU is needed"; h09: the host's plan (no
    reserve) said its working memory was "working memory and reserve"."""
    from neurobrix import memory
    from neurobrix.config import ModelConfig

    cfg = ModelConfig.from_hf(
        {
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
    )
    with pytest.raises(memory.DeviceMemoryError) as refused:
        memory.require_fit(cfg, 4, 1, 4, 8, free=16, total=2**34, host=True)
    said = str(refused.value)
    assert "a larger host is needed" in said and "another GPU" not in said
    assert "working memory and margin" in said and "reserve" not in said
    with pytest.raises(memory.DeviceMemoryError) as gpu:  # control: the GPU's refusal
        memory.require_fit(cfg, 4, 1, 4, 8, free=16, total=2**34)
    assert "another GPU is needed" in str(gpu.value) and "working memory and reserve" in str(gpu.value)


# -- gate round 34: the lock reader -----------------------------------------------------------------------------------


def test_the_lock_reader_refuses_a_name_twice_and_a_short_hash():
    """Planted g23: a lock pinning one name twice read (the second pin silently replacing the first); g24: any run
    of hex digits taken for a sha256 (pip's hash-checking mode compares the whole digest)."""
    from test_workflows import lock_pins

    digest = "0" * 64
    assert lock_pins(f"a==1 --hash=sha256:{digest}\n") == {"a": ("1", 1)}  # control
    with pytest.raises(AssertionError, match="a twice"):
        lock_pins(f"a==1 --hash=sha256:{digest}\na==2 --hash=sha256:{digest}\n")
    with pytest.raises(AssertionError, match="not only sha256 hashes"):
        lock_pins("a==1 --hash=sha256:0123abcd\n")


# -- text round 30: the byte rule, the decay's eos refusal ------------------------------------------------------------


def test_a_byte_token_is_six_bytes_ending_in_its_bracket():
    """Planted t11: the closing ">" not looked at, so "<0x0A]" was a byte; t12: six bytes or more, so "<0x0A>>"
    was one. tokenizers' ByteFallback reads a token as a byte only at six bytes, "<0x" and ">" around two digits."""
    from neurobrix.tokenizer import _fallback_byte

    assert _fallback_byte("<0x0A>") and _fallback_byte("<0x0a>")
    assert not _fallback_byte("<0x0A]")
    assert not _fallback_byte("<0x0A>>")


def test_the_decays_refusal_names_the_eos_ids_outside_the_vocabulary():
    """Planted t15: the refusal listed every eos id, those inside the vocabulary too, as outside it."""
    from neurobrix.errors import UsageError
    from neurobrix.generate import decay_eos_check

    with pytest.raises(UsageError, match=r"vocabulary of 32 \(\[40\]\)"):
        decay_eos_check((1, 1.5), [2, 40], 32, 3, 5)


# -- kmut6: the store clash, explicit shapes --------------------------------------------------------------------------


def test_the_store_guard_finds_a_clash_between_programs_wherever_it_lies():
    """Planted m23: the elements of every program compared in launch order, not sorted, so a clash was seen only
    where one program's last element met the next one's first: programs storing {0, 5} and {1, 5} passed."""
    from test_planted30 import _stores

    from conformance import harness

    assert _stores((2,), [0, 1], second=[4, 5]) == [0, 1, 0, 0, 0, 1, 0, 0]  # control: no element twice
    with pytest.raises(harness.MemoryGuardError, match=r"programs \(0, 0, 0\) and \(1, 0, 0\) both store"):
        _stores((2,), [0, 1], second=[5, 5])


def test_an_explicit_shape_the_setting_cannot_take_is_not_checked():
    """Planted m25: ``Small.explicit`` shapes run without the setting's ``multiple_of`` (the calls it never
    receives, e.g. TMA rows of 16 bytes), so a shape off the multiple was held to the setting too."""
    from conformance import check
    from conformance.specs import Small
    from neurobrix.schema import Domain, Setting

    config = {"BLOCK_M": 64, "num_warps": 4}
    entry = Setting(Domain(("fp32",), (("M", 1, 4), ("N", 1, 64))), config)
    on, off = {"M": 2, "N": 40}, {"M": 2, "N": 41}
    small = Small({"M": (1, 4), "N": (8, 64)}, {}, {"N": 8}, (on, off))
    found = check.check_entry("rms_norm", entry, "fp32", 1, "ci", shrink=False, small=small)
    assert found.passed and found.examples == 2, found.failure


# -- walk-through 31: a missing dependency, NEUROBRIX_TABLES, mutants --list ------------------------------------------


def test_each_dependency_missing_is_named_in_one_line(monkeypatch, capsys):
    """Planted w23: pyyaml left out of the dependencies named, so `run` without it ended in a traceback."""
    from neurobrix import cli
    from neurobrix import run as run_module

    def run(opts, write=None, notice=None):
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")

    monkeypatch.setattr(run_module, "run", run)
    with pytest.raises(SystemExit) as ended:
        cli.main(["run", "--model", "tiny", "--prompt", "hello"])
    err = capsys.readouterr().err
    assert ended.value.code == 1 and err.startswith("neurobrix: error: yaml is not installed") and "pyyaml" in err
    assert err.count("\n") == 1
