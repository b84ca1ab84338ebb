"""Round 35's planted bugs, in code merged in the thirty-fourth session that no round had planted: text round 34 (a
chat template that takes no system message refused for --system, ``ChatTemplateError``; a standard output that cannot
encode the model's text refused in one line after the text up to there), walk-through 33b / ux33 (an unknown --model's
did-you-mean, --max-tokens naming the most that fits, integer options of ASCII digits only, guidance_scale and
output_hidden_states refused by name), strictness round 40 (a manifest naming a file by a lone surrogate is damage, a
weight file or tokenizer.json gone after the check is exit 7), the Ctrl-C record cleared as a conformance command ends,
and kernel-mutant rounds 8/9's conformance changes (``_far_below`` draws in conformance/specs/attention.py,
``Record.edges`` and greedy_pick's V = 32,770 edge, rotary's fixed low_freq_factor 2 table), for
tests/planted35_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise it
(the outcome of each: tests/test_planted35.py's docstring)."""

from __future__ import annotations

TX = ["tests/test_text_round34.py", "tests/test_text_round33.py", "tests/test_tokenizer.py"]
TX += ["-k", "system or template or chat or output or encod"]
UX = ["tests/test_ux33.py", "tests/test_newcomer.py", "tests/test_store.py"]
UX += ["-k", "model or max_tokens or int or remove or name or option or count or found"]
GEN = ["tests/test_ux33.py", "tests/test_tokenizer.py", "tests/test_strict_round39.py"]
ST = ["tests/test_strict_round40.py", "tests/test_store.py"]
ST += ["-k", "manifest or damage or surrogate or weight or tokenizer or gone or missing or changed"]
WK = ["tests/test_walkthrough33.py", "tests/test_planted34.py", "tests/test_conformance.py"]
WK += ["-k", "interrupt or ctrl or signal or worker or lost"]
KM = ["tests/test_kmut8.py", "tests/test_kmut9.py", "tests/test_strategies.py", "tests/test_conformance_planted.py"]
KM9 = ["tests/test_kmut9.py", "tests/test_strategies.py", "tests/test_conformance_planted.py"]

CLI, RUN, TOK, STORE = "neurobrix/cli.py", "neurobrix/run.py", "neurobrix/tokenizer.py", "neurobrix/store.py"
CMAIN, CHECK, SPECS = "conformance/__main__.py", "conformance/check.py", "conformance/specs/__init__.py"
ATTN, PICK, ROTARY = "conformance/specs/attention.py", "conformance/specs/pick.py", "conformance/specs/rotary.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ text round 34: --system without a system role
    p(
        "x01",
        TOK,
        '        super().__init__(f"the model\'s chat template failed: {said}; try --no-chat")\n',
        '        super().__init__(f"the model\'s chat template failed: {said}")\n',
        TX,
    ),
    p(
        "x02",
        TOK,
        "            raise ChatTemplateError(said) from exc\n",
        '            raise TokenizerError(f"the model\'s chat template failed: {said}; try --no-chat") from exc\n',
        TX,
    ),
    p(
        "x03",
        TOK,
        "            except ChatTemplateError as exc:\n                try:  # the template fails on the system",
        "            except TokenizerError as exc:\n                try:  # the template fails on the system",
        TX,
    ),
    p(
        "x04",
        TOK,
        "                except TokenizerError:\n                    raise exc from None\n",
        "                except TokenizerError:\n                    pass\n",
        TX,
    ),
    p(
        "x05",
        TOK,
        "takes no system message (it fails on one: {exc.said}; ",
        "takes no system message (it fails on one: {exc}; ",
        TX,
    ),
    p(
        "x06",
        TOK,
        '                    "transformers\' apply_chat_template fails alike); leave --system out"\n',
        '                    "transformers\' apply_chat_template fails alike); try --no-chat"\n',
        TX,
    ),
    p(
        "x07",
        TOK,
        "                    self.render_chat([user])\n",
        '                    self.render_chat([{"role": "system", "content": system}])\n',
        TX,
    ),
    # ------------------------------------------------------------------ text round 34: a non-UTF-8 standard output
    p(
        "x08",
        CLI,
        "            sys.stdout.write(text[: exc.start])  # the text up to the character",
        "            sys.stdout.write(text[: exc.start - 1])  # the text up to the character",
        TX,
    ),
    p(
        "x09",
        CLI,
        "            streamed[0] = text[: exc.start] or streamed[0]\n",
        "            streamed[0] = text[: exc.start]\n",
        TX,
    ),
    p(
        "x10",
        CLI,
        "            streamed[0] = text[: exc.start] or streamed[0]\n",
        "",
        TX,
    ),
    p("x11", CLI, "            char = text[exc.start]\n", "            char = text[exc.end]\n", TX),
    # ------------------------------------------------------------------ ux33: did you mean
    p(
        "d01",
        STORE,
        "    close = difflib.get_close_matches(normalize(name).lower(), stored, n=1)\n",
        "    close = difflib.get_close_matches(normalize(name), stored, n=1)\n",
        UX,
    ),
    p(
        "d02",
        STORE,
        "        stored.setdefault(model.name.lower(), []).append(model.name)\n",
        "        stored.setdefault(model.name, []).append(model.name)\n",
        UX,
    ),
    p(
        "d04",
        STORE,
        "Did you mean {' or '.join(map(repr, stored[close[0]]))}?",
        "Did you mean {stored[close[0]][0]!r}?",
        UX,
    ),
    p(
        "d05",
        STORE,
        "{'Else i' if close else 'I'}mport it first",
        "{'I' if close else 'Else i'}mport it first",
        UX,
    ),
    p(
        "d06",
        STORE,
        'f"no model {name!r} in the store ({models_dir()}).{_did_you_mean(name)} `neurobrix list` shows the stored "',
        'f"no model {name!r} in the store ({models_dir()}). `neurobrix list` shows the stored "',
        UX,
    ),
    # ------------------------------------------------------------------ ux33: --max-tokens names the most that fits
    p(
        "m01",
        RUN,
        '"--max-tokens to at most {span - prompt_len}"',
        '"--max-tokens to at most {span - prompt_len - 1}"',
        UX,
    ),
    p("m02", RUN, '"--max-tokens to at most {span - prompt_len}"', '"--max-tokens to at most {span - max_tokens}"', UX),
    # ------------------------------------------------------------------ ux33: integer options of ASCII digits
    p("i01", CLI, '_DECIMAL = re.compile(r"-?[0-9]+")', '_DECIMAL = re.compile(r"-?\\d+")', UX),
    p("i02", CLI, "    if not _DECIMAL.fullmatch(text):\n", "    if not _DECIMAL.match(text):\n", UX),
    p("i03", CLI, '_DECIMAL = re.compile(r"-?[0-9]+")', '_DECIMAL = re.compile(r"[-+]?[0-9]+")', UX),
    p(
        "i05",
        CMAIN,
        "                value = _decimal(text)  # int() also reads",
        "                value = int(text)  # int() also reads",
        UX,
    ),
    p("i06", CLI, '_DECIMAL = re.compile(r"-?[0-9]+")', '_DECIMAL = re.compile(r"-?[0-9]*")', UX),
    # ------------------------------------------------------------------ ux33: guidance_scale, output_hidden_states
    p(
        "g01",
        TOK,
        'if s["guidance_scale"] is None or _number(s["guidance_scale"])',
        'if s["guidance_scale"] is None or type(s["guidance_scale"]) in (int, float)',
        GEN,
    ),
    p(
        "h01",
        TOK,
        "    if value is None or isinstance(value, (bool, int)):\n        return None\n",
        "    if value is None or isinstance(value, bool):\n        return None\n",
        GEN,
    ),
    p(
        "h02",
        TOK,
        "not all(_number(i) for i in value):  # 1.5",
        "not any(_number(i) for i in value):  # 1.5",
        GEN,
    ),
    p(
        "h03",
        TOK,
        '        if not hidden and (folder / "config.json").is_file():\n',
        '        if hidden is None and (folder / "config.json").is_file():\n',
        GEN,
    ),
    p(
        "h04",
        TOK,
        '            hidden_path = folder / "config.json"\n',
        "",
        GEN,
    ),
    p(
        "h05",
        TOK,
        "    if not isinstance(value, (str, list, dict)) or not all(",
        "    if not isinstance(value, (list, dict)) or not all(",
        GEN,
    ),
    # ------------------------------------------------------------------ strict round 40
    p(
        "s01",
        STORE,
        "            os.fsencode(file)\n",
        '            file.encode("utf-8")\n',
        ST,
    ),
    p(
        "s02",
        STORE,
        '            pass\n        elif not file or file.startswith(".")',
        '            continue\n        elif not file or file.startswith(".")',
        ST,
    ),
    p(
        "s03",
        STORE,
        "            return weight_files(self.path)\n        except CheckpointError as exc:\n",
        "            return weight_files(self.path)\n        except MissingShardsError as exc:\n",
        ST,
    ),
    p(
        "s04",
        TOK,
        '            raise TokenizerFileError(f"{folder}: tokenizer.json is missing;',
        '            raise TokenizerError(f"{folder}: tokenizer.json is missing;',
        ST,
    ),
    p(
        "s05",
        STORE,
        '        except UnicodeEncodeError:\n            raise ValueError(f"files names {file!r}, which no file',
        '        except UnicodeDecodeError:\n            raise ValueError(f"files names {file!r}, which no file',
        ST,
    ),
    # ------------------------------------------------------------------ the Ctrl-C record cleared as a command ends
    p(
        "c01",
        CMAIN,
        "        # through Workers outside the command (after its first item), and the next command\n"
        "        workers._INTERRUPTS.clear()\n",
        "        # through Workers outside the command (after its first item), and the next command\n"
        "            workers._INTERRUPTS.clear()\n",
        WK,
    ),
    # ------------------------------------------------------------------ kmut8: far-below attention draws
    p(
        "a01",
        ATTN,
        "    if norm2 == 0.0 or keys.shape[0] == 0:\n",
        "    if norm2 == 0.0:\n",
        KM,
    ),
    p(
        "a02",
        ATTN,
        "    top = max(float((k64 @ q64).max()) * scale, 0.0)\n",
        "    top = float((k64 @ q64).max()) * scale\n",
        KM,
    ),
    p(
        "a04",
        ATTN,
        '_far_below(q[b, 0, h * G], args["k"][b, : S - C + 1, h], args["scale"])',
        '_far_below(q[b, 0, h * G], args["k"][b, : S - C, h], args["scale"])',
        KM,
    ),
    p(
        "a05",
        ATTN,
        '_far_below(q[b, 0, h * G], args["k"][b, : S - C + 1, h], args["scale"])',
        '_far_below(q[b, 0, h], args["k"][b, : S - C + 1, h], args["scale"])',
        KM,
    ),
    p(
        "a06",
        ATTN,
        '_far_below(args["q"][b, h * G], args["k_cache"][b, :n, h], args["scale"])',
        '_far_below(args["q"][b, h * G], args["k_cache"][b, : n - 1, h], args["scale"])',
        KM,
    ),
    p(
        "a07",
        ATTN,
        "FAR_BELOW = 8192.0  # natural units",
        "FAR_BELOW = 4096.0  # natural units",
        KM,
    ),
    # ------------------------------------------------------------------ kmut9: Record.edges, greedy_pick's edge
    p(
        "e01",
        CHECK,
        "    for shape in (*(small.explicit if small else ()), *record.edges):\n",
        "    for shape in (*(small.explicit if small else ()), *(record.edges if small is None else ())):\n",
        KM9,
    ),
    p(
        "e02",
        PICK,
        "    lowest = PAST_INT16 if V > PAST_INT16 and not values.timing else 0\n",
        "    lowest = PAST_INT16 if V >= PAST_INT16 and not values.timing else 0\n",
        KM9,
    ),
    p("e03", PICK, "        at = rng.randrange(lowest, V)\n", "        at = rng.randrange(V)\n", KM9),
    p(
        "e04",
        PICK,
        "            logits[row, rng.randrange(lowest, V)] = logits[row].max() + 1\n",
        "            logits[row, rng.randrange(lowest, V)] = logits[row].max()\n",
        KM9,
    ),
    p("e05", PICK, 'EDGES = ({"B": 2, "V": PAST_INT16 + 2},)', 'EDGES = ({"B": 2, "V": PAST_INT16},)', KM9),
    # ------------------------------------------------------------------ kmut9: rotary's low_freq_factor 2 table
    p(
        "r01",
        ROTARY,
        "LLAMA3_LOW_FACTOR = Rope(500000.0, _llama3(8.0, 2.0, 4.0, 8),",
        "LLAMA3_LOW_FACTOR = Rope(500000.0, _llama3(8.0, 2.0, 4.0, 32),",
        KM9,
    ),
    p(
        "r02",
        ROTARY,
        "                for fixed in (YARN_CLIPPED, YARN_ZERO_WIDTH, LLAMA3_LOW_FACTOR)\n",
        "                for fixed in (YARN_CLIPPED, YARN_ZERO_WIDTH)\n",
        KM9,
    ),
]
