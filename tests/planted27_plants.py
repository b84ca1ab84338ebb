"""Round 27's planted bugs, in the code of strict round 31 (`_record_layout`, the fast path's layout check, and
`neurobrix.errors.printable` where it is applied), text round 28 (stop strings transformers' generate refuses, tokens
spelt from the vocabulary), kernel-mutant round 4 (`bounds.attention_one_key`, the one-key pairs of the attention
judges, `reference.rope_frequencies`' rotary_dim, `check.switch_problems`) and gate round 31 (`gate/layout.py`'s
.dist-info message), for tests/planted27_driver.py: id, file, the exact text replaced, its replacement, and the
existing tests that exercise it (the outcome of each: tests/test_planted27.py's docstring)."""

from __future__ import annotations

TB = [
    "tests/test_strict_round31.py",
    "tests/test_strict_round30.py",
    "tests/test_strict_round29.py",
    "tests/test_tables.py",
    "tests/test_planted25.py",
]
PR = [
    "tests/test_strict_round31.py",
    "tests/test_cli.py",
    "tests/test_store.py",
    "-k",
    "round31 or printable or list or doctor or import or error or terminal or utf8 or folder",
]
TX = [
    "tests/test_text_round28.py",
    "tests/test_text_round9.py",
    "tests/test_text_round14.py",
    "tests/test_planted18.py",
    "tests/test_planted22.py",
]
KM = ["tests/test_kmut4.py"]
RF = ["tests/test_kmut4.py", "tests/test_reference.py", "tests/test_text_yarn.py"]
GL = ["tests/test_gate_round31.py", "tests/test_gate_units.py"]

TBL, ERR, CLI, STORE, DOC = (
    "neurobrix/tables.py",
    "neurobrix/errors.py",
    "neurobrix/cli_store.py",
    "neurobrix/store.py",
    "neurobrix/doctor.py",
)
TOK, BND, CHK, REF, ATT, ROT, LAY = (
    "neurobrix/tokenizer.py",
    "conformance/bounds.py",
    "conformance/check.py",
    "conformance/reference.py",
    "conformance/specs/attention.py",
    "conformance/specs/rotary.py",
    "gate/layout.py",
)
UNPRINTABLE = (  # noqa: E501 (the anchor, as errors.py spells it)
    '"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff]"'
)


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


def u(id: str, old: str, new: str) -> dict:
    """A plant in printable's character class."""
    assert old in UNPRINTABLE
    return p(id, ERR, UNPRINTABLE, UNPRINTABLE.replace(old, new, 1), PR)


PLANTS = [
    # ------------------------------------------------------------------ neurobrix/tables.py: _record_layout
    p("a01", TBL, 'if not text.isascii() or "\\r" in text', 'if "\\r" in text', TB),
    p("a03", TBL, ' or not text.endswith("\\n"):\n        return None', ":\n        return None", TB),
    p("a04", TBL, 'r"^entries:[ \\t]*$"', 'r"^entries:\\s*$"', TB),
    p("a05", TBL, ' or not text.startswith("\\n- domain:\\n", entries.end()):', ":", TB),
    p("a06", TBL, "    if _DOCUMENT_MARK.search(header) is not None:\n        return None\n", "", TB),
    p(
        "a09",
        TBL,
        'set(head) != {"format", "kernel", "class", "provenance"}',
        'not {"format", "kernel", "class", "provenance"} <= set(head)',
        TB,
    ),
    p("a10", TBL, 'type(head["format"]) is not int or head["format"]', 'head["format"]', TB),
    p(
        "a11",
        TBL,
        'if type(head["format"]) is not int or head["format"] != PROOFS_FORMAT:',
        'if type(head["format"]) is not int:',
        TB,
    ),
    p("a12", TBL, '(kernel is not None and head["kernel"] != kernel) or ', "", TB),
    p("a13", TBL, ' or (class_id is not None and head["class"] != class_id)', "", TB),
    p("a14", TBL, ' or not isinstance(provenance.get("device"), dict)', "", TB),
    p(
        "a15",
        TBL,
        '("torch", "triton", "neurobrix", "git_commit", "date", "command")',
        '("torch", "triton", "date")',
        TB,
    ),
    p("a16", TBL, " and provenance[name].strip() for name", " for name", TB),
    p(
        "a19",
        TBL,
        "found[0:-1:2] != [_ENTRY_START] * (len(found) // 2)",
        "found[0] != _ENTRY_START",
        TB,
    ),
    p("a21", TBL, "(?:(?<=\\n  proof:\\n)    entry: ", "(?:    entry: ", TB),
    p("a22", TBL, "([0-9a-f]{16})\\1(?=\\n)|", "([0-9a-f]{16})\\1|", TB),
    p("a23", TBL, "(- domain:(?=\\n))", "(- domain:)", TB),
    p("a24", TBL, 'r"\\n(?!  (?!  entry: ))', 'r"\\n(?!  )', TB),
    p("a25", TBL, "entry: ('?)([0-9a-f]{16})\\1(?=", "entry: ('?)([0-9a-f]{16})'?(?=", TB),
    p("a28", TBL, "layout = _record_layout(text, class_id, kernel)", "layout = _record_layout(text, None, None)", TB),
    # ------------------------------------------------------------------ printable and where it is applied
    u("e01", "\\x00-\\x08", "\\x01-\\x08"),
    u("e02", "\\x0a-\\x1f", "\\x0b-\\x1f"),
    u("e03", "\\x7f-\\x9f", "\\x80-\\x9f"),
    u("e06", "\\u2066-\\u2069", "\\u2066-\\u2068"),
    u("e08", "\\u200e\\u200f", ""),
    u("e09", "\\ud800-\\udfff", ""),
    p(
        "e11",
        ERR,
        'found.group().encode("unicode_escape").decode("ascii")',
        'found.group().encode("ascii", "backslashreplace").decode("ascii")',
        PR,
    ),
    p(
        "e12",
        "neurobrix/cli.py",
        'shown = "\\n".join(printable(line) for line in lines) if lines else printable(message)',
        'shown = "\\n".join(printable(line) for line in lines) if lines else message',
        PR,
    ),
    p("e13", CLI, "{printable(m.source)}", "{m.source}", PR),
    p(
        "e14",
        CLI,
        'revision = printable((m.commit or "")[:12] or m.revision or "-")',
        'revision = (m.commit or "")[:12] or m.revision or "-"',
        PR,
    ),
    p("e17", CLI, "width = max(map(len, names))", "width = max(len(m.name) for m in models)", PR),
    p("e18", DOC, 'printable(line) for line in f.value.split("\\n")', 'line for line in f.value.split("\\n")', PR),
    p("e20", STORE, 'decode("utf-8", "backslashreplace")', 'decode("utf-8", "replace")', PR),
    p(
        "e21",
        STORE,
        '            name_text(str(folder)).encode("utf-8")\n',
        '            name_text(folder.name).encode("utf-8")\n',
        PR,
    ),
    p("e22", STORE, "        if printable(name) != name:", "        if False:", PR),
    # ------------------------------------------------------------------ neurobrix/tokenizer.py: stop strings
    p("s01", TOK, "        return len(token) > 1\n", "        return len(token) > 0\n", TX),
    p("s02", TOK, "overlap = min(at + 1, len(string))", "overlap = min(at, len(string))", TX),
    p("s03", TOK, "        at = token.find(string[-1:], at + 1)\n", "        break\n", TX),
    p(
        "s04",
        TOK,
        "if token[at + 1 - overlap : at + 1] == string[-overlap:]",
        "if token[at - overlap : at] == string[-overlap:]",
        TX,
    ),
    p("s06", TOK, "for s in wanted for t in spellings", "for s in self.strings for t in spellings", TX),
    p(
        "s07",
        TOK,
        "self._tokens = {i: t for t, i in tok.get_vocab(with_added_tokens=True)",
        "self._tokens = {i: t for t, i in tok.get_vocab(with_added_tokens=False)",
        TX,
    ),
    p("s08", TOK, "token = self._tokens.get(token_id)", "token = self._tok.id_to_token(token_id)", TX),
    p(
        "s09",
        TOK,
        """                if at < 0:
                    raise TokenizerError(""",
        """                if at < 0 and False:
                    raise TokenizerError(""",
        TX,
    ),
    p("s10", TOK, 'raise TokenizerError(f"{self.generation_path}: {exc}") from None', "raise", TX),
    # ------------------------------------------------------------------ conformance: kmut4's judges
    p("k01", BND, "roundings = 2 * rescalings + 3", "roundings = rescalings + 3", KM),
    p("k03", ATT, "    if C == S:  # the first query", "    if C == S == 1:  # the first query", KM),
    p(
        "k04",
        ATT,
        'blocks = -(-min(int(config["BLOCK_M"]), S) // block)',
        'blocks = min(int(config["BLOCK_M"]), S) // block',
        KM,
    ),
    p("k05", ATT, 'first = a["v"][:, :1].double()', 'first = a["v"][:, -1:].double()', KM),
    p("k06", ATT, "pairs.append((outputs[0][:, :1], first", "pairs.append((outputs[0][:, 1:2], first", KM),
    p("k07", ATT, 'alone = (a["lengths"] == 1)', 'alone = (a["lengths"] == 2)', KM),
    p(
        "k08",
        ATT,
        'bounds.attention_one_key(first, a["q"].dtype, 1)',
        'bounds.attention_one_key(first, a["q"].dtype, 0)',
        KM,
    ),
    p(
        "k10",
        REF,
        "    if dim not in (head_dim - 1, head_dim):\n        raise",
        "    if dim > head_dim:\n        raise",
        RF,
    ),
    p("k11", REF, "theta ** (2 * i / dim)", "theta ** (2 * i / head_dim)", RF),
    p("k13", CHK, "    for pdl in (False, True):\n", "    for pdl in (True,):\n", KM),
    p("k14", CHK, ' or "PDL" in meta:', ":", KM),
    p("k16", CHK, "            return switch_problems()\n", "            return ()\n", KM),
    # ------------------------------------------------------------------ gate/layout.py
    p("g01", LAY, "== dist_info and member != shown.path:", "== dist_info:", GL),
    p("g02", LAY, "refused, repo.declared.dist_info),", 'refused, ""),', GL),
    p(
        "g03",
        LAY,
        '    elif shown.scheme in ("purelib", "platlib") and shown.path.split("/", 1)[0] not in',
        '    if shown.scheme in ("purelib", "platlib") and shown.path.split("/", 1)[0] not in',
        GL,
    ),
]

# plants whose code is gone since (walk-through 32's follow-up: the fast path compares the lists of digests,
# `carried == own`, where None, a record in another layout, is never equal: there is no guard to remove)
RETIRED = {
    "a27": "no `carried is not None` guard before `len(carried)`: `carried == own` is False for None, nothing crashes",
}
