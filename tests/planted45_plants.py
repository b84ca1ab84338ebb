"""Round 45's planted bugs, where a count of plants per 100 lines over every tests/planted*_plants.py,
tests/gate*_plants.py and conformance/mutants.py (by file and by function, on the main of round 44's merge: 1791
plants, all anchored) found none in the model's own arithmetic or in what a plan launches: model.py's ``forward``,
``prefill`` and ``fuse_weights`` (model.py 2.0 plants per 100 lines, the fewest of the engine's files with code),
``Transformer.__init__``'s attention scale, plan.py's ``forward_calls``, ``generation_calls`` and
``certified_settings`` (each at 0 plants before). For tests/planted45_driver.py: id, file, the exact text replaced,
its replacement, and the existing tests a contributor would run for it (the outcome of each:
tests/test_planted45.py's docstring)."""

from __future__ import annotations

MODEL = [
    "tests/test_model_reference.py",
    "tests/test_chunks.py",
    "tests/test_text_round23.py",
    "tests/test_engine.py::test_a_prompt_prefilled_in_several_chunks_matches_transformers[llama-torch]",
    "tests/test_engine.py::test_a_prompt_prefilled_in_several_chunks_matches_transformers[qwen2-bias-tied-torch]",
]
PLAN = [
    "tests/test_chunks.py",
    "tests/test_strict_round18.py",
    "tests/test_planted20.py",
    "tests/test_warmup.py",
    "tests/test_text_round23.py",
    "-k",
    "plan or settings or pdl or calls or chunk or launch or certified",
]
MODELF, PLANF = "neurobrix/model.py", "neurobrix/plan.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ model.py: fuse_weights
    p(
        "f01",
        MODELF,
        'gate_up=torch.cat([take(p + "mlp.gate_proj.weight"), take(p + "mlp.up_proj.weight")]),',
        'gate_up=torch.cat([take(p + "mlp.up_proj.weight"), take(p + "mlp.gate_proj.weight")]),',
        MODEL,
    ),
    p(
        "f02",
        MODELF,
        'gate_up_bias = torch.cat([take(p + "mlp.gate_proj.bias"), take(p + "mlp.up_proj.bias")])',
        'gate_up_bias = torch.cat([take(p + "mlp.up_proj.bias"), take(p + "mlp.gate_proj.bias")])',
        MODEL,
    ),
    p(
        "f03",
        MODELF,
        '            bias = torch.cat([take(p + f"self_attn.{x}_proj.bias") for x in ("q", "k", "v")])',
        '            bias = torch.cat([take(p + f"self_attn.{x}_proj.bias") for x in ("q", "v", "k")])',
        MODEL,
    ),
    p(
        "f04",
        MODELF,
        "        lm_head = embed if torch.equal(head, embed) else head",
        "        lm_head = embed",
        MODEL,
    ),
    p(
        "f05",
        MODELF,
        "        embed = take(embed_name) if embed_name in names else head",
        "        embed = take(embed_name) if embed_name in names else head.clone()",
        MODEL,
    ),
    p(
        "f06",
        MODELF,
        "        tensor = tensor.to(device=device, dtype=dtype)",
        "        tensor = tensor.to(device=device)",
        MODEL,
    ),
    p(
        "f07",
        MODELF,
        "        if tuple(tensor.shape) != shapes[name]:",
        "        if tensor.numel() != torch.Size(shapes[name]).numel():",
        [*MODEL, "tests/test_config.py", "tests/test_strict_round15.py"],
    ),
    # ------------------------------------------------------------------ model.py: prefill
    p(
        "m01",
        MODELF,
        "            positions = self.positions[start : start + size][None, :].expand(B, size)",
        "            positions = self.positions[:size][None, :].expand(B, size)",
        MODEL,
    ),
    p(
        "m02",
        MODELF,
        "tokens[:, start : start + size], positions, None, past=start, logits=n == len(passes) - 1",
        "tokens[:, start : start + size], positions, None, past=n * self.chunk, logits=n == len(passes) - 1",
        MODEL,
    ),
    p(
        "m03",
        MODELF,
        "        if L > self.cache.capacity:",
        "        if L >= self.cache.capacity:",
        MODEL,
    ),
    # ------------------------------------------------------------------ model.py: forward
    p(
        "m04",
        MODELF,
        "                v=qkv[:, :, hq + hkv :],",
        "                v=qkv[:, :, hq : hq + hkv],",
        MODEL,
    ),
    p(
        "m05",
        MODELF,
        "                end = past + S\n",
        "                end = past + S - 1\n",
        MODEL,
    ),
    p(
        "m06",
        MODELF,
        "            if lengths is None and past == 0:",
        "            if lengths is None and past < self.chunk:",
        MODEL,
    ),
    p(
        "m07",
        MODELF,
        "            x = ops.linear(attn.reshape(B * S, hq * d), layer.o, layer.o_bias)",
        "            x = ops.linear(attn.reshape(B * S, hq * d), layer.o)",
        MODEL,
    ),
    p(
        "m08",
        MODELF,
        "            x = ops.linear(ops.silu_mul(gate_up), layer.down, layer.down_bias)",
        "            x = ops.linear(ops.silu_mul(gate_up), layer.down)",
        MODEL,
    ),
    p(
        "m09",
        MODELF,
        "            y, h = ops.rms_norm(x, layer.mlp_norm, cfg.rms_norm_eps, residual=h)",
        "            y, h = ops.rms_norm(x, layer.attn_norm, cfg.rms_norm_eps, residual=h)",
        MODEL,
    ),
    p(
        "m10",
        MODELF,
        "        y, h = ops.rms_norm(x, self.w.norm, cfg.rms_norm_eps, residual=h)",
        "        y, h = ops.rms_norm(x, self.w.norm, 1e-6, residual=h)",
        MODEL,
    ),
    p(
        "m11",
        MODELF,
        "        last = y.view(B, S, -1)[:, -1]  # [B, hidden]",
        "        last = y.view(B, S, -1)[:, 0]  # [B, hidden]",
        MODEL,
    ),
    p(
        "m12",
        MODELF,
        "attn = ops.attention_decode(q[:, 0], k_cache, v_cache, lengths, self.scale)",
        "attn = ops.attention_decode(q[:, 0], k_cache, v_cache, lengths - 1, self.scale)",
        MODEL,
    ),
    p(
        "m13",
        MODELF,
        "        self.scale = cfg.head_dim**-0.5",
        "        self.scale = (cfg.hidden_size // cfg.num_heads) ** -0.5",
        MODEL,
    ),
    # ------------------------------------------------------------------ plan.py: forward_calls, generation_calls
    p(
        "c01",
        PLANF,
        "        cfg, meta_weights(cfg, torch_dtype(dtype)), recording(calls), batch=batch, capacity=capacity, "
        "chunk=chunk",
        "        cfg, meta_weights(cfg, torch_dtype(dtype)), recording(calls), batch=batch, capacity=capacity",
        PLAN,
    ),
    p(
        "c02",
        PLANF,
        "        cfg, batch, 1, capacity, False, dtype, layers, chunk\n",
        "        cfg, batch, 1, prompt_len + 1, False, dtype, layers, chunk\n",
        PLAN,
    ),
    p(
        "c03",
        PLANF,
        "        cfg = dataclasses.replace(cfg, num_layers=min(cfg.num_layers, layers))",
        "        cfg = dataclasses.replace(cfg, num_layers=min(cfg.num_layers, layers), qkv_bias=False)",
        PLAN,
    ),
    # ------------------------------------------------------------------ plan.py: certified_settings
    p(
        "c04",
        PLANF,
        "    if type(pdl) is not bool or (pdl and not pdl_capable(klass)):",
        "    if pdl and not pdl_capable(klass):",
        PLAN,
    ),
    p(
        "c05",
        PLANF,
        "        if not isinstance(config, Mapping) or _typed(config) != _typed(found[call]):",
        "        if not isinstance(config, Mapping) or dict(config) != found[call]:",
        PLAN,
    ),
    p(
        "c06",
        PLANF,
        'for call in settings if _is_call(call) and call[1] == "bf16")',
        'for call in settings if _is_call(call) and call[1] == "bfloat16")',
        PLAN,
    ),
    p(
        "c07",
        PLANF,
        "        copied[call] = dict(config)",
        "        copied[call] = config  # type: ignore[assignment]",
        PLAN,
    ),
    p(
        "c08",
        PLANF,
        "    loaded = tables if tables is not None else load()\n    if not isinstance(settings, Mapping):",
        "    loaded = load()\n    if not isinstance(settings, Mapping):",
        PLAN,
    ),
    p(
        "c09",
        PLANF,
        "        ops = certified(settings, self.pdl, admit=device_of_class(self.class_id, self.tables))",
        "        ops = certified(self.settings, self.pdl, admit=device_of_class(self.class_id, self.tables))",
        PLAN,
    ),
]
