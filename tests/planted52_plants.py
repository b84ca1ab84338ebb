"""Round 52's planted bugs, in the code outside the kernels that a kernel's proof rests on (class: a proof that holds
for the wrong thing): the float64 references (conformance/reference.py) and the error bounds derived for them
(conformance/bounds.py), the judge that compares a kernel's outputs with them (``harness.judge``), the draws
(conformance/strategies.py: edge values, dimensions, values), and the engine's host code that prepares a kernel's
inputs (neurobrix/model.py: prefill chunks, positions, the KV cache; neurobrix/generate.py: a decode step's position
and cache length, the one-step-ahead loops, stopping). For tests/planted52_driver.py: id, file, the exact text
replaced, its replacement, and the existing tests a contributor would run for it (the outcome of each:
tests/test_planted52.py's docstring)."""

from __future__ import annotations

BOUNDS, REF, STRAT, HAR = (
    "conformance/bounds.py",
    "conformance/reference.py",
    "conformance/strategies.py",
    "conformance/harness.py",
)
MODEL, GEN = "neurobrix/model.py", "neurobrix/generate.py"

T_BOUNDS = ["tests/test_bounds.py", "tests/test_planted37.py"]
T_REF = ["tests/test_reference.py", "tests/test_model_reference.py"]
T_STRAT = ["tests/test_strategies.py", "tests/test_planted37.py"]
T_HAR = ["tests/test_planted49.py", "tests/test_kmut4.py"]
ENG = "tests/test_engine.py::"
T_ENGINE = [  # the engine's tests against transformers that decode or prefill in chunks, and the loops' own
    "tests/test_chunks.py",
    "tests/test_generate.py",
    ENG + "test_greedy_tokens_identical_to_transformers",
    ENG + "test_greedy_picked_on_the_device_decodes_what_the_host_picks",
    ENG + "test_a_prompt_prefilled_in_several_chunks_matches_transformers",
    ENG + "test_a_batch_generates_what_each_prompt_generates_alone",
    ENG + "test_decode_queues_the_next_step_before_reading_this_one",
    ENG + "test_sampling_is_reproducible_with_a_seed",
    "tests/test_generation_planted.py::test_a_finished_sequence_gets_no_more_tokens_while_the_batch_goes_on",
    "tests/test_runtime_planted.py::test_a_generation_needing_one_cache_position_more_than_built_is_refused",
    "tests/test_host_planted14.py::test_a_batch_ended_by_its_first_tokens_runs_no_decode_step",
]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ bounds: unit roundoffs and underflow
    p(  # bf16 given fp16's unit roundoff (8 fraction bits read as 11): every bf16 bound 8 times too tight
        "b01",
        BOUNDS,
        "torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}",
        "torch.float16: 2.0**-11, torch.bfloat16: 2.0**-11}",
        T_BOUNDS,
    ),
    p(  # fp16's underflow given fp32's (2^-126): an fp16 result in its subnormal range allowed nothing
        "b02",
        BOUNDS,
        "torch.float16: 2.0**-25, torch.bfloat16: 2.0**-126}",
        "torch.float16: 2.0**-126, torch.bfloat16: 2.0**-126}",
        T_BOUNDS,
    ),
    p(  # an fp32 special function's ulps counted as unit roundoffs (half the allowance)
        "b03",
        BOUNDS,
        "SPECIAL = 2 * SPECIAL_ULPS * U32",
        "SPECIAL = SPECIAL_ULPS * U32",
        T_BOUNDS,
    ),
    # ------------------------------------------------------------------ bounds: linear
    p(  # K read from x's rows (M), not its columns: the accumulation allowance of M additions
        "b04",
        BOUNDS,
        "    x64, w64 = _f64(x), _f64(weight)\n    K = x64.shape[1]\n",
        "    x64, w64 = _f64(x), _f64(weight)\n    K = x64.shape[0]\n",
        T_BOUNDS,
    ),
    p(  # the underflow term's K dependence dropped: one product's underflow allowed, not K + 2 operations'
        "b05",
        BOUNDS,
        "abs_products + (K + 2) * underflow(torch.float32)",
        "abs_products + 2 * underflow(torch.float32)",
        T_BOUNDS,
    ),
    p(  # gemv's split-K merge not counted in its depth
        "b06",
        BOUNDS,
        "        return _cdiv(k_slice, block_k) + block_k - 1 + split_k - 1\n",
        "        return _cdiv(k_slice, block_k) + block_k - 1\n",
        T_BOUNDS,
    ),
    p(  # the tensor cores' truncation (2 u a step) counted as rounding (u): the doubling dropped
        "b07",
        BOUNDS,
        "        dots = 2 * max(_cdiv(length, block_k) + block_k - 1, _cdiv(length, 16) + 16)\n",
        "        dots = max(_cdiv(length, block_k) + block_k - 1, _cdiv(length, 16) + 16)\n",
        T_BOUNDS,
    ),
    # ------------------------------------------------------------------ bounds: the final rounding, norms, rotary
    p(  # the final rounding's binade taken from |y| alone, not |y| + pre (a result past a power of two)
        "b08",
        BOUNDS,
        "    return pre + half_ulp(ref.abs() + pre, dtype)\n",
        "    return pre + half_ulp(ref.abs(), dtype)\n",
        T_BOUNDS,
    ),
    p(  # the residual add's underflow dropped (two fp16 subnormals' fp32 sum is exact, a bf16 one is not)
        "b09",
        BOUNDS,
        "    return _final(U32 * h.abs() + underflow(torch.float32), h, x.dtype)\n",
        "    return _final(U32 * h.abs(), h, x.dtype)\n",
        T_BOUNDS,
    ),
    p(  # rms_norm's two products counted as one
        "b10",
        BOUNDS,
        "    rel = _compose(r1, SPECIAL / (1 - SPECIAL), SPECIAL, U32, U32)\n",
        "    rel = _compose(r1, SPECIAL / (1 - SPECIAL), SPECIAL, U32)\n",
        T_BOUNDS,
    ),
    p(  # rms_norm's underflowing squares' term not divided by a (an absolute error read as relative)
        "b11",
        BOUNDS,
        "    g = gamma(_depth(N, depth) + 3, U32) + (N + 2) * underflow(torch.float32) / a\n",
        "    g = gamma(_depth(N, depth) + 3, U32) + (N + 2) * underflow(torch.float32)\n",
        T_BOUNDS,
    ),
    p(  # rotary's two-term dot given gamma_2: the fp32 table's own rounding of c and s left out
        "b12",
        BOUNDS,
        "    pre = gamma(3, U32) * magnitude + 3 * underflow(torch.float32)\n",
        "    pre = gamma(2, U32) * magnitude + 3 * underflow(torch.float32)\n",
        T_BOUNDS,
    ),
    p(  # silu's exp(-g) overflow allowance taken where g > 80, not g < -80
        "b13",
        BOUNDS,
        "    pre = torch.where(g < -EXP_OVERFLOW, pre + y.abs(), pre)\n",
        "    pre = torch.where(g > EXP_OVERFLOW, pre + y.abs(), pre)\n",
        T_BOUNDS,
    ),
    p(  # the rope table's bound without theta's roundings (the exponent's error, ln(theta) of them)
        "b14",
        BOUNDS,
        "    roundings = math.ceil(math.log(max(float(theta), math.e))) + SPECIAL_ULPS + 2\n",
        "    roundings = SPECIAL_ULPS + 2\n",
        T_BOUNDS,
    ),
    # ------------------------------------------------------------------ references
    p(  # the linear reference computed in float32
        "r01",
        REF,
        "    y = _f64(x) @ _f64(weight).T\n",
        "    y = (x.float() @ weight.float().T).to(F64)\n",
        T_REF,
    ),
    p(  # silu's exp computed in float32 in the reference
        "r02",
        REF,
        "    return g * (1.0 / (1.0 + torch.exp(-g))) * u\n",
        "    return g * (1.0 / (1.0 + torch.exp(-g.float()).to(F64))) * u\n",
        T_REF,
    ),
    p(  # eps added outside the square root
        "r03",
        REF,
        "    return x64 / torch.sqrt(mean_square + eps) * _f64(weight)\n",
        "    return x64 / (torch.sqrt(mean_square) + eps) * _f64(weight)\n",
        T_REF,
    ),
    p(  # the fused norm's reference normalises the exact sum, not the stream rounded to the model's dtype
        "r04",
        REF,
        "        y = rms_norm(h.to(x.dtype), weight, eps)\n",
        "        y = rms_norm(h, weight, eps)\n",
        T_REF,
    ),
    p(  # a chunk's mask admits the next (future) key of each query
        "r05",
        REF,
        ".triu(diagonal=S - C + 1)  # key j > S - C + i",
        ".triu(diagonal=S - C + 2)  # key j > S - C + i",
        T_REF,
    ),
    p(  # GQA heads interleaved (h % Hkv) where the engine groups them (h // group)
        "r06",
        REF,
        "            kv = h // group\n            for r in range(0, C, rows):\n",
        "            kv = h % HKV\n            for r in range(0, C, rows):\n",
        T_REF,
    ),
    p(  # the decode reference reads one cache position past the length
        "r07",
        REF,
        "    filled = torch.arange(S, device=q64.device)[None, :] < n[:, None]  # [B, S]\n"
        "    empty = ~filled[:, None, :, None]  # positions past the length are never read: whatever they hold\n"
        "    k_h = ",
        "    filled = torch.arange(S, device=q64.device)[None, :] <= n[:, None]  # [B, S]\n"
        "    empty = ~filled[:, None, :, None]  # positions past the length are never read: whatever they hold\n"
        "    k_h = ",
        T_REF,
    ),
    p(  # rotary's frequencies computed over head_dim where a partial rotary_dim was given
        "r08",
        REF,
        "    inv_freq = [1.0 / theta ** (2 * i / dim) for i in range(head_dim // 2)]\n",
        "    inv_freq = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]\n",
        T_REF,
    ),
    # ------------------------------------------------------------------ the judge
    p(  # only the first output judged (rms_norm's residual stream, a table's second column never compared)
        "h01",
        HAR,
        "    for actual, ref, bound, *label in pairs:  # a pair may name",
        "    for actual, ref, bound, *label in pairs[:1]:  # a pair may name",
        T_HAR,
    ),
    p(  # an output's dtype not compared (an fp32 result never rounded to fp16 passes every bound)
        "h02",
        HAR,
        "        if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):\n",
        "        if tuple(got.shape) != tuple(want.shape):\n",
        T_HAR,
    ),
    # ------------------------------------------------------------------ draws
    p(  # the block sizes' doubles (a second tile) never drawn as edges
        "d01",
        STRAT,
        "        for m in (b, 2 * b):\n",
        "        for m in (b,):\n",
        T_STRAT,
    ),
    p(  # the edges never drawn: any value only (a tile's edge a 1-in-hi chance)
        "d02",
        STRAT,
        "    return st.one_of(st.sampled_from(edges), anywhere) if edges else anywhere\n",
        "    return anywhere\n",
        T_STRAT,
    ),
    p(  # the range's top not among the edges
        "d03",
        STRAT,
        "    candidates = {1, 2, 3, lo, lo + 1, hi - 1, hi, 5, 7, 11, 13}\n",
        "    candidates = {1, 2, 3, lo, lo + 1, hi - 1, 5, 7, 11, 13}\n",
        T_STRAT,
    ),
    p(  # the value's seed fixed: every draw of a kind and shape the same tensor
        "d04",
        STRAT,
        "    return make_values(shape, dtype, kind, seed, exponents, param)\n",
        "    return make_values(shape, dtype, kind, 0, exponents, param)\n",
        T_STRAT,
    ),
    p(  # cancel's second half not the exact negation (rows no longer sum to 0)
        "d05",
        STRAT,
        "        rows[:, n - half :] = -rows[:, :half]\n",
        "        rows[:, n - half :] = -rows[:, :half].flip(-1) * 1.5\n",
        T_STRAT,
    ),
    # ------------------------------------------------------------------ the engine's host code
    p(  # a decode step's cache length the position, not one more (the new token's own key not read)
        "e01",
        GEN,
        "    state[0].fill_(position)\n    state[1].fill_(position + 1)\n",
        "    state[0].fill_(position)\n    state[1].fill_(position)\n",
        T_ENGINE,
    ),
    p(  # the first decode step (sampling loop) fed at the prompt's last position, overwriting its k and v
        "e02",
        GEN,
        "            ahead = step(token, seq)\n",
        "            ahead = step(token, seq - 1)\n",
        T_ENGINE,
    ),
    p(  # the greedy loop's first step fed one position late (a hole left in the cache)
        "e03",
        GEN,
        "    greedy.start(token, seq)\n",
        "    greedy.start(token, seq + 1)\n",
        T_ENGINE,
    ),
    p(  # a token past max_new_tokens decoded and kept
        "e04",
        GEN,
        "        if steps < max_new_tokens and not all(done):\n",
        "        if steps <= max_new_tokens and not all(done):\n",
        T_ENGINE,
    ),
    p(  # a sequence ended still handed to on_step (its tokens after the end shown)
        "e05",
        GEN,
        "            new.append(None if done[b] else t)\n",
        "            new.append(t)\n",
        T_ENGINE,
    ),
    p(  # the greedy loop records the step queued ahead, not the one read (each token one step early, one lost)
        "e06",
        GEN,
        "        record([t for (t,) in reads[(s - 1) % 2].finish()])\n",
        "        record([t for (t,) in reads[s % 2].finish()])\n",
        T_ENGINE,
    ),
    p(  # the EOS check before the append: the EOS token left out of the output
        "e07",
        GEN,
        "            if not done[b]:\n                outs[b].append(t)\n                done[b] = t in eos or",
        "            if not done[b] and t not in eos:\n                outs[b].append(t)\n            if not done[b]:\n"
        "                done[b] = t in eos or",
        T_ENGINE,
    ),
    p(  # the last pass's start left out of the range (a prompt's last chunk never prefilled at a chunk of 1)
        "e08",
        MODEL,
        "    return [(0, first)] + [(start, chunk) for start in range(first, length, chunk)]\n",
        "    return [(0, first)] + [(start, chunk) for start in range(first, length - 1, chunk)]\n",
        T_ENGINE,
    ),
    p(  # the chunk length rounded up to a power of two (batch x chunk past PREFILL_TOKENS)
        "e09",
        MODEL,
        "    return min(PREFILL_SEQ, 1 << (fit.bit_length() - 1))\n",
        "    return min(PREFILL_SEQ, 1 << fit.bit_length())\n",
        T_ENGINE,
    ),
    p(  # a later chunk's attention over the whole cache (keys not yet written read as zeros)
        "e10",
        MODEL,
        "                attn = ops.attention_chunk(q, k_cache[:, :end], v_cache[:, :end], self.scale)",
        "                attn = ops.attention_chunk(q, k_cache, v_cache, self.scale)",
        T_ENGINE,
    ),
    p(  # the cache's capacity check one position short (the last step's cache length past the capacity)
        "e11",
        GEN,
        "    if seq + max_new_tokens - 1 > model.cache.capacity:\n",
        "    if seq + max_new_tokens - 2 > model.cache.capacity:\n",
        T_ENGINE,
    ),
]
