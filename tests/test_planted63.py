"""Planted-bug round 61 (docs/planted-bugs.md): cases for the plants of tests/planted63_plants.py that the tests
guarding their code let through, in the fill lint (conformance/fills.py), the offsets lint's loaded branch
(conformance/offsets.py), the note a load that fills a missing bias or norm weight prints (neurobrix/model.py) and the
interpreter's store guard (conformance/harness.py).

Each case fails with its plant in place (checked with tests/planted63_driver.py, this file alone) and passes on the
clean code. The lints read modules written here; the note is read from ``fuse_weights`` on a made-up config; the store
guard runs one kernel under the interpreter.

Closed here: f01 to f05, f07, f08 (the fill lint), o01 to o03 (the loaded branch), c04 (the note), h01 (the store
guard). Outcomes of all 20: see docs/planted-bugs.md, round 61.
"""

from __future__ import annotations

import pytest
import torch

from conformance import fills, offsets

# a module written for the fill lint: each function reduces or starts one value; the expected problems are read from
# the "# named: " comments (each the start of one problem after "synthetic.FUNCTION ")
FILLS = """
import triton
import triton.language as tl
from triton import jit


@triton.jit
def _argmin(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    low = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    high = tl.load(x_ptr + offs, mask=offs < n, other=float("inf"))
    tl.store(y_ptr, tl.argmin(low, axis=0))  # named: reduces low (tl.argmin(low, axis=0)), loaded with other=-float
    tl.store(y_ptr, tl.argmin(high, axis=0))


@triton.jit
def _bf16_start(y_ptr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.bfloat16)  # named: starts a value in tl.bfloat16
    tl.store(y_ptr + tl.arange(0, BLOCK), acc)


@triton.jit
def _cast(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(y_ptr, tl.max(a, axis=0))  # named: reduces a (tl.max(a, axis=0)), loaded with other=0.0


@triton.jit
def _neutralised(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    m = tl.where(offs < n, m, float("-inf"))
    tl.store(y_ptr, tl.max(m, axis=0))


@triton.jit
def _positional(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(x_ptr + offs, inside, other=0.0)
    b = tl.load(x_ptr + offs, inside, 0.0)
    c = tl.load(x_ptr + offs, inside, float("-inf"))
    tl.store(y_ptr, tl.max(a, axis=0))  # named: reduces a (tl.max(a, axis=0)), loaded with other=0.0
    tl.store(y_ptr, tl.max(b, axis=0))  # named: reduces b (tl.max(b, axis=0)), loaded with other=0.0
    tl.store(y_ptr, tl.max(c, axis=0))


@triton.jit(do_not_specialize=["n"])
def _called(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.store(y_ptr, tl.sum(s, axis=0))  # named: reduces s (tl.sum(s, axis=0)), loaded with other=1.0


@jit
def _bare(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.store(y_ptr, tl.sum(s, axis=0))  # named: reduces s (tl.sum(s, axis=0)), loaded with other=1.0
"""


def test_the_fill_lint_reads_each_way_a_fill_and_a_start_are_written():
    """Planted f01: argmin's neutral value taken from argmax's (-inf); f02: bf16 a start a running value may keep;
    f03: a load under ``.to`` not followed; f04: a name assigned twice judged by its first value (a fill neutralised
    by a tl.where named); f05: a mask passed by position not seen; f07: a Triton function found by ``@triton.jit``
    alone (``@triton.jit(...)`` and ``@jit`` unread); f08: a fill passed by position not read."""
    expected = []
    function = None
    for line in FILLS.splitlines():
        if line.startswith("def "):
            function = line[4:].split("(")[0]
        if "# named: " in line:
            expected.append(f"synthetic.{function} {line.split('# named: ')[1]}")
    found = fills.fill_problems("synthetic", FILLS)
    assert len(found) == len(expected) == 7, found
    for start in expected:
        assert sum(p.startswith(start) for p in found) == 1, (start, found)


# a paged cache as a kernel would read one: each line an offsets problem must name ends with "# named"
LOADED = """
import triton
import triton.language as tl


@triton.jit
def _kernel(k_ptr, table_ptr, len_ptr, o_ptr, b, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    i = i + 1
    tl.store(o_ptr + i.to(tl.int32), 1.0)
    base = b * 0
    base += tl.load(table_ptr + b)
    tl.store(o_ptr + base.to(tl.int32), 1.0)  # named
    n = tl.load(len_ptr + b + 1).to(tl.int32)
    slot, step = tl.load(table_ptr + b + 2), b * 2
    tl.store(o_ptr + slot.to(tl.int32) + step.to(tl.int32), 1.0)  # named
    tl.store(o_ptr + n + tl.arange(0, BLOCK), tl.load(k_ptr + tl.arange(0, BLOCK)))
"""


def test_the_offsets_lint_follows_a_loaded_value_and_finds_its_pointer(monkeypatch):
    """Planted o01: a name's values followed without the names seen (``i = i + 1`` recursed for ever); o02: a value
        loaded by ``+=`` not followed; o03: the pointer of ``tl.load(len_ptr + b + 1)`` looked for one step into its
        address only (its allowance not found). Found in the clean code: a value loaded in a tuple's assignment (``slot,
    step = tl.load(...), b * 2``) was not followed; its element is now (the whole value where it is not written out)."""
    where = "synthetic._kernel"
    monkeypatch.setitem(offsets.NARROW_OFFSETS, where, {"len_ptr": offsets.Allow(("decode.lengths",), "lengths")})
    found = {(text, how) for _, text, _, how in offsets.findings("synthetic", LOADED)}
    assert found == {
        ("base.to(tl.int32)", "loaded"),
        ("tl.load(len_ptr + b + 1).to(tl.int32)", "loaded"),
        ("slot.to(tl.int32)", "loaded"),
    }, found
    problems = offsets.narrow_offsets("synthetic", LOADED)
    assert len(problems) == 2, problems
    assert {p.split(" to int32")[0] for p in problems} == {f"{where} narrows base", f"{where} narrows slot"}, problems


def test_the_note_counts_the_filled_tensors_it_does_not_show(capsys):
    """Planted c04: the note's "and N more" counted the three it shows too. Every bias of two layers missing (14
    tensors): three shown, eleven more."""
    from neurobrix.config import ModelConfig, checkpoint_shapes, initialised
    from neurobrix.model import fuse_weights

    cfg = ModelConfig.from_hf(
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 8,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "vocab_size": 16,
            "attention_bias": True,
            "mlp_bias": True,
            "rms_norm_eps": 1e-6,
            "max_position_embeddings": 64,
        }
    )
    shapes = checkpoint_shapes(cfg)
    stored = {n for n in shapes if initialised(n) is None or n.endswith("norm.weight")}
    missing = len(shapes) - len(stored)
    assert missing == 14
    fuse_weights(cfg, lambda n: torch.ones(shapes[n]), stored, torch.float32, "cpu")
    said = capsys.readouterr().err
    assert said.count("note:") == 1 and f" and {missing - 3} more: filled with zeros (a bias)," in said, said


try:
    import triton
    import triton.language as tl

    @triton.jit
    def _store_3d(out, first):
        """Each program (its place over the three axes, ``p``) stores p at ``first[p]``."""
        p = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
        tl.store(out + tl.load(first + p), p)

except ImportError:  # pragma: no cover - every environment the tests run in has Triton
    pass


def test_the_store_guard_names_programs_by_all_three_axes():
    """Planted h01: a program's place taken as x + nx * (y + nx * z), the first axis's size for the second's: on a
    1 x 2 x 2 grid (0, 1, 0) and (0, 0, 1) were one program, and their store to one element passed."""
    from conformance import harness

    out = torch.full((8,), -1, dtype=torch.int32)
    with harness.memory_guarded():
        _store_3d[(1, 2, 2)](out, torch.tensor([0, 1, 2, 3], dtype=torch.int32))  # the control: distinct elements
    assert out.tolist()[:4] == [0, 1, 2, 3]
    with pytest.raises(harness.MemoryGuardError, match="both store") as refused:
        with harness.memory_guarded():
            _store_3d[(1, 2, 2)](out, torch.tensor([0, 5, 5, 3], dtype=torch.int32))
    assert "(0, 1, 0)" in str(refused.value) and "(0, 0, 1)" in str(refused.value), refused.value
