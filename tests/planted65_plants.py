"""Round 63's planted bugs, in code no earlier round planted: the binding of an installed wheel's records to this
process's verifying code (neurobrix/tables.py: ``_release_bound``, its line, its use in ``_load``), the store's
early answer for a name (neurobrix/store.py: ``unresolved``), sampling's epsilon, eta, typical and top_h warpers
(neurobrix/generate.py: ``_draw``, ``_top_h``), the prefill graphs' bookkeeping (neurobrix/generate.py:
``PrefillGraphs.capture``: the lengths held, the least recently used dropped, a chunked length left eager) and the
chat template's path (neurobrix/tokenizer.py: ``render_chat``, ``encode_chat``, ``encode_prompt``). For
tests/planted65_driver.py: id, file, the exact text replaced (found once in its file, one line), its replacement,
and the existing tests a contributor would run for it (the outcome of each: docs/planted-bugs.md, round 63)."""

from __future__ import annotations

TABLES = "neurobrix/tables.py"
STORE = "neurobrix/store.py"
GENERATE = "neurobrix/generate.py"
TOKENIZER = "neurobrix/tokenizer.py"

# the shipped list's binding test left out (round 59 says why: any edit of tables.py unbinds the list until `track`
# runs, which a contributor does)
RULES_TESTS = [
    "tests/test_strict_round58.py",
    "tests/test_strict_round59.py",
    "--deselect",
    "tests/test_strict_round58.py::test_the_shipped_list_is_bound_to_this_code",
]
STORE_TESTS = ["tests/test_walk42.py", "tests/test_planted64.py"]
SAMPLING_TESTS = [
    "tests/test_text_round10.py",
    "tests/test_planted18.py",
    "tests/test_planted21.py",
    "tests/test_strict_round52.py",
]
GRAPH_TESTS = ["tests/test_gpu_only.py", "tests/test_generate.py"]
CHAT_TESTS = [
    "tests/test_tokenizer.py",
    "tests/test_text_round34.py",
    "tests/test_planted35.py",
    "tests/test_planted34.py",
]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ tables._release_bound
    # b01: the line looked for at the file's start only (re.MULTILINE dropped: a wheel's list never bound)
    p(
        "b01",
        TABLES,
        '_RULES_LINE = re.compile(r"^verified_rules: ([0-9a-f]{64})$", re.MULTILINE)',
        '_RULES_LINE = re.compile(r"^verified_rules: ([0-9a-f]{64})$")',
        RULES_TESTS,
    ),
    # b02: any digest taken for this code's (a list verified by other code or another YAML reader honoured)
    p(
        "b02",
        TABLES,
        "return own is not None and found is not None and found.group(1) == own",
        "return own is not None and found is not None",
        RULES_TESTS,
    ),
    # b03: the line found anywhere in a line (`# verified_rules: ...` in a comment, a key nested under another)
    p(
        "b03",
        TABLES,
        '_RULES_LINE = re.compile(r"^verified_rules: ([0-9a-f]{64})$", re.MULTILINE)',
        '_RULES_LINE = re.compile(r"verified_rules: ([0-9a-f]{64})$", re.MULTILINE)',
        RULES_TESTS,
    ),
    # b04: the binding asked of any folder, not only of a wheel's (a checkout's tables read by their list)
    p(
        "b04",
        TABLES,
        "release = release and _release_bound(root)",
        "release = _release_bound(root)",
        RULES_TESTS,
    ),
    # ------------------------------------------------------------------ store.unresolved
    # u01: a hub id in another case not found (the store's case-insensitive match left to resolve)
    p("u01", STORE, "return _find(name)[1] is None", "return _model_dir(normalize(name)) is None", STORE_TESTS),
    # u02: a blank name sent to the store's lookup (a name of spaces read as the store's own folder)
    p(
        "u02",
        STORE,
        "if not isinstance(name, str) or not name.strip():",
        "if not isinstance(name, str) or not name:",
        STORE_TESTS,
    ),
    # u03: the two refusals joined by `and` (no string is then blank: "" sent to the lookup, None its AttributeError)
    p(
        "u03",
        STORE,
        "if not isinstance(name, str) or not name.strip():",
        "if not isinstance(name, str) and not name.strip():",
        STORE_TESTS,
    ),
    # ------------------------------------------------------------------ sampling's warpers
    # s01: eta's floor the larger of epsilon and its entropy term (transformers' EtaLogitsWarper takes the smaller)
    p(
        "s01",
        GENERATE,
        "floor = torch.min(epsilon, torch.sqrt(epsilon) * torch.exp(-entropy))[..., None]",
        "floor = torch.max(epsilon, torch.sqrt(epsilon) * torch.exp(-entropy))[..., None]",
        SAMPLING_TESTS,
    ),
    # s02: epsilon and eta dropping the top token too where it lies under the floor (every token dropped: NaN)
    p(
        "s02",
        GENERATE,
        "drop = (probs < floor) & (scores < torch.topk(scores, 1)[0][..., -1, None])",
        "drop = probs < floor",
        SAMPLING_TESTS,
    ),
    # s03: typical_p's most typical token not kept (its own mass over typical_p drops every token)
    p("s03", GENERATE, "drop[..., :1] = False", "drop[..., :0] = False", SAMPLING_TESTS),
    # s04: typical_p's cut counted with <= (a token whose cumulated mass is exactly typical_p kept one further)
    p(
        "s04",
        GENERATE,
        "last = (cumulative < opts.typical_p).sum(dim=1).clamp_(max=shifted.shape[-1] - 1)",
        "last = (cumulative <= opts.typical_p).sum(dim=1).clamp_(max=shifted.shape[-1] - 1)",
        SAMPLING_TESTS,
    ),
    # s05: top_h's tokens kept while their entropy stays strictly under the bound (one at the bound dropped)
    p(
        "s05",
        GENERATE,
        "keep = torch.cumsum(-probs * torch.log(probs), dim=-1) <= tau",
        "keep = torch.cumsum(-probs * torch.log(probs), dim=-1) < tau",
        SAMPLING_TESTS,
    ),
    # ------------------------------------------------------------------ PrefillGraphs' bookkeeping
    # g01: KEEP + 1 lengths held (each graph keeps its activations' memory)
    p(
        "g01",
        GENERATE,
        "while len(self.graphs) >= self.KEEP:",
        "while len(self.graphs) > self.KEEP:",
        GRAPH_TESTS,
    ),
    # g02: a length captured again not made the most recently used (the one in use dropped next)
    p(
        "g02",
        GENERATE,
        "self.graphs[length] = self.graphs.pop(length)  # most recently used last",
        "self.graphs[length] = self.graphs[length]  # most recently used last",
        GRAPH_TESTS,
    ),
    # g03: the most recently captured dropped when full, not the least recently used
    p(
        "g03",
        GENERATE,
        "del self.graphs[next(iter(self.graphs))]",
        "del self.graphs[next(reversed(self.graphs))]",
        GRAPH_TESTS,
    ),
    # g04: a prompt of exactly the chunk's length left eager (one pass, which the graph holds)
    p("g04", GENERATE, "if length > self.model.chunk:", "if length >= self.model.chunk:", GRAPH_TESTS),
    # ------------------------------------------------------------------ the chat template's path
    # c01: the tool_use template picked for a plain chat (no tools given) where the model names one
    p(
        "c01",
        TOKENIZER,
        'name = "tool_use" if tools is not None and "tool_use" in self.chat_templates else "default"',
        'name = "tool_use" if "tool_use" in self.chat_templates else "default"',
        CHAT_TESTS,
    ),
    # c02: a template's error kept on the lines it spans (the refusal is one line)
    p(
        "c02",
        TOKENIZER,
        'said = " / ".join(line.strip() for line in str(exc).splitlines() if line.strip())',
        "said = str(exc).strip()",
        CHAT_TESTS,
    ),
    # c03: an empty --system dropped (apply_chat_template places an empty system message)
    p("c03", TOKENIZER, "            if system is None:", "            if not system:", CHAT_TESTS),
    # c04: a rendered lone surrogate let through to the tokenizer (transformers' encode fails on it)
    p(
        "c04",
        TOKENIZER,
        '            text.encode("utf-8")',
        '            text.encode("utf-8", "surrogatepass")',
        CHAT_TESTS,
    ),
]
