"""Round 57's planted bugs, in what landed with strictness round 57, text round 47 and walk-through round 40: the
``verified:`` list of TRACKED.yaml (``tables.verified_records`` and ``render_tracked``, ``Tables._verified_record`` and
the binding it skips, ``conformance.track``'s ``out_of_sync``), greedy runs' generation settings (renormalize_logits,
bad_words_ids added as -inf, min_length, remove_invalid_values), certify's and ``mutants``' refusals when the launch
lint fails, and the order of ``run``'s and ``warmup``'s refusals. For tests/planted59_driver.py: id, file, the exact
text replaced (found once in its file), its replacement, and the existing tests a contributor would run for it (the
outcome of each: tests/test_planted59.py's docstring)."""

from __future__ import annotations

TABLES = "neurobrix/tables.py"
TRACK = "conformance/track.py"
GENERATE = "neurobrix/generate.py"
RUN = "neurobrix/run.py"
TOKENIZER = "neurobrix/tokenizer.py"
CERTIFY = "conformance/certify.py"
MUTANTS = "conformance/mutants.py"
WARMUP = "neurobrix/warmup.py"
LIST = ["tests/test_strict_round57.py", "tests/test_tracked.py"]
TEXT = ["tests/test_text_round47.py", "tests/test_generation_planted.py"]
WALK = ["tests/test_walk40.py"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the verified list: run's side
    # v01: the index's sha256 compared with the record's digest (the wrong file): no record is ever taken as listed
    p(
        "v01",
        TABLES,
        '            self._digests.get(f"{class_id}/{kernel}{INDEX_SUFFIX}"),',
        "            self._digests.get(record),",
        LIST,
    ),
    # v02: the index's sha256 not compared: a record listed beside another index is taken as verified
    p(
        "v02",
        TABLES,
        "return verified is not None and verified == (",
        "return verified is not None and verified[0] == (",
        LIST,
    ),
    # v03: a listed record's entries taken as its index's too (the binding of digests skipped, not the form check only)
    p(
        "v03",
        TABLES,
        "        if carried == own:  # (None, a record in another layout, is no list)",
        "        if carried == own or self._verified_record(class_id, kernel):",
        LIST,
    ),
    # ------------------------------------------------------------------ the verified list: track's side
    # v05: the memo of verified records keyed without its class's class.yaml (a class edited in the process: kept)
    p(
        "v05",
        TABLES,
        'bytes_verified = (found, digests[f"{class_id}/{CLASS_NAME}"])',
        "bytes_verified = (found, class_id)",
        LIST,
    ),
    # v06: the verified records written in the order they were given (certify appends its own after the others)
    p(
        "v06",
        TABLES,
        "        for v in sorted(verified, key=lambda v: v.path)\n",
        "        for v in verified\n",
        LIST,
    ),
    # v07: track --check holds a listed record to its path alone, not its hashes
    p(
        "v07",
        TRACK,
        "    wrong = [v.path for v in listed if v not in verified]\n",
        "    wrong = [v.path for v in listed if v.path not in {w.path for w in verified}]\n",
        LIST,
    ),
    # ------------------------------------------------------------------ greedy runs' generation settings
    # g01: renormalize_logits taken for greedy runs wherever the file's value is truthy (1, "true")
    p(
        "g01",
        RUN,
        'elif sampling.renormalize_logits is None and tokenizer.generation.get("renormalize_logits") is True:',
        'elif sampling.renormalize_logits is None and tokenizer.generation.get("renormalize_logits"):',
        TEXT,
    ),
    # g02: the greedy pick's log-softmax taken in the logits' own dtype (bf16 or fp16 on a GPU), not float32's
    p(
        "g02",
        GENERATE,
        "            logits = logits.float().log_softmax(dim=-1)",
        "            logits = logits.log_softmax(dim=-1)",
        TEXT,
    ),
    # g03: a bad word's prefix looked for one token late (a word as long as the history plus one passed over)
    p(
        "g03",
        GENERATE,
        "if len(word) - 1 <= length and (len(word) == 1",
        "if len(word) <= length and (len(word) == 1",
        TEXT,
    ),
    # g04: a bad word's -inf added at its first id rather than its last
    p(
        "g04",
        GENERATE,
        "                    bad[row, word[-1]] = True",
        "                    bad[row, word[0]] = True",
        TEXT,
    ),
    # g05: every bad word starting with an eos id dropped (transformers drops a word of one eos id alone)
    p(
        "g05",
        GENERATE,
        "bad = [w for w in constraints.bad_words_ids if not (len(w) == 1 and w[0] in eos)]",
        "bad = [w for w in constraints.bad_words_ids if not w[0] in eos]",
        TEXT,
    ),
    # g06: min_length's eos mask kept while the sequence is exactly min_length long
    p(
        "g06",
        GENERATE,
        "if eos and (length < c.min_length or",
        "if eos and (length <= c.min_length or",
        TEXT,
    ),
    # g07: remove_invalid_values' -inf made -(float32's largest) rather than float32's smallest
    p(
        "g07",
        GENERATE,
        "nan=0.0, posinf=big.max, neginf=big.min)",
        "nan=0.0, posinf=big.max, neginf=-big.max)",
        TEXT,
    ),
    # g08: remove_invalid_values read as on for any truthy value (1, "true"), not exactly true
    p(
        "g08",
        TOKENIZER,
        "                if value is True:\n                    found[name] = True\n",
        "                if value:\n                    found[name] = True\n",
        TEXT,
    ),
    # ------------------------------------------------------------------ the lint before certify's and mutants' work
    # w01: certify refuses only when every kernel it certifies fails the lint
    p("w01", CERTIFY, "    if any(lint.values()):\n", "    if all(lint.values()):\n", WALK),
    # w02: certify's refusal names every kernel, the ones the lint passes among them
    p(
        "w02",
        CERTIFY,
        "raise LintFailed({k: found for k, found in lint.items() if found})",
        "raise LintFailed(lint)",
        WALK,
    ),
    # w03: mutants refuse only when every planted kernel's clean source fails the lint
    p("w03", MUTANTS, "    if any(unfit.values()):\n", "    if all(unfit.values()):\n", WALK),
    # ------------------------------------------------------------------ the order of run's and warmup's refusals
    # r01: run locates the tables' folder before the model, but verifies it only when the device is settled
    p(
        "r01",
        RUN,
        "        load_tables()  # store's home is:",
        "        from .tables import locate\n\n        locate()  # store's home is:",
        WALK,
    ),
    # r02: run settles the device before it looks for the model
    p(
        "r02",
        RUN,
        "    stored = store.resolve(opts.model)\n",
        "    settle_device(opts.backend, opts.dtype)\n    stored = store.resolve(opts.model)\n",
        WALK,
    ),
    # r03: warmup reads the device's class before it looks for the model
    p(
        "r03",
        WARMUP,
        "    stored = store.resolve(opts.model)\n",
        '    _device_and_class("triton")\n    stored = store.resolve(opts.model)\n',
        WALK,
    ),
]
