"""The conformance records against kernel bugs planted in neurobrix/ops that the check let through: each test here
failed before its record drew the input that shows the bug (named in its docstring), and passes now. No kernel is
launched: the planted kernel is emulated in PyTorch, so the file takes a second or two.
"""

from __future__ import annotations

import torch

from conformance import harness
from conformance.specs import pick

BLOCK_V = 16


def _pick_with_parts_rounded(logits: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """greedy_pick as the kernel computes it, with each part's largest value rounded to ``dtype`` before the
    merge compares parts (mutant greedy_pick.part-value-in-fp16): [B, 1] tokens."""
    tokens = []
    for row in logits.double():
        best, token = -float("inf"), 0
        for start in range(0, row.numel(), BLOCK_V):
            part = row[start : start + BLOCK_V]
            value = float(part.max().to(dtype))
            if value > best:  # the first part holding the row's largest value
                best, token = value, start + int(part.argmax())
        tokens.append(token)
    return torch.tensor(tokens, dtype=torch.float64)[:, None]


def test_the_pick_record_draws_a_later_value_one_ulp_above_the_largest():
    """Planted: greedy_pick's parts keep their largest value in fp16 for the merge (mutant
    greedy_pick.part-value-in-fp16). fp32 logits whose two largest values sit in different parts and differ below
    fp16's precision then tie at the merge, which takes the earlier part; the record's draws (ties were exact) never
    held such a pair, so the check passed. A "near tie" row now holds one ulp of the logits' dtype above the
    largest value at a later index: the token is that later index, and only a comparison at full precision finds it."""
    shape = {"B": 3, "V": 2 * BLOCK_V + 1}
    for seed in range(40):
        case = harness.build("greedy_pick", "fp32", shape, harness.Values("fp32", "cpu", seed))
        logits = case.args["logits"]
        ref = pick.reference.greedy_pick(logits).double()[:, None]
        finite = torch.isfinite(logits).all(dim=1)  # the emulation leaves NaN and infinities to the other draws
        exact = _pick_with_parts_rounded(logits, torch.float32)
        assert (exact == ref)[finite].all()  # the emulation itself is right
        wrong = (_pick_with_parts_rounded(logits, torch.float16) != ref)[:, 0] & finite
        if wrong.any():
            assert all(case.note["rows"][row] == "near tie" for row in wrong.nonzero()[:, 0].tolist())
            return
    raise AssertionError("no draw of the first 40 seeds shows a pick that compares parts below fp32's precision")


def test_one_ulp_up_is_the_next_value_of_the_dtype():
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        t = torch.tensor([1.0, -1.0, 0.0, -0.0, 3.5, -2.25, 1000.0], dtype=dtype)
        up = pick._one_ulp_up(t)
        assert up.dtype == dtype and (up > t).all()
        assert (up[2:4] == torch.finfo(dtype).tiny).all()  # above 0: the least normal number
        nonzero = t != 0
        between = (t.double() + up.double()) / 2  # nothing of the dtype lies strictly between t and up
        assert ((between.to(dtype) == t) | (between.to(dtype) == up))[nonzero].all()
