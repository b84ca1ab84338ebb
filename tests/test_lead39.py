"""Found by this session's gpu-profile check of nvidia-h200's attention_decode entries (benchmarks/results/
2026-12-06c/call3-check.log): one entry of 656 failed not on the kernel but on its judge, "attention bound: the
softmax denominator's error bound reaches 1 (inputs too large)". The check's late key (a key at each sequence's last
position scoring 100 above the others, for its group's first query head) is that head's q scaled to the score: where
q_0 is short (a sparse draw, norm 0.01) and another head of the group long (norm 100), that head's score with it is
far past anything drawn, its fp32 rounding past any bound (E = gamma |q| |k| scale of order 1). The key is now placed
only where every head of the group scores it within FAR_BELOW, as drawn scores stay."""

from __future__ import annotations

import math

import torch

from conformance import bounds, reference
from conformance.specs import attention


def test_the_late_key_keeps_every_head_of_its_group_within_a_bounded_score():
    torch.manual_seed(0)
    B, S, hkv, G, D = 1, 64, 2, 4, 64
    q = torch.randn(B, hkv * G, D).to(torch.bfloat16)
    q[0, 0] = 0
    q[0, 0, 3] = 0.01  # the group's first head: short (a sparse draw)
    q[0, 1] = q[0, 1] * 16  # another head of the group: long
    k = torch.randn(B, S, hkv, D).to(torch.bfloat16) * 16
    v = torch.randn(B, S, hkv, D).to(torch.bfloat16)
    lengths = torch.tensor([S])
    args = {"q": q, "k_cache": k, "v_cache": v, "lengths": lengths, "scale": 1 / math.sqrt(D)}
    assert attention._late_key(args, [S], hkv, G) == "1 placed"  # the second group's, not the first's
    ref = reference.attention_decode(q, k, v, lengths, args["scale"])
    bound = bounds.attention_decode(q, k, v, lengths, args["scale"], ref, key_block=64, splits=16)
    assert float(bound.max()) < 1
    # where every head is short enough, the key is placed in each group, scoring 100 above the rest for head 0
    q[0, 0, 3] = 1.0
    q[0, 1] = q[0, 1] / 16
    k[0, S - 1] = torch.randn(hkv, D).to(torch.bfloat16)
    assert attention._late_key(args, [S], hkv, G) == "2 placed"
    scores = (k[0, :, 0].double() @ q[0, 0].double()) * args["scale"]
    assert float(scores[-1] - scores[:-1].max()) > 99


def test_a_model_removed_while_its_files_are_checked_is_said_so(tmp_path, monkeypatch):
    """Strictness round 46's race, seen once under a loaded CI (its `remove` case): `neurobrix run` read the manifest,
    `remove` took the folder while the run hashed the files against it, and the run ended in a raw "No such file or
    directory: .../tokenizer.json" (exit 1). A file that cannot be read while the folder changed under the check is now
    the change it is: "was removed while this command read it" (exit 7), as for a read after the check."""
    import shutil

    from store_fixtures import make_checkpoint

    from neurobrix import store
    from neurobrix.store import DamagedModelError

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny", use_transformers=False)), progress=False)
    sha256 = store._sha256

    def removed_meanwhile(path):
        shutil.rmtree(path.parent)  # `remove` took the folder between the look at a file and its hashing
        return sha256(path)

    monkeypatch.setattr(store, "_sha256", removed_meanwhile)
    try:
        store.resolve("tiny")
    except DamagedModelError as exc:
        assert "was removed while this command read it" in str(exc), exc
    else:
        raise AssertionError("a model removed under its check resolved")
