"""Planted-bug round 58 (docs/planted-bugs.md): cases for the plants of tests/planted60_plants.py that the tests
guarding their code let through, in what kernel-mutant round kmut18, text round 48 and walk-through round 41 landed.

Each case fails with its plant in place (checked with tests/planted60_driver.py, this file alone) and passes on the
clean code. No GPU, no subprocess, no model built by transformers: ``offsets.layout_problems`` on tensors laid out for
each rule, the lint on a module written for it, ``fuse_weights`` on a one-layer checkpoint held in memory, a tiny
model of PyTorch's ops for the statistics, transformers' tokenizer (only) for the added tokens.

Outcomes (docs/planted-bugs.md, round 58): caught by the tests guarding their code, l05, o01, o02 (test_kmut18.py),
m02, t01 (test_text_round48.py), w02 (test_cli.py's statistics line; test_walk41.py alone let it through), r02, r03
(test_gate_round44.py); closed here, l01, l02, l03, l04, o03, o04, o05, m01, t02, w01, w03, r01.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_config import BASE

from conformance import offsets
from neurobrix.config import ModelConfig, checkpoint_shapes
from neurobrix.model import WeightsError, fuse_weights

ROOT = Path(__file__).resolve().parents[1]
FLASH = "neurobrix.ops.attention._attention_flash_kernel"


def _flash(q: torch.Tensor, heads: int = 4, group: int = 2) -> list[str]:
    """layout_problems of flash's q as the launcher binds it: its first three strides, HQ and G."""
    strides = dict(zip(("stride_qb", "stride_qs", "stride_qh"), q.stride()[:3]))
    return offsets.layout_problems(FLASH, {"q_ptr": q, "HQ": heads, "G": group, **strides})


# ------------------------------------------------------------------ the layouts


def test_a_batch_slot_overlapping_the_next_by_one_position_is_folded():
    """l01: the fold rule counts a sequence's positions to the end of its last (size x stride), not to its start
    ((size - 1) x stride): two sequences of 4 positions whose slots are 3 positions apart (the last position of one
    is the first of the next) are refused; slots 4 positions apart are not."""
    buffer = torch.empty(200)
    row = 2 * 4  # 2 heads of 4
    overlapping = buffer.as_strided((2, 4, 2, 4), (3 * row, row, 4, 1))
    apart = buffer.as_strided((2, 4, 2, 4), (4 * row, row, 4, 1))
    assert "folds in an outer axis" in _flash(overlapping, heads=2, group=1)[0]
    assert _flash(apart, heads=2, group=1) == []


def test_a_batch_of_one_is_not_held_to_the_fold_rule():
    """l04: a batch axis of size one multiplies nothing but 0, whatever its stride: a [1, S, H, D] view of a seq-major
    buffer (batch stride one position's) passes, as the engine's own layout does; two sequences so laid out do not."""
    one = torch.empty(8, 1, 4, 16).transpose(0, 1)
    assert one.stride(0) < one.shape[1] * one.stride(1)  # the batch stride is smaller than the positions' span
    assert _flash(one) == []
    assert "folds in an outer axis" in _flash(torch.empty(8, 2, 4, 16).transpose(0, 1))[0]


def test_the_fused_row_counts_k_and_v_heads_by_group():
    """l02: flash's row is q's heads and a k and a v head per group (HQ + 2 HQ / G): with 4 q heads in groups of 2, a
    position of the fused projection is 8 heads; one padded to 10 heads is refused, though it is within 3 HQ."""
    assert _flash(torch.empty(2, 8, 8, 16)[:, :, :4]) == []
    said = _flash(torch.empty(2, 8, 10, 16)[:, :, :4])
    assert len(said) == 1 and "past 8 of its inner stride 16" in said[0], said


def test_a_stride_is_held_by_its_own_layout_not_its_kernels_others():
    """l03: flash's q layout dropped (k's, v's and o's kept): the q position stride the allowed product multiplies is
    named unheld, as it is with no layout at all; the kernel having other layouts holds nothing of q's."""
    file = ROOT / "neurobrix/ops/attention.py"
    source = file.read_text(encoding="utf-8")
    saved = dict(offsets.LAYOUTS)
    try:
        offsets.LAYOUTS[FLASH] = tuple(layout for layout in saved[FLASH] if layout.pointer != "q_ptr")
        unheld = {stride for _, _, stride in offsets.unheld_strides("neurobrix.ops.attention", source)}
    finally:
        offsets.LAYOUTS.clear()
        offsets.LAYOUTS.update(saved)
    assert unheld == {f"{FLASH}.stride_qs"}


# ------------------------------------------------------------------ the lint's reading

READING = """
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, stride, n, W: tl.constexpr):
    i = tl.program_id(0)
    wide = tl.program_id(1).to(tl.int64) * 16 + tl.arange(0, 16)
    tl.store(x_ptr + (wide * n, i * stride, wide)[-2], 1.0)  # narrow: i * stride
    tl.store(x_ptr + (i * n, wide * stride)[-1], 1.0)
    pair = (y_ptr, wide)
    tl.store(pair[W] + pair[1 - W], 1.0)  # mixed: pair[W] | pair[1 - W]
    negated = (x_ptr, i)
    tl.store(negated[-W] + negated[W + 1], 1.0)  # mixed: negated[-W] | negated[W + 1]
    tl.store(x_ptr + tl.cast(wide * stride, dtype=tl.int32), 1.0)  # cast: tl.cast(wide * stride, dtype=tl.int32)
    tl.store(x_ptr + tl.cast(i, dtype=tl.int64) * stride, 1.0)
"""


def test_the_lint_reads_negative_picks_int64_mixes_and_keyword_casts():
    """o03: t[-2] of a 3-tuple is its element 1, not 2 (the minus sign is the tree's UnaryOp); o04: a pick by a
    non-literal from a pointer and an int64 offset is refused as a pick from a pointer and an int32 one is, and so is
    a pick by a negated non-literal (t[-W]: the lint passed over every negated index as if a literal); o05:
    ``tl.cast(x, dtype=...)`` is a cast as ``tl.cast(x, dtype)`` is (to int32 named, to int64 a widening)."""
    expected = set()
    for line in READING.splitlines():
        for how, mark in (("product", "# narrow: "), ("cast", "# cast: "), ("mixed", "# mixed: ")):
            if mark in line:
                expected |= {("synthetic._kernel", t, how) for t in line.split(mark)[1].split(" | ")}
    found = {(where, text, how) for where, text, _, how in offsets.findings("synthetic", READING)}
    assert found == expected


# ------------------------------------------------------------------ weights that are not finite


def _tied_state(cfg: ModelConfig) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {name: torch.randn(shape, generator=g) for name, shape in checkpoint_shapes(cfg).items()}


def test_a_tied_checkpoint_holding_only_the_head_is_checked():
    """m01: tied embeddings, the checkpoint holding lm_head.weight and no embedding: transformers gives the head to the
    embedding, so it feeds the layers, and a NaN in it is refused as one in the embedding is; a NaN in an untied head
    (which reaches the logits only) is not."""
    cfg = ModelConfig.from_hf({**BASE, "tie_word_embeddings": True})
    state = _tied_state(cfg)
    state["lm_head.weight"] = state.pop("model.embed_tokens.weight")
    fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")  # finite: loads
    state["lm_head.weight"][3, 1] = float("nan")
    with pytest.raises(WeightsError, match="tensor 'lm_head.weight' holds NaN"):
        fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")
    untied = ModelConfig.from_hf({**BASE, "tie_word_embeddings": False})
    state = _tied_state(untied)
    state["lm_head.weight"][3, 1] = float("nan")
    fuse_weights(untied, state.__getitem__, set(state), torch.float32, "cpu")


# ------------------------------------------------------------------ tokenizer.json's added tokens


def test_tokenizer_json_wins_over_added_tokens_json_at_one_id(tmp_path):
    """t02: a checkpoint saved before transformers 4.34 (no added_tokens_decoder) whose added_tokens.json names another
    text at an id tokenizer.json writes: tokenizer.json's token is the one at that id, as transformers reads the
    folder (the prompt's ids and the decoded ids, against transformers' tokenizer)."""
    transformers = pytest.importorskip("transformers")
    from test_text_round48 import added_tokens_folder

    from neurobrix.tokenizer import Tokenizer

    folder = tmp_path / "t"
    first = added_tokens_folder(
        folder, "sentencepiece", [(0, {"content": "<x>", "special": True})], "LlamaTokenizer", None
    )
    (folder / "added_tokens.json").write_text(json.dumps({"<x>": first, "<y>": first}), encoding="utf-8")
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    ours = Tokenizer(folder)
    assert theirs.convert_ids_to_tokens(first) == "<x>"  # the case is real: the file's token holds the id
    for prompt in ("a <x> b <y>", "<y><x>"):
        assert ours.encode_prompt(prompt, chat=False) == theirs(prompt)["input_ids"], prompt
    ids = [7, first, 9]
    assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=True)


# ------------------------------------------------------------------ walk-through 41


def test_doctor_says_what_to_do_after_every_file_named(tmp_path, monkeypatch, capsys):
    """w01: two untracked class files (two classes added before `track`): doctor names both, then what to do, as
    `run` ends its refusal; the fix was never to sit between the files named."""
    import shutil

    from test_walk41 import _flat

    from neurobrix import tables
    from neurobrix.cli import main

    copy = tmp_path / "tables"
    shutil.copytree(ROOT / "tables", copy)
    for new in ("nvidia-b200", "nvidia-b300"):
        (copy / new).mkdir()
        shutil.copy(copy / "nvidia-h200" / "class.yaml", copy / new / "class.yaml")
    monkeypatch.setenv("NEUROBRIX_TABLES", str(copy))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tables._locate.cache_clear()
    with pytest.raises(tables.TablesError) as refused:
        tables.load()
    fix = _flat(str(refused.value).splitlines()[-1])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        raise SystemExit(main(["doctor"]))
    out = _flat(capsys.readouterr().out)
    named = [
        out.index(f"{new}/class.yaml: present but not in the tracked list") for new in ("nvidia-b200", "nvidia-b300")
    ]
    assert out.count(fix) == 1 and out.index(fix) > max(named), out


def test_a_batch_whose_first_sequence_ends_at_once_keeps_its_decode_rate():
    """w03: a batch of two where the first sequence's first token ends it and the second goes on: tokens were decoded
    after the first (the second's), so the line gives a decode rate, not n/a; decoded_tokens counts each sequence's
    tokens after its first."""
    from test_planted22 import _tiny

    from neurobrix.generate import Sampling, generate_batch

    model = _tiny(16, batch=2)
    prompts = [[1, 2, 3], [4, 5, 6]]
    free, _ = generate_batch(model, prompts, 4, Sampling(), set())
    end = free[0][0]
    assert free[1][0] != end  # the case is real: only the first sequence ends at its first token
    got, stats = generate_batch(model, prompts, 4, Sampling(), {end})
    assert len(got[0]) == 1 and len(got[1]) > 1, got
    assert stats.decoded_tokens == sum(len(o) - 1 for o in got)
    assert "decode n/a" not in stats.line() and stats.decode_tokens_per_s > 0, stats.line()


# ------------------------------------------------------------------ RECORD rows


@pytest.mark.parametrize("algorithm", ["sha1", "sha224", "sha3_256", "blake2b", "md5"])
def test_a_record_row_hashed_outside_pips_strong_hashes_is_not_checked(algorithm):
    """r01: the engine checks an installed RECORD row only under a hash pip trusts (its STRONG_HASHES, which the gate's
    RECORD_HASHES are): a row under sha224 (SHA-2, but not one of them) is refused by name as an md5 row is, never
    taken as a check of the installed tables or kernels."""
    from pip._internal.utils.hashes import STRONG_HASHES

    from gate import wheel
    from neurobrix import tables

    assert set(tables.RECORD_HASHES) == set(wheel.RECORD_HASHES) == set(STRONG_HASHES)
    with pytest.raises(ValueError, match=f"hashed with '{algorithm}'"):
        tables.record_digest(algorithm, b"TRACKED.yaml")
    for strong in STRONG_HASHES:
        assert tables.record_digest(strong, b"TRACKED.yaml")
