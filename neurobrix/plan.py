"""Every kernel call a model makes: the keys preflight checks before loading weights, and certify covers.

The engine's forward pass (model.py) makes, per layer, with T tokens in flight (B x S in prefill,
B in decode) — and this module is the one place that lists them:
    rms_norm(T, hidden) [fused with the residual add after the first layer]
    linear(T, (Hq + 2 Hkv) D, hidden)      fused q/k/v projection (+ bias for Qwen2)
    rotary(T, Hq + Hkv, D)                 also appends k and v to the KV cache at their positions
    attention_prefill(S, D, G)  or  attention_decode(B, capacity, D, G)
    linear(T, hidden, Hq D)                output projection
    rms_norm(T, hidden)                    fused with the residual add
    linear(T, 2 I, hidden)                 fused gate/up projection
    silu_mul(T, I)
    linear(T, hidden, I)                   down projection
then a final rms_norm(T, hidden) and the LM head linear(B, vocab, hidden) on the last token only.
"""

from __future__ import annotations

from .config import ModelConfig

Call = tuple[str, tuple[tuple[str, int], ...]]  # (kernel, ((dim, value), ...)) in key order


def _call(kernel: str, **shape: int) -> Call:
    return kernel, tuple(shape.items())


def forward_calls(cfg: ModelConfig, batch: int, seq: int, capacity: int, prefill: bool) -> set[Call]:
    """The kernel calls of one forward pass over ``seq`` new tokens per sequence."""
    tokens = batch * seq
    calls = {
        _call("rms_norm", M=tokens, N=cfg.hidden_size),
        _call("linear", M=tokens, N=cfg.qkv_size, K=cfg.hidden_size),
        _call("rotary", T=tokens, H=cfg.num_heads + cfg.num_kv_heads, D=cfg.head_dim),
        _call("linear", M=tokens, N=cfg.hidden_size, K=cfg.num_heads * cfg.head_dim),
        _call("linear", M=tokens, N=2 * cfg.intermediate_size, K=cfg.hidden_size),
        _call("silu_mul", M=tokens, I=cfg.intermediate_size),
        _call("linear", M=tokens, N=cfg.hidden_size, K=cfg.intermediate_size),
        _call("linear", M=batch, N=cfg.vocab_size, K=cfg.hidden_size),
    }
    if prefill:
        calls.add(_call("attention_prefill", S=seq, D=cfg.head_dim, G=cfg.group_size))
    else:
        calls.add(_call("attention_decode", B=batch, S=capacity, D=cfg.head_dim, G=cfg.group_size))
    return calls


def generation_calls(cfg: ModelConfig, batch: int, prompt_len: int, capacity: int) -> set[Call]:
    """Every call of generating with this prompt length and KV-cache capacity: one prefill, then decode."""
    return forward_calls(cfg, batch, prompt_len, capacity, prefill=True) | forward_calls(
        cfg, batch, 1, capacity, prefill=False
    )


def preflight(calls: set[Call], dtype: str, class_id: str, certify_hint: str = "") -> None:
    """Check every call against the certified tables at once; raise one error listing all that are missing.

    ``certify_hint``: extra certify arguments that cover exactly this run (e.g. its config and lengths).
    """
    from .errors import MissingEntryError
    from .tables import certify_command, load

    loaded = load()
    missing: list[str] = []
    kernels: set[str] = set()
    for kernel, shape in sorted(calls):
        try:
            loaded.settings(class_id, kernel, dtype, dict(shape))
        except MissingEntryError:
            where = ", ".join(f"{k}={v}" for k, v in shape)
            missing.append(f"  {kernel:<18} {dtype} {where}   ({loaded.table_path(class_id, kernel)})")
            kernels.add(kernel)
    if missing:
        raise MissingEntryError(
            f"this model cannot run on GPU class {class_id} in {dtype}: {len(missing)} kernel call(s) have no "
            "certified setting (nothing was loaded):\n" + "\n".join(missing)
            + f"\n  certify them (from a source checkout of neurobrix, on a machine of class {class_id}):"
            + f"\n    {certify_command(class_id, sorted(kernels), [dtype], certify_hint)}"
        )
