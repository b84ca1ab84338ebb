"""The float64 references agree with independent formulations of the same ops."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from conformance import reference as ref
from conformance.strategies import profile

F64 = torch.float64
CI = profile("ci")
LLAMA31_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
LLAMA32_SCALING = dict(LLAMA31_SCALING, factor=32.0)


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-12) -> None:
    assert a.dtype == F64 and a.shape == b.shape
    scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
    worst = float((a - b.to(F64)).abs().max()) if a.numel() else 0.0
    assert worst <= tol * scale, f"max difference {worst:.3g} > {tol:.1g} x {scale:.3g}"


def randn(*shape: int, dtype: torch.dtype = torch.float16, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# --------------------------------------------------------------------------------------------- linear
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_linear_matches_exact_dot_products(dtype):
    x, w, b = randn(3, 7, dtype=dtype), randn(5, 7, dtype=dtype, seed=1), randn(5, dtype=dtype, seed=2)
    y = ref.linear(x, w, b)
    for m in range(3):
        for n in range(5):
            terms = [float(x[m, k]) * float(w[n, k]) for k in range(7)] + [float(b[n])]
            assert y[m, n].item() == pytest.approx(math.fsum(terms), rel=1e-15, abs=1e-15)
    close(ref.linear(x, w), F.linear(x.to(F64), w.to(F64)))


# ------------------------------------------------------------------------------------------- rms_norm
def hf_rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' LlamaRMSNorm.forward, in float64."""
    h = x.to(F64)
    variance = h.pow(2).mean(-1, keepdim=True)
    return w.to(F64) * (h * torch.rsqrt(variance + eps))


@pytest.mark.parametrize("eps", [1e-6, 1e-5, 0.1])
def test_rms_norm_matches_hf_and_torch(eps):
    x, w = randn(4, 33), randn(33, seed=1)
    close(ref.rms_norm(x, w, eps), hf_rms_norm(x, w, eps))
    close(ref.rms_norm(x, w, eps), F.rms_norm(x.to(F64), (33,), w.to(F64), eps))


def test_rms_norm_with_residual_normalises_the_rounded_stream():
    x, r, w = randn(3, 16), randn(3, 16, seed=1), randn(16, seed=2)
    y, h = ref.rms_norm(x, w, 1e-5, residual=r)
    close(h, x.to(F64) + r.to(F64), tol=0)
    close(ref.residual_add(x, r), h, tol=0)
    close(y, hf_rms_norm(h.to(torch.float16), w, 1e-5))
    # the rounded stream is what is normalised: not the exact sum (they differ for fp16)
    assert not torch.equal(y, hf_rms_norm(h, w, 1e-5))


def test_rms_norm_of_zero_row_is_zero():
    y = ref.rms_norm(torch.zeros(2, 8), torch.ones(8), 1e-6)
    assert torch.equal(y, torch.zeros(2, 8, dtype=F64))


# --------------------------------------------------------------------------------------------- rotary
def hf_llama3_inv_freq(head_dim: int, theta: float, scaling: dict) -> torch.Tensor:
    """transformers' _compute_llama3_parameters (vectorised with torch.where), in float64."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(F64) / head_dim))
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context_len / low, old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama)


@pytest.mark.parametrize("head_dim, theta", [(64, 10000.0), (128, 500000.0), (2, 10.0)])
def test_rope_default_frequencies_and_tables(head_dim, theta):
    tables = ref.rope_frequencies(head_dim, theta, 50)
    expected = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=F64) / head_dim)
    close(tables.inv_freq, expected, tol=1e-15)
    assert tables.cos.shape == tables.sin.shape == (50, head_dim // 2)
    close(tables.cos[0], torch.ones(head_dim // 2, dtype=F64), tol=0)
    close(tables.sin[0], torch.zeros(head_dim // 2, dtype=F64), tol=0)
    close(tables.cos**2 + tables.sin**2, torch.ones(50, head_dim // 2, dtype=F64), tol=1e-15)
    # angle addition: the table at p + q is the rotation by p composed with the rotation by q
    c, s = tables.cos, tables.sin
    close(c[17] * c[30] - s[17] * s[30], c[47], tol=1e-12)
    close(s[17] * c[30] + c[17] * s[30], s[47], tol=1e-12)


@pytest.mark.parametrize("scaling", [LLAMA31_SCALING, LLAMA32_SCALING], ids=["llama3.1", "llama3.2"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_llama3_scaling_matches_the_transformers_rule(scaling, head_dim):
    tables = ref.rope_frequencies(head_dim, 500000.0, 4, scaling)
    close(tables.inv_freq, hf_llama3_inv_freq(head_dim, 500000.0, scaling), tol=1e-15)


@pytest.mark.parametrize("scaling", [LLAMA31_SCALING, LLAMA32_SCALING], ids=["llama3.1", "llama3.2"])
def test_llama3_scaling_invariants(scaling):
    head_dim, theta = 128, 500000.0
    plain = ref.rope_frequencies(head_dim, theta, 1).inv_freq
    scaled = ref.rope_frequencies(head_dim, theta, 1, scaling).inv_freq
    factor = scaling["factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / plain
    high = wavelen < old / scaling["high_freq_factor"]
    low = wavelen > old / scaling["low_freq_factor"]
    medium = ~high & ~low
    assert high.any() and low.any() and medium.any()  # all three regimes occur at these settings
    assert torch.equal(scaled[high], plain[high])  # high frequencies unchanged
    close(scaled[low], plain[low] / factor, tol=1e-16)  # low frequencies slowed by factor
    assert (scaled[medium] < plain[medium]).all() and (scaled[medium] > plain[medium] / factor).all()
    assert (scaled[1:] < scaled[:-1]).all()  # still strictly decreasing with the index: smooth blend
    # the blend is continuous: at the regime boundaries it meets both neighbours' rules exactly
    for wl, want in ((old / scaling["high_freq_factor"], 1.0), (old / scaling["low_freq_factor"], 1.0 / factor)):
        f = 2 * math.pi / wl
        (blended,) = ref.llama3_inv_freq([f], scaling)
        assert blended == pytest.approx(f * want, rel=1e-12)


def test_llama3_scaling_matches_transformers_when_installed():
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import LlamaConfig

    config = LlamaConfig(
        hidden_size=4096,
        num_attention_heads=32,
        rope_theta=500000.0,
        max_position_embeddings=131072,
        rope_scaling=dict(LLAMA31_SCALING),
    )
    inv_freq, _ = rope_utils.ROPE_INIT_FUNCTIONS["llama3"](config, "cpu")
    ours = ref.rope_frequencies(128, 500000.0, 1, LLAMA31_SCALING).inv_freq
    # transformers computes in float32: agreement to float32 precision
    torch.testing.assert_close(inv_freq.to(F64), ours, rtol=1e-6, atol=0)


def test_yarn_scaling_matches_transformers_when_installed():
    """The reference's float64 YaRN rule (truncated and not, beta values, a factor below 1) against transformers'
    float32 one: to float32 precision, and the same attention factor."""
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import LlamaConfig

    for scaling in (
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048, "truncate": False},
        {"rope_type": "yarn", "factor": 0.5, "original_max_position_embeddings": 512, "beta_fast": 8, "beta_slow": 2},
    ):
        config = LlamaConfig(
            hidden_size=4096,
            num_attention_heads=32,
            rope_theta=500000.0,
            max_position_embeddings=131072,
            rope_scaling=dict(scaling),
        )
        inv_freq, factor = rope_utils.ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
        ours = ref.rope_frequencies(128, 500000.0, 1, scaling)
        torch.testing.assert_close(inv_freq.to(F64), ours.inv_freq, rtol=1e-6, atol=0)
        assert ours.cos[0, 0] == pytest.approx(factor, rel=1e-15)


def test_rope_rejects_unknown_scaling_and_odd_dims():
    with pytest.raises(ValueError, match="longrope"):
        ref.rope_frequencies(64, 10000.0, 4, {"rope_type": "longrope", "factor": 4.0})
    with pytest.raises(ValueError, match="even"):
        ref.rope_frequencies(63, 10000.0, 4)


@CI
@given(
    b=st.integers(1, 2),
    s=st.integers(1, 5),
    h=st.integers(1, 3),
    half=st.integers(1, 9),
    seed=st.integers(0, 2**16),
    llama3=st.booleans(),
)
def test_rotary_is_complex_multiplication(b, s, h, half, seed, llama3):
    tables = ref.rope_frequencies(2 * half, 10000.0, 64, LLAMA31_SCALING if llama3 else None)
    x = randn(b, s, h, 2 * half, seed=seed)
    positions = torch.randint(0, 64, (b, s), generator=torch.Generator().manual_seed(seed))
    out = ref.rotary(x, tables.cos, tables.sin, positions)
    z = torch.complex(x[..., :half].to(F64), x[..., half:].to(F64))
    angle = positions.to(F64)[:, :, None, None] * tables.inv_freq
    rotated = z * torch.exp(1j * angle)
    close(out, torch.cat((rotated.real, rotated.imag), dim=-1), tol=1e-12)


def test_rotary_at_position_zero_is_identity():
    tables = ref.rope_frequencies(8, 10000.0, 4)
    x = randn(2, 3, 2, 8)
    close(ref.rotary(x, tables.cos, tables.sin, torch.zeros(2, 3, dtype=torch.int64)), x.to(F64), tol=0)


# ------------------------------------------------------------------------------------------- silu_mul
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_silu_mul_matches_torch(dtype):
    gu = randn(5, 22, dtype=dtype) * 4
    close(ref.silu_mul(gu), F.silu(gu[:, :11].to(F64)) * gu[:, 11:].to(F64))


# ------------------------------------------------------------------------------------------ attention
def sdpa_prefill(q, k, v, scale):
    out = F.scaled_dot_product_attention(
        q.to(F64).transpose(1, 2),
        k.to(F64).transpose(1, 2),
        v.to(F64).transpose(1, 2),
        is_causal=True,
        scale=scale,
        enable_gqa=True,
    )
    return out.transpose(1, 2)


@CI
@given(
    b=st.integers(1, 2),
    s=st.integers(1, 20),
    hkv=st.integers(1, 3),
    group=st.integers(1, 3),
    d=st.integers(1, 20),
    seed=st.integers(0, 2**16),
    scale=st.sampled_from([0.1, 0.5, 1.0]),
)
def test_attention_prefill_matches_sdpa(b, s, hkv, group, d, seed, scale):
    q = randn(b, s, hkv * group, d, seed=seed)
    k, v = randn(b, s, hkv, d, seed=seed + 1), randn(b, s, hkv, d, seed=seed + 2)
    close(ref.attention_prefill(q, k, v, scale), sdpa_prefill(q, k, v, scale))


@CI
@given(
    b=st.integers(1, 3),
    cap=st.integers(1, 20),
    hkv=st.integers(1, 3),
    group=st.integers(1, 3),
    d=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
def test_attention_decode_matches_masked_sdpa_and_prefill(b, cap, hkv, group, d, seed):
    gen = torch.Generator().manual_seed(seed)
    q = randn(b, hkv * group, d, seed=seed)
    kc, vc = randn(b, cap, hkv, d, seed=seed + 1), randn(b, cap, hkv, d, seed=seed + 2)
    lengths = torch.randint(1, cap + 1, (b,), generator=gen)
    out = ref.attention_decode(q, kc, vc, lengths, 0.3)
    mask = torch.arange(cap)[None, :] < lengths[:, None]
    expected = F.scaled_dot_product_attention(
        q.to(F64)[:, :, None, :],
        kc.to(F64).transpose(1, 2),
        vc.to(F64).transpose(1, 2),
        attn_mask=mask[:, None, None, :],
        scale=0.3,
        enable_gqa=True,
    )[:, :, 0, :]
    close(out, expected)
    # decode at length n is prefill's query n - 1 over the first n positions
    for i in range(b):
        n = int(lengths[i])
        qs = torch.cat((torch.zeros(1, n - 1, hkv * group, d, dtype=q.dtype), q[i : i + 1, None]), dim=1)
        prefill = ref.attention_prefill(qs, kc[i : i + 1, :n], vc[i : i + 1, :n], 0.3)
        close(out[i], prefill[0, n - 1])


def test_attention_rejects_bad_heads_and_lengths():
    with pytest.raises(ValueError, match="multiple"):
        ref.attention_prefill(randn(1, 2, 3, 4), randn(1, 2, 2, 4), randn(1, 2, 2, 4), 1.0)
    with pytest.raises(ValueError, match="lengths"):
        ref.attention_decode(randn(1, 2, 4), randn(1, 5, 1, 4), randn(1, 5, 1, 4), torch.tensor([0]), 1.0)
