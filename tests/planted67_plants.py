"""Round 65's planted bugs, in code the last rounds landed that no planted round covered: the gate's naming of the
links and submodules git tracks under the package (gate/repository.py: ``load_repository``, ``package_links``; gate
round 66), the decode record's latent setting in ``check --shipped`` (conformance/shipped.py: ``offered_targets``;
kmut22), the table files' caps by kind (neurobrix/tables.py: ``_read_text``, ``too_large``; strictness round 62),
several sampled sequences (neurobrix/generate.py: ``_draw``; neurobrix/run.py: the note, ``sequences_settled``; text
round 53), the continued final message (neurobrix/tokenizer.py: ``render_chat``, ``_tag_final_message``,
``_cut_final_message``; text round 54), and the close-choice rule and the dtype list's two spellings
(neurobrix/cli.py: ``closest``, ``close_hint``, ``Parser.error``; conformance/__main__.py: certify's early refusal;
walk-through rounds 46 and 47). For tests/planted67_driver.py: id, file, the exact text replaced (found once in its
file), its replacement, and the existing tests a contributor would run for it (the outcome of each:
docs/planted-bugs.md, round 65)."""

from __future__ import annotations

REPOSITORY = "gate/repository.py"
SHIPPED = "conformance/shipped.py"
TABLES = "neurobrix/tables.py"
GENERATE = "neurobrix/generate.py"
RUN = "neurobrix/run.py"
TOKENIZER = "neurobrix/tokenizer.py"
CLI = "neurobrix/cli.py"
CONFORMANCE_MAIN = "conformance/__main__.py"

GATE_TESTS = ["tests/test_gate_round66.py"]
LATENT_TESTS = [
    "tests/test_kmut22.py",
    "tests/test_shipped.py::test_every_variant_of_every_class_reaches_the_interpreter",
]
# the shipped list's binding test left out (round 59 says why: any edit of tables.py unbinds the list until `track`
# runs, which a contributor does)
CAP_TESTS = [
    "tests/test_strict_round62.py",
    "tests/test_strict_round61.py",
    "tests/test_strict_round58.py",
    "--deselect",
    "tests/test_strict_round58.py::test_the_shipped_list_is_bound_to_this_code",
]
SEQUENCE_TESTS = ["tests/test_text_round53.py"]
CONTINUE_TESTS = ["tests/test_text_round54.py"]
CHOICE_TESTS = ["tests/test_walk46.py", "tests/test_walk47.py"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the gate: tracked links and submodules
    # g01: a submodule (160000) not kept among the tracked links: only symbolic links named
    p(
        "g01",
        REPOSITORY,
        "links = {p: m for p, m in modes.items() if m in (_SYMLINK, _GITLINK)}",
        "links = {p: m for p, m in modes.items() if m == _SYMLINK}",
        GATE_TESTS,
    ),
    # g02: the package's links matched by the package's name without its slash (a top-level neurobrix-notes link named)
    p(
        "g02",
        REPOSITORY,
        'return {p: names[m] for p, m in sorted(self.links.items()) if p.startswith(f"{PACKAGE}/")}',
        "return {p: names[m] for p, m in sorted(self.links.items()) if p.startswith(PACKAGE)}",
        GATE_TESTS,
    ),
    # ------------------------------------------------------------------ check --shipped: the latent setting
    # l01: the latent settings checked on the interpreter only (a GPU class's check --shipped leaves the padded merge)
    p(
        "l01",
        SHIPPED,
        '*((c, f"{LATENT}: checked in {dtype} for {OFFERED_IN}") for c in record.latent),',
        '*((c, f"{LATENT}: checked in {dtype} for {OFFERED_IN}") for c in record.latent if interpreter),',
        LATENT_TESTS,
    ),
    # ------------------------------------------------------------------ the table files' caps
    # t01: a file of exactly its kind's cap refused as it is read (the folder check takes it)
    p("t01", TABLES, "            if seen.st_size > cap:", "            if seen.st_size >= cap:", CAP_TESTS),
    # t02: too_large's record cap for a file of no name dropped (``_cap_kind("")`` asked instead)
    p(
        "t02",
        TABLES,
        'cap, words, kind, shipped = _CAPS[_cap_kind(name) if name else "record"]',
        "cap, words, kind, shipped = _CAPS[_cap_kind(name)]",
        CAP_TESTS,
    ),
    # t03: a file grown past its cap after its size was taken read as it is
    p("t03", TABLES, "        if len(data) > cap:  # (grown", "        if len(data) > cap + 1:  # (grown", CAP_TESTS),
    # ------------------------------------------------------------------ several sampled sequences
    # n01: the first rows of the repeated draw kept, not each prompt's first row (a batch of prompts)
    p(
        "n01",
        GENERATE,
        "return torch.multinomial(drawn, 1, generator=generator)[::rows, 0]",
        "return torch.multinomial(drawn, 1, generator=generator)[: probs.shape[0], 0]",
        SEQUENCE_TESTS,
    ),
    # n02: the rows tiled (prompt 0, 1, 0, 1) rather than each repeated in place (0, 0, 1, 1) as generate expands them
    p(
        "n02",
        GENERATE,
        "drawn = probs if rows == 1 else probs.repeat_interleave(rows, dim=0)",
        "drawn = probs if rows == 1 else probs.repeat(rows, 1)",
        SEQUENCE_TESTS,
    ),
    # n03: a count of 1 taken as several (the note printed for a file that sets none)
    p("n03", RUN, "        if sequences > 1:\n", "        if sequences >= 1:\n", SEQUENCE_TESTS),
    # n04: a pad id equal to the vocabulary's size taken as inside the embeddings
    p(
        "n04",
        RUN,
        "if pad is None or not 0 <= pad < cfg.vocab_size:",
        "if pad is None or not 0 <= pad <= cfg.vocab_size:",
        SEQUENCE_TESTS,
    ),
    # ------------------------------------------------------------------ the continued final message
    # c01: the chat cut at the first tag, not the last (a template printing the continued field twice)
    p(
        "c01",
        TOKENIZER,
        "at = rendered.rindex(CONTINUE_TAG.strip())",
        "at = rendered.index(CONTINUE_TAG.strip())",
        CONTINUE_TESTS,
    ),
    # c02: only the tag looked for in the rendered chat, not the message's text
    p(
        "c02",
        TOKENIZER,
        "if final.strip() not in rendered or CONTINUE_TAG.strip() not in rendered:",
        "if CONTINUE_TAG.strip() not in rendered:",
        CONTINUE_TESTS,
    ),
    # c03: the template asked for the named field only, not for any name the reasoning is copied under
    p(
        "c03",
        TOKENIZER,
        "if not any(name in source for name in fields):",
        "if field not in source:",
        CONTINUE_TESTS,
    ),
    # c04: a part continued only where its type is "text" (transformers takes any part holding "text")
    p(
        "c04",
        TOKENIZER,
        'if "text" in block:  # the last part holding text',
        'if block.get("type") == "text":  # the last part holding text',
        CONTINUE_TESTS,
    ),
    # ------------------------------------------------------------------ the close-choice rule, the dtype spellings
    # w01: another command line's word matched as typed (``Float16``, ``HALF`` not named)
    p(
        "w01",
        CLI,
        "alias = {**DTYPE_WORDS, **COMMAND_WORDS}.get(word.lower())",
        "alias = {**DTYPE_WORDS, **COMMAND_WORDS}.get(word)",
        CHOICE_TESTS,
    ),
    # w02: an alias named where it is none of the choices (``--profile chat``: 'run')
    p(
        "w02",
        CLI,
        "    if alias in choices:\n        return alias",
        "    if alias:\n        return alias",
        CHOICE_TESTS,
    ),
    # w03: the words named beside their choice only where several are close (two words, one close: "fp16" alone)
    p(
        "w03",
        CLI,
        'named = [f"{m} for {w}" if len(words) > 1 else m for w, m in meant if m is not None]',
        'named = [f"{m} for {w}" if len([n for n in meant if n[1]]) > 1 else m for w, m in meant if m is not None]',
        CHOICE_TESTS,
    ),
    # w04: certify's early refusal taken where any dtype is plain (a torch name beside fp16 met the class check first)
    p(
        "w04",
        CONFORMANCE_MAIN,
        'plain = all(d in ("fp32", "fp16", "bf16") for d in args.dtypes)',
        'plain = any(d in ("fp32", "fp16", "bf16") for d in args.dtypes)',
        CHOICE_TESTS,
    ),
    # w05: the missing option's explanation looked up by argparse's joined names ("--dtypes/--dtype": none said)
    p(
        "w05",
        CLI,
        'named = [o.split("/") for o in message.split(": ", 1)[1].split(", ")]',
        'named = [[o] for o in message.split(": ", 1)[1].split(", ")]',
        CHOICE_TESTS,
    ),
]
