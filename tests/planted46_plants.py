"""Round 46's planted bugs, in this session's new code on main and what round 45 left with no plant:
neurobrix/tiny.py (`neurobrix tiny-model`: its config, weights, tokenizer, chat template, the refusal of a folder
that holds anything), conformance/check.py's ``arrival_problems`` (the source lint of arrival counters),
neurobrix/store.py and cli_store.py's NEWER FORMAT marking of a model a newer NeuroBrix imported (list,
list --json, remove), neurobrix/ops/__init__.py's ``certified`` and ``recording``, neurobrix/ops/spec.py and
neurobrix/dtypes.py. For tests/planted46_driver.py: id, file, the exact text replaced, its replacement, and the
existing tests a contributor would run for it (the outcome of each: tests/test_planted46.py's docstring)."""

from __future__ import annotations

TINY = ["tests/test_walk38.py", "-k", "not installed"]
STORE = ["tests/test_lead38.py", "tests/test_store.py", "-k", "list or remove or newer or damaged or format"]
ARRIVAL = ["tests/test_kmut14.py", "-k", "arrival"]
OPS = ["tests/test_strict_round24.py", "tests/test_tables.py", "tests/test_planted45.py"]
DTYPES = ["tests/test_tables.py", "tests/test_memory.py", "tests/test_loading_planted.py", "tests/test_planted45.py"]
TINYF, STOREF, CLIF, CHECKF = (
    "neurobrix/tiny.py",
    "neurobrix/store.py",
    "neurobrix/cli_store.py",
    "conformance/check.py",
)
OPSF, SPECF, DTYPEF = "neurobrix/ops/__init__.py", "neurobrix/ops/spec.py", "neurobrix/dtypes.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ tiny.py
    p(
        "y01",
        TINYF,
        "    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):",
        "    if folder.is_dir() and any(folder.iterdir()):",
        TINY,
    ),
    p(
        "y02",
        TINYF,
        'torch.ones(shape) if "norm" in name else',
        'torch.ones(shape) if "layernorm" in name else',
        TINY,
    ),
    p("y03", TINYF, '"head_dim": SIZES["hidden_size"] // heads,', '"head_dim": SIZES["hidden_size"] // 2,', TINY),
    p("y04", TINYF, '"rms_norm_eps": 1e-06,', '"rms_norm_eps": 1e-05,', TINY),
    p(
        "y05",
        TINYF,
        '{"bos_token_id": bos, "eos_token_id": eos, "use_cache": True}',
        '{"bos_token_id": bos, "eos_token_id": bos, "use_cache": True}',
        TINY,
    ),
    p("y06", TINYF, "torch.randn(shape, generator=draw) * 0.2", "torch.randn(shape, generator=draw) * 0.002", TINY),
    p(
        "y07",
        TINYF,
        """{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}""",
        """{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}""",
        TINY,
    ),
    p("y08", TINYF, 'single="<s> $A"', 'single="$A"', TINY),
    p(
        "y09",
        TINYF,
        "    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)",
        "    tok.pre_tokenizer = pre_tokenizers.Whitespace()",
        TINY,
    ),
    p("y10", TINYF, "    tok.decoder = decoders.ByteLevel()\n", "", TINY),
    p("y11", TINYF, "    num_attention_heads=4,", "    num_attention_heads=8,", TINY),
    # ------------------------------------------------------------------ store.py / cli_store.py: NEWER FORMAT
    p(
        "n01",
        CLIF,
        '("  NEWER FORMAT" if m.newer else "  DAMAGED" if m.damaged else "")',
        '("  DAMAGED" if m.damaged else "  NEWER FORMAT" if m.newer else "")',
        STORE,
    ),
    p("n02", STOREF, "        newer=isinstance(problem, NewerManifestError),", "        newer=False,", STORE),
    p(
        "n03",
        STOREF,
        "        if type(found) is int and found > MANIFEST_FORMAT:",
        "        if found == MANIFEST_FORMAT + 1:",
        STORE,
    ),
    p(
        "n04",
        STOREF,
        "        if type(found) is int and found > MANIFEST_FORMAT:",
        "        if type(found) is int and found >= MANIFEST_FORMAT:",
        STORE,
    ),
    p(
        "n05",
        CLIF,
        '        "damaged": model.damaged,',
        '        "damaged": None if model.newer else model.damaged,',
        STORE,
    ),
    p("n06", CLIF, "        if model.newer\n", "        if model.newer and not model.damaged\n", STORE),
    p(
        "n07",
        STOREF,
        'model = StoredModel(key, path, "unknown", None, (), 0, damaged=str(exc), newer=True)',
        'model = StoredModel(key, path, "unknown", None, (), 0, damaged=str(exc))',
        STORE,
    ),
    p("n08", CLIF, "        if m.damaged:\n", "        if m.damaged and not m.newer:\n", STORE),
    # ------------------------------------------------------------------ check.py: arrival_problems
    p(
        "a01",
        CHECKF,
        'if i == 0 or ast.unparse(block[i - 1]) != "tl.debug_barrier()":',
        'if i > 0 and ast.unparse(block[i - 1]) != "tl.debug_barrier()":',
        ARRIVAL,
    ),
    p(
        "a02",
        CHECKF,
        'if i == 0 or ast.unparse(block[i - 1]) != "tl.debug_barrier()":',
        'if "tl.debug_barrier()" not in [ast.unparse(s) for s in block[:i]]:',
        ARRIVAL,
    ),
    p(
        "a03",
        CHECKF,
        '                if hasattr(stmt, "body"):\n                    continue  # a compound',
        "                if isinstance(stmt, ast.If):\n                    continue  # a compound",
        ARRIVAL,
    ),
    p(
        "a04",
        CHECKF,
        '                    if ast.unparse(call.func) != "tl.atomic_add":',
        '                    if ast.unparse(call.func) != "tl.atomic_add" or not call.keywords:',
        ARRIVAL,
    ),
    # ------------------------------------------------------------------ ops/__init__.py: certified, recording
    p(
        "o01",
        OPSF,
        "                if device not in admitted:\n"
        "                    admit(device)\n                    admitted.add(device)",
        "                if device not in admitted:\n"
        "                    admitted.add(device)\n                    admit(device)",
        OPS,
    ),
    p(
        "o02",
        OPSF,
        "            config = settings.get((name, dtype, key))",
        "            config = next((c for (n, _, k), c in settings.items() if n == name and k == key), None)",
        OPS,
    ),
    p("o03", OPSF, 'own = {"counters": counters} if spec.counters else {}', "own: dict[str, Any] = {}", OPS),
    p(
        "o04",
        OPSF,
        "    counters: dict[Any, Any] = {}  # device -> this plan's counters",
        '    counters: dict[Any, Any] = certified.__dict__.setdefault("counters", {})',
        OPS,
    ),
    p(
        "o05",
        OPSF,
        "            calls.add((spec.name, dtype, tuple(key)))",
        "            calls.add((spec.name, dtype, tuple(key)[:1]))",
        OPS,
    ),
    p(
        "o06",
        OPSF,
        "            device = next((a.device for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)",
        "            device = next((a.device for a in args[1:] if isinstance(a, torch.Tensor)), None)",
        OPS,
    ),
    # ------------------------------------------------------------------ ops/spec.py
    p(
        "s01",
        SPECF,
        'required, optional = self.params.get(config.get("variant") if self.variants else None, ((), ()))',
        'required, optional = self.params.get(config.get("variant"), self.params.get(None, ((), ())))',
        OPS,
    ),
    p(
        "s02",
        SPECF,
        "missing = [name for name in required if name not in config]",
        "missing = [name for name in required if name not in config and name not in optional]",
        OPS,
    ),
    p(
        "s03",
        SPECF,
        "if isinstance(value, float)]",
        "if isinstance(value, float) and name not in LAUNCH_OPTIONS]",
        OPS,
    ),
    p(
        "s04",
        SPECF,
        "        return dict(zip(self.key, self.buckets))",
        "        return dict(zip(self.key, self.buckets[::-1]))",
        OPS,
    ),
    # ------------------------------------------------------------------ dtypes.py
    p(
        "d01",
        DTYPEF,
        "    found: torch.dtype = getattr(torch, _TORCH_NAMES[name])",
        '    found: torch.dtype = getattr(torch, _TORCH_NAMES.get(name, "float32"))',
        DTYPES,
    ),
    p(
        "d02",
        DTYPEF,
        "if torch_name == text), None)",
        'if torch_name == text.replace("64", "32")), None)',
        DTYPES,
    ),
]
