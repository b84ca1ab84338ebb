"""Round 56's planted bugs, in what landed with rounds kmut17 and text 46: the launch lint's allowances and their
bounds (conformance/offsets.py: ``Allow``, ``bounds``, ``bound_problems``; the lint's reading of ``tl.where``,
tuples, helpers' returns and shifts; certify.plan's call to ``bound_problems``), the hub's exact patterns
(``hub.exactly``) and the tokenizer's parse of tokenizer.json (``parse_tokenizer_file``, ``_prefix_cut``, the BPE
dropout refusal). For tests/planted58_driver.py: id, file, the exact text replaced, its replacement, and the
existing tests a contributor would run for it (the outcome of each: tests/test_planted58.py's docstring)."""

from __future__ import annotations

OFFSETS = "conformance/offsets.py"
CERTIFY = "conformance/certify.py"
HUB = "neurobrix/hub.py"
TOKENIZER = "neurobrix/tokenizer.py"
LINT = ["tests/test_kmut17.py", "tests/test_kmut16.py"]
TEXT = ["tests/test_text_round46.py", "tests/test_tokenizer.py"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the bounds (offsets.bounds)
    # b01: a domain without a top counted at its low end, not as 2^31
    p("b01", OFFSETS, "LIMIT if hi is None else hi for dim", "lo if hi is None else hi for dim", LINT),
    # b02: decode's split start without the launcher's rounding of a chunk up to whole blocks
    p(
        "b02",
        OFFSETS,
        'splits * _cdiv(_cdiv(tops["S"], splits), block) * block)',
        'splits * _cdiv(tops["S"], splits))',
        LINT,
    ),
    # ------------------------------------------------------------------ bound_problems and certify's call
    # p01: an allowance refused past 2^31 rather than at it
    p("p01", OFFSETS, "elif known and max(known) >= LIMIT:", "elif known and max(known) > LIMIT:", LINT),
    # p02: an allowance of several bounds held to its first alone
    p(
        "p02",
        OFFSETS,
        "known = [largest[b] for b in allow.bound if b in largest]",
        "known = [largest[b] for b in allow.bound[:1] if b in largest]",
        LINT,
    ),
    # c01: certify's plan bounds the catalogue's models, not the model a --config names
    p(
        "c01",
        CERTIFY,
        "    chosen = configs.values() if configs else [cfg",
        "    chosen = [cfg",
        LINT,
    ),
    # ------------------------------------------------------------------ the lint's reading
    # l01: an address through tl.where: the second branch's pointer not followed (named _ptr or not)
    p("l01", OFFSETS, "base(address.args[1]), base(address.args[2])", "base(address.args[1])", LINT),
    # l02: an offset through tl.where: the second branch not scanned
    p(
        "l02",
        OFFSETS,
        "                self._scan(fn, node.args[1], work, seen, found)\n"
        "                self._scan(fn, node.args[2], work, seen, found)\n",
        "                self._scan(fn, node.args[1], work, seen, found)\n",
        LINT,
    ),
    # l03: a tuple's negative index left unresolved (the whole tuple's kind: a pointer among its elements)
    p(
        "l03",
        OFFSETS,
        "if not -len(found) <= index.value < len(found):",
        "if not 0 <= index.value < len(found):",
        LINT,
    ),
    # l04: a helper's kind read from its first return alone
    p(
        "l04",
        OFFSETS,
        "return self._join_all(self.kind(helper, r) for r in self.returns[helper])",
        "return self.kind(helper, self.returns[helper][0])",
        LINT,
    ),
    # l05: the offsets a helper returns: only its first return scanned
    p(
        "l05",
        OFFSETS,
        "work += [(node.func.id, r) for r in self.returns[node.func.id]]",
        "work += [(node.func.id, r) for r in self.returns[node.func.id][:1]]",
        LINT,
    ),
    # l06: a literal factor of exactly 2^SCALE not read as a stride
    p(
        "l06",
        OFFSETS,
        "isinstance(node.value, int) and node.value >= 1 << SCALE:",
        "isinstance(node.value, int) and node.value > 1 << SCALE:",
        LINT,
    ),
    # l07: a shift's amount scanned as the stand-in product 1 << amount, not the amount itself
    p(
        "l07",
        OFFSETS,
        'self._scan(fn, getattr(o, "amount_of", o), work, seen, found)',
        "self._scan(fn, o, work, seen, found)",
        LINT,
    ),
    # ------------------------------------------------------------------ hub.exactly
    # h01: "[" not escaped (a shard w[1].safetensors asks for w1.safetensors)
    p("h01", HUB, 're.sub(r"([*?[])", r"[\\1]", name)', 're.sub(r"([*?])", r"[\\1]", name)', TEXT[:1]),
    # h02: "]" escaped too
    p("h02", HUB, 're.sub(r"([*?[])", r"[\\1]", name)', 're.sub(r"([*?[\\]])", r"[\\1]", name)', TEXT[:1]),
    # ------------------------------------------------------------------ the tokenizer
    # t01: a dropout of 1 refused (it skips every merge, alike at each call)
    p("t01", TOKENIZER, "p is not None and 0.0 < p < 1.0 else", "p is not None and 0.0 < p <= 1.0 else", TEXT),
    # t02: a dropout of 0 refused (it skips none)
    p("t02", TOKENIZER, "p is not None and 0.0 < p < 1.0 else", "p is not None and 0.0 <= p < 1.0 else", TEXT),
    # t03: a second piece exactly the prefix's length refused (the library cuts it to nothing, and builds the model)
    p("t03", TOKENIZER, "if len(piece) < cut or (len(piece) > cut", "if len(piece) <= cut or (len(piece) > cut", TEXT),
    # t04: the prefix's length in characters, not bytes
    p(
        "t04",
        TOKENIZER,
        'cut = len(prefix.encode("utf-8", "surrogatepass")) if isinstance(prefix, str) else 0',
        "cut = len(prefix) if isinstance(prefix, str) else 0",
        TEXT,
    ),
    # t05: the prefix's key looked for as json.dumps spaces it (a compact file skips the check)
    p(
        "t05",
        TOKENIZER,
        '_PREFIX = re.compile(r\'"continuing_subword_prefix"\\s*:\\s*"\')',
        '_PREFIX = re.compile(r\'"continuing_subword_prefix": "\')',
        TEXT,
    ),
    # t06: the parse without the model's options for the classes the tests name (Llama, Qwen2), not all four
    p(
        "t06",
        TOKENIZER,
        "    if rebuilt_by is not None:\n        data = load_json(_read_text(path))",
        '    if rebuilt_by in ("LlamaTokenizer", "Qwen2Tokenizer"):\n        data = load_json(_read_text(path))',
        TEXT,
    ),
]
