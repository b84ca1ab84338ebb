"""Round 44's planted bugs, where a count of plants per 100 lines over every tests/planted*_plants.py,
tests/gate*_plants.py and conformance/mutants.py (by file and by function, on the main of round 42's merge) found none
in code that decides a user's text: generate.py's sampling step (``sample``, ``penalize``), its processors
(``Processors.__init__``, ``_sequence_bias``, ``before_penalty``, ``Constraints.active``) and greedy decode loop
(``_decode_greedy``); run.py's ``model_sampling`` (the model's generation_config.json settings merged with the
user's); buckets.py's ``bucket_of``; tokenizer.py's ``eos_ids``, ``pad_id``, ``repetition_penalty`` and
``whole_max_length``; conformance/reference.py's ``_softmax_rows``. Each at 0 plants before. For
tests/planted44_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise it
(the outcome of each: tests/test_planted44.py's docstring)."""

from __future__ import annotations

GEN = [
    "tests/test_generate.py",
    "tests/test_generation_planted.py",
    "tests/test_model_reference.py",
    "tests/test_text_round14.py",
    "tests/test_text_round29.py",
]
RUN = ["tests/test_config.py", "tests/test_generation_planted.py", "tests/test_text_round14.py"]
TOK = ["tests/test_tokenizer.py", "tests/test_text_round14.py", "tests/test_generation_planted.py"]
BUCK = ["tests/test_warmup.py", "tests/test_generation_planted.py"]
REF = ["tests/test_model_reference.py", "tests/test_conformance.py", "-k", "reference or softmax or attention"]

GENF, RUNF, BUCKF, TOKF, REFF = (
    "neurobrix/generate.py",
    "neurobrix/run.py",
    "neurobrix/buckets.py",
    "neurobrix/tokenizer.py",
    "conformance/reference.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 400) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ generate.py: the sampling step
    p(
        "g01",
        GENF,
        "return torch.where(seen, torch.where(scores < 0, scores * penalty, scores / penalty), scores)",
        "return torch.where(seen, torch.where(scores < 0, scores / penalty, scores * penalty), scores)",
        GEN,
    ),
    p(
        "g02",
        GENF,
        "        seen.scatter_(1, token[:, None], True)",
        "        seen.scatter_(1, token[:, None], False)",
        GEN,
    ),
    p(
        "g03",
        GENF,
        "    if processors is not None:\n        processors.push(token)\n    return token",
        "    return token",
        GEN,
    ),
    p(
        "g04",
        GENF,
        "        logits = penalize(logits, seen, opts.penalty)\n"
        "    if processors is not None:\n        logits = processors(logits)",
        "        pass\n    if processors is not None:\n        logits = processors(logits)\n"
        "    if opts.penalty != 1 and seen is not None:\n        logits = penalize(logits, seen, opts.penalty)",
        GEN,
    ),
    # ------------------------------------------------------------------ generate.py: the processors
    p(
        "g05",
        GENF,
        "        score = torch.where(score < 0, score * inverse, score / inverse)",
        "        score = torch.where(score < 0, score / inverse, score * inverse)",
        GEN,
    ),
    p(
        "g06",
        GENF,
        "prompt = torch.tensor([ids[: self.prompt_len] for ids in self.history], device=scores.device)",
        "prompt = torch.tensor([ids for ids in self.history], device=scores.device)",
        GEN,
    ),
    p("g07", GENF, "            if n > len(self.history[0]):", "            if n >= len(self.history[0]):", GEN),
    p(
        "g08",
        GENF,
        "match = torch.tensor([list(ids[:-1]) == history[-n:] for ids, _ in group], device=scores.device)",
        "match = torch.tensor([list(ids[:-1]) == history[:n] for ids, _ in group], device=scores.device)",
        GEN,
    ),
    p(
        "g09",
        GENF,
        "        biases = dict(self.c.sequence_bias)  # a sequence given twice",
        "        biases = dict(reversed(self.c.sequence_bias))  # a sequence given twice",
        GEN,
    ),
    p(
        "g10",
        GENF,
        "bad = [w for w in constraints.bad_words_ids if not (len(w) == 1 and w[0] in eos)]",
        "bad = [w for w in constraints.bad_words_ids if not w[-1] in eos]",
        GEN,
    ),
    p(
        "g11",
        GENF,
        "            for start in range(len(prompt) - n + 1 if n else 0):",
        "            for start in range(len(prompt) - n if n else 0):",
        GEN,
    ),
    p("g12", GENF, "            or self.encoder_repetition_penalty != 1\n", "", GEN),
    p(
        "g13",
        GENF,
        "    for s in range(1, steps + 1):\n        if s < steps:",
        "    for s in range(1, steps):\n        if s < steps:",
        GEN,
    ),
    # ------------------------------------------------------------------ run.py: the model's settings and the user's
    p(
        "r01",
        RUNF,
        "    if sampling.repetition_penalty is None and tokenizer.repetition_penalty is not None:",
        "    if tokenizer.repetition_penalty is not None:",
        RUN,
    ),
    p(
        "r02",
        RUNF,
        "    assisted = tokenizer.assisted() if sampling.temperature > 0 else []",
        "    assisted = tokenizer.assisted()",
        RUN,
    ),
    p(
        "r03",
        RUNF,
        "taken = {k: v for k, v in tokenizer.sampling_limits(given).items() if getattr(sampling, k) is None}",
        "taken = {k: v for k, v in tokenizer.sampling_limits(given).items() if getattr(sampling, k) in (None, 0)}",
        RUN,
    ),
    # ------------------------------------------------------------------ buckets.py
    p(
        "k01",
        BUCKF,
        '        return pow2_bucket(value, int(rule[len("pow2>=") :]))',
        '        return pow2_bucket(value, int(rule[len("pow2>=") + 1 :] or 1))',
        BUCK,
    ),
    p(
        "k02",
        BUCKF,
        '    if rule == "exact":\n        return (value, value)',
        '    if rule == "exact":\n        return pow2_bucket(value)',
        BUCK,
    ),
    # ------------------------------------------------------------------ tokenizer.py: generation settings
    p(
        "t01",
        TOKF,
        "        if self.has_generation_config:\n            # generate makes",
        '        if self.has_generation_config and self.generation.get("eos_token_id") is not None:\n'
        "            # generate makes",
        TOK,
    ),
    p(
        "t02",
        TOKF,
        "        return ids[0] if ids is not None and len(ids) == 1 else None",
        "        return ids[0] if ids else None",
        TOK,
    ),
    p(
        "t03",
        TOKF,
        "(2 fails there;\n        # infinity is taken: a held token's score is then 0, or -inf where it was below 0)\n"
        "        if not isinstance(value, float) or not value > 0:",
        "(2 fails there;\n        # infinity is taken: a held token's score is then 0, or -inf where it was below 0)\n"
        "        if not isinstance(value, (int, float)) or not value > 0:",
        TOK,
    ),
    p(
        "t04",
        TOKF,
        "math.isfinite(value) or float(value).is_integer()",
        "math.isfinite(value) or type(value) is int",
        TOK,
    ),
    # ------------------------------------------------------------------ conformance/reference.py
    p(
        "c01",
        REFF,
        "    shifted = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)",
        "    shifted = torch.exp(scores - scores.amax())",
        REF,
    ),
]
