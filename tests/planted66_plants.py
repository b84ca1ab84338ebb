"""Round 64's planted bugs, in code round 63 left open and code few rounds planted: the chat template's message
clean-up and its named templates (neurobrix/tokenizer.py: ``_chat_message``, the templates read from
``additional_chat_templates/``, ``render_chat``'s pick, ``has_chat_template``), the decode step's length bookkeeping
and the KV cache's capacity and window checks (neurobrix/generate.py: ``_feed``, ``Decoder.capture``, ``generate``'s
window check; neurobrix/run.py: ``new_token_limit``'s window bound), warmup's bookkeeping of the caches it builds and
the passes it makes (neurobrix/warmup.py: ``_merge``, ``plan_warmup``'s chosen caches, ``launch``'s greedy step), an
unreadable TRACKED.yaml in ``tables._release_bound``, and the sampling settings' ranges (neurobrix/sampling.py:
``Sampling.validate``). For tests/planted66_driver.py: id, file, the exact text replaced (found once in its file),
its replacement, and the existing tests a contributor would run for it (the outcome of each: docs/planted-bugs.md,
round 64)."""

from __future__ import annotations

TOKENIZER = "neurobrix/tokenizer.py"
GENERATE = "neurobrix/generate.py"
RUN = "neurobrix/run.py"
WARMUP = "neurobrix/warmup.py"
TABLES = "neurobrix/tables.py"
SAMPLING = "neurobrix/sampling.py"

CHAT_TESTS = [
    "tests/test_tokenizer.py",
    "tests/test_text_round27.py",
    "tests/test_text_round15.py",
    "tests/test_planted65.py",
]
DECODE_TESTS = [
    "tests/test_generate.py",
    "tests/test_generation_planted.py",
    "tests/test_planted22.py",
    "tests/test_text_round11.py",
    "tests/test_text_round21.py",
]
WARMUP_TESTS = ["tests/test_warmup.py"]
# the shipped list's binding test left out (round 59 says why: any edit of tables.py unbinds the list until `track`
# runs, which a contributor does)
RULES_TESTS = [
    "tests/test_strict_round58.py",
    "tests/test_strict_round59.py",
    "--deselect",
    "tests/test_strict_round58.py::test_the_shipped_list_is_bound_to_this_code",
]
SAMPLING_TESTS = ["tests/test_engine.py", "tests/test_text_round10.py", "tests/test_walk44.py"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the chat template's messages
    # c01: a message's falsy values dropped with its None ones (an empty content, a 0, a false flag read as missing)
    p(
        "c01",
        TOKENIZER,
        "message = {key: value for key, value in message.items() if value is not None}",
        "message = {key: value for key, value in message.items() if value}",
        CHAT_TESTS,
    ),
    # c02: reasoning taken from the last of its names present, not the first (reasoning_content's own value lost)
    p(
        "c02",
        TOKENIZER,
        "reasoning = next((message[key] for key in REASONING_FIELDS if key in message), None)",
        "reasoning = next((message[key] for key in reversed(REASONING_FIELDS) if key in message), None)",
        CHAT_TESTS,
    ),
    # c03: the alias written over the message's own thinking (transformers keeps a message's thinking as given)
    p(
        "c03",
        TOKENIZER,
        'return message if reasoning is None else {"thinking": reasoning, **message, "reasoning_content": reasoning}',
        'return message if reasoning is None else {**message, "thinking": reasoning, "reasoning_content": reasoning}',
        CHAT_TESTS,
    ),
    # c04: reasoning looked for before the None values are dropped (reasoning_content=None hides a thinking)
    p(
        "c04",
        TOKENIZER,
        "    message = {key: value for key, value in message.items() if value is not None}\n"
        "    reasoning = next((message[key] for key in REASONING_FIELDS if key in message), None)\n",
        "    reasoning = next((message[key] for key in REASONING_FIELDS if key in message), None)\n"
        "    message = {key: value for key, value in message.items() if value is not None}\n",
        CHAT_TESTS,
    ),
    # ------------------------------------------------------------------ named templates
    # c05: the tool_use template picked only for a non-empty tools list (transformers: whenever tools is given)
    p(
        "c05",
        TOKENIZER,
        'name = "tool_use" if tools is not None and "tool_use" in self.chat_templates else "default"',
        'name = "tool_use" if tools and "tool_use" in self.chat_templates else "default"',
        CHAT_TESTS,
    ),
    # c06: chat_template.jinja over additional_chat_templates/default.jinja (transformers 5: the folder's wins)
    p(
        "c06",
        TOKENIZER,
        'files |= {p.name.removesuffix(".jinja"): p for p in (folder / "additional_chat_templates").glob("*.jinja")}',
        'files = {p.name.removesuffix(".jinja"): p for p in (folder / "additional_chat_templates").glob("*.jinja")}'
        " | files",
        CHAT_TESTS,
    ),
    # c07: templates read from the folder's subfolders too (transformers reads its top level only)
    p(
        "c07",
        TOKENIZER,
        '(folder / "additional_chat_templates").glob("*.jinja")}',
        '(folder / "additional_chat_templates").rglob("*.jinja")}',
        CHAT_TESTS,
    ),
    # c08: a default template that is not text taken for none (the prompt used as is, where transformers fails)
    p(
        "c08",
        TOKENIZER,
        'return self.chat_template is not None or "default" in self.unusable_templates',
        "return self.chat_template is not None",
        CHAT_TESTS,
    ),
    # ------------------------------------------------------------------ decode's lengths, the cache's checks
    # k01: a decode step's cache length its position, not one more (the step's own key not attended to)
    p("k01", GENERATE, "    state[1].fill_(position + 1)\n", "    state[1].fill_(position)\n", DECODE_TESTS),
    # k02: the sliding-window check one position early (a generation that fills the window exactly refused)
    p(
        "k02",
        GENERATE,
        "if window is not None and seq + max_new_tokens - 1 > window:",
        "if window is not None and seq + max_new_tokens - 1 >= window:",
        DECODE_TESTS,
    ),
    # k03: a window of context - 1 taken as binding (run's default cut at the context refused as past the window)
    p(
        "k03",
        RUN,
        "window_bound = window is not None and window + 1 < span",
        "window_bound = window is not None and window < span",
        DECODE_TESTS,
    ),
    # k04: the decode step captured again at every step (a graph and its memory pool per token)
    p(
        "k04",
        GENERATE,
        "        if not self.use_graph or self.graph is not None:\n            return\n        self._feed(",
        "        if not self.use_graph:\n            return\n        self._feed(",
        DECODE_TESTS,
    ),
    # ------------------------------------------------------------------ warmup's bookkeeping
    # w01: lengths one apart not merged (the plan's prompts said as "1-15, 16-31", a segment per bucket)
    p("w01", WARMUP, "if merged and a <= merged[-1][1] + 1:", "if merged and a <= merged[-1][1]:", WARMUP_TESTS),
    # w02: a cache already built losing to the window's own representative (more caches built than needed)
    p(
        "w02",
        WARMUP,
        "for capacity in [*representatives(window), *sorted(c for c in built if _inside(c, window))]:",
        "for capacity in [*sorted(c for c in built if _inside(c, window)), *representatives(window)]:",
        WARMUP_TESTS,
    ),
    # w03: a cache chosen for a prompt not remembered as built (a later prompt builds another of its class)
    p("w03", WARMUP, "                built.add(capacity)\n", "", WARMUP_TESTS),
    # w04: the greedy step launched at every decode's cache, not once (its arguments are the same at every length)
    p("w04", WARMUP, "                    picked = True\n", "", WARMUP_TESTS),
    # ------------------------------------------------------------------ tables._release_bound
    # r01: an unreadable TRACKED.yaml taken as bound (its records honoured unread)
    p(
        "r01",
        TABLES,
        "    except (OSError, UnicodeDecodeError):\n        return False\n    return own is not None",
        "    except (OSError, UnicodeDecodeError):\n        return True\n    return own is not None",
        RULES_TESTS,
    ),
    # r02: a TRACKED.yaml that is not UTF-8 not caught (a UnicodeDecodeError's traceback)
    p(
        "r02",
        TABLES,
        "    except (OSError, UnicodeDecodeError):\n        return False\n    return own is not None",
        "    except OSError:\n        return False\n    return own is not None",
        RULES_TESTS,
    ),
    # ------------------------------------------------------------------ Sampling.validate's ranges
    # v01: a min_p of 1 refused (MinPLogitsWarper takes [0, 1]: only the most likely tokens kept)
    p("v01", SAMPLING, '"min_p": (0, 1, True, True),', '"min_p": (0, 1, True, False),', SAMPLING_TESTS),
    # v02: a top_p of 0 refused (TopPLogitsWarper takes [0, 1]: the most likely token kept)
    p(
        "v02",
        SAMPLING,
        "math.isfinite(self.top_p) and 0 <= self.top_p <= 1",
        "math.isfinite(self.top_p) and 0 < self.top_p <= 1",
        SAMPLING_TESTS,
    ),
]
