"""Round 33's planted bugs, in code the earlier rounds left unplanted or planted thinly: text round 32 (the guard
``tokenizers_call`` around every tokenizers-library call, checkpoint's among them, and ``_spells_last_apart`` /
``Tokenizer.stream_held``), strict round 38 (``plan.entry_problem`` and ``smallest_call_problem``, which run's
preflight, doctor and ``python -m conformance check`` apply), strict round 37's cgroup memory limit
(``memory.cgroup_memory``, ``require_fit_on``, warmup's memory check), gate round 36's G406 (a tracked member twine
reads as the metadata, and the sdist's PKG-INFO) and ``schema.row_digests`` (the settings load's digests), for
tests/planted33_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise it
(the outcome of each: tests/test_planted33.py's docstring)."""

from __future__ import annotations

TX = ["tests/test_text_round32.py", "tests/test_text_round31.py", "tests/test_planted32.py", "tests/test_store.py"]
TX += ["-k", "panic or stream or held or decoder or bpe or spell or prompt or tokenizer"]
EP = ["tests/test_strict_round38.py", "tests/test_planted31.py", "tests/test_strict_round28.py"]
ME = ["tests/test_strict_round37.py", "tests/test_memory.py", "tests/test_planted32.py", "tests/test_planted31.py"]
ME += ["-k", "memory or cgroup or limit or fit or warmup or host"]
GT = ["tests/test_gate_round36.py", "tests/test_gate_units.py", "-k", "twine or metadata or sdist or pkg"]
DG = ["tests/test_digest_cost.py", "tests/test_planted25.py", "tests/test_tables.py"]

TOK, CKPT, PLAN, DOC, CHECK = (
    "neurobrix/tokenizer.py",
    "neurobrix/checkpoint.py",
    "neurobrix/plan.py",
    "neurobrix/doctor.py",
    "conformance/check.py",
)
MEM, WARM, WHEEL, SDIST, CHKR = (
    "neurobrix/memory.py",
    "neurobrix/warmup.py",
    "gate/wheel.py",
    "gate/sdist.py",
    "gate/checker.py",
)
SCHEMA, TABLES = "neurobrix/schema.py", "neurobrix/tables.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ text round 32: tokenizers_call
    p(
        "k01",
        TOK,
        "        yield\n    except BaseException as exc:\n",
        "        yield\n    except Exception as exc:\n",
        TX,
    ),
    p(
        "k02",
        TOK,
        "        if not _panicked(exc):\n            raise\n",
        "        if _panicked(exc):\n            raise\n",
        TX,
    ),
    p("k03", TOK, "        raise (error or TokenizerError)(\n", "        raise TokenizerError(\n", TX),
    p(
        "k04",
        CKPT,
        '        with tokenizers_call(f"{path}: not a valid tokenizer.json", CheckpointError):\n',
        '        with tokenizers_call(f"{path}: not a valid tokenizer.json"):\n',
        TX,
    ),
    p(
        "k05",
        TOK,
        '        with tokenizers_call(f"{folder}: the tokenizer cannot be built"):  # the library\'s calls as the files'
        " load\n            self._load(folder, dict(given or {}))\n",
        "        self._load(folder, dict(given or {}))\n",
        TX,
    ),
    p(
        "k06",
        TOK,
        '            with tokenizers_call("the tokenizer cannot spell its vocabulary for stop_strings"):\n'
        "                stops = StopStrings(self._tok, strings)\n",
        "            stops = StopStrings(self._tok, strings)\n",
        TX,
    ),
    p(
        "k07",
        TOK,
        "        except TokenizerError as exc:\n"
        '            raise TokenizerError(f"{self.generation_path}: {exc}") from None\n'
        "        return stops",
        "        except TokenizerError:\n            raise\n        return stops",
        TX,
    ),
    # ------------------------------------------------------------------ text round 32: _spells_last_apart, stream_held
    p(
        "k08",
        TOK,
        "if not suffix or (joined and len(suffix) > 1) or (not joined and rewritten):",
        "if not suffix or (joined and len(suffix) >= 1) or (not joined and rewritten):",
        TX,
    ),
    p(
        "k09",
        TOK,
        "if not suffix or (joined and len(suffix) > 1) or (not joined and rewritten):",
        "if not suffix or (joined and len(suffix) > 1):",
        TX,
    ),
    p(
        "k10",
        TOK,
        "t.find(suffix) not in (-1, len(t) - len(suffix))",
        "t.find(suffix) not in (-1, len(t) - 1)",
        TX,
    ),
    p(
        "k11",
        TOK,
        "t.find(suffix) not in (-1, len(t) - len(suffix))",
        "t.rfind(suffix) not in (-1, len(t) - len(suffix))",
        TX,
    ),
    p(
        "k12",
        TOK,
        '        joined = joined or kind in ("Fuse", "ByteLevel")\n        rewritten = True\n',
        '        joined = joined or kind == "Fuse"\n        rewritten = True\n',
        TX,
    ),
    p(
        "k13",
        TOK,
        '        joined = joined or kind in ("Fuse", "ByteLevel")\n        rewritten = True\n',
        '        joined = joined or kind in ("Fuse", "ByteLevel")\n        rewritten = kind == "Replace"\n',
        TX,
    ),
    p(
        "k14",
        TOK,
        "            if not joined and any(t.find(suffix)",
        "            if any(t.find(suffix)",
        TX,
    ),
    p(
        "k15",
        TOK,
        "            if _spells_last_apart(decoder, lambda: self._tok.get_vocab(with_added_tokens=True)):\n",
        "            if _spells_last_apart(decoder, lambda: self._tok.get_vocab(with_added_tokens=False)):\n",
        TX,
    ),
    p(
        "k16",
        TOK,
        '            suffix = str(step.get("suffix", "</w>"))\n',
        '            suffix = str(step.get("suffix", "</w>")).strip()\n',
        TX,
    ),
    # ------------------------------------------------------------------ strict round 38: entry_problem
    p(
        "e01",
        PLAN,
        "    return config_problem(kernel, config) or smallest_call_problem(kernel, config, domain, gpu_class)\n",
        "    return smallest_call_problem(kernel, config, domain, gpu_class)\n",
        EP,
    ),
    p(
        "e02",
        PLAN,
        "    for dtype in domain.dtypes:\n        smallest =",
        "    for dtype in domain.dtypes[:1]:\n        smallest =",
        EP,
    ),
    p(
        "e03",
        PLAN,
        "        problem = limit_problem(kernel, config, smallest, gpu_class) or "
        "shape_problem(kernel, config, smallest)\n",
        "        problem = limit_problem(kernel, config, smallest, gpu_class)\n",
        EP,
    ),
    p(
        "e04",
        PLAN,
        "        problem = limit_problem(kernel, config, smallest, gpu_class) or "
        "shape_problem(kernel, config, smallest)\n",
        "        problem = limit_problem(kernel, config, smallest) or shape_problem(kernel, config, smallest)\n",
        EP,
    ),
    p(
        "e05",
        PLAN,
        "        smallest = (kernel, dtype, tuple(lo for _, lo, _ in domain.ranges))\n        problem = limit_problem(",
        "        smallest = (kernel, dtype, tuple(hi or lo for _, lo, hi in domain.ranges))\n"
        "        problem = limit_problem(",
        EP,
    ),
    p(
        "e06",
        DOC,
        "            problem = smallest_call_problem(kernel, entry.config, entry.domain, gpu_class)\n",
        "            problem = smallest_call_problem(kernel, entry.config, entry.domain)\n",
        EP,
    ),
    p(
        "e07",
        DOC,
        "        for i in range(len(index.rows)):  # a setting no call",
        "        for i in range(len(index.rows) - 1):  # a setting no call",
        EP,
    ),
    p(
        "e08",
        CHECK,
        "    refused = entry_problem(kernel, entry.config, entry.domain)\n",
        "    refused = config_problem(kernel, entry.config)\n",
        EP,
    ),
    p(
        "e09",
        CHECK,
        '            "`neurobrix run` refuses it, so no example is drawn"\n        )\n        return result\n',
        '            "`neurobrix run` refuses it, so no example is drawn"\n        )\n',
        EP,
    ),
    # ------------------------------------------------------------------ strict round 37: cgroup_memory
    p(
        "m01",
        MEM,
        '            with open(os.path.join(folder, f"memory.{names[1]}"), encoding="ascii") as fh:\n',
        '            with open(os.path.join(folder, f"memory.{names[0]}"), encoding="ascii") as fh:\n',
        ME,
    ),
    p(
        "m02",
        MEM,
        '("limit_in_bytes", "usage_in_bytes"), "total_"\n',
        '("limit_in_bytes", "usage_in_bytes"), ""\n',
        ME,
    ),
    p(
        "m03",
        MEM,
        "        except (OSError, ValueError):\n            cache = 0\n",
        "        except (OSError, ValueError):\n            pass\n",
        ME,
    ),
    p(
        "m04",
        MEM,
        '            tightest = left, limit, os.path.join(folder, f"memory.{names[0]}")\n',
        '            tightest = left, limit, os.path.join(folder, f"memory.{names[1]}")\n',
        ME,
    ),
    p(
        "m05",
        MEM,
        "        folder = os.path.join(base, *parts[:depth])\n",
        "        folder = os.path.join(base, *parts[: depth + 1])\n",
        ME,
    ),
    p(
        "m06",
        MEM,
        '    parts = [p for p in path.split("/") if p not in ("", ".")]\n',
        '    parts = path.split("/")[1:]\n',
        ME,
    ),
    p(
        "m07",
        MEM,
        '    v2 = [f[2] for f in found if len(f) == 3 and f[0] == "0" and f[1] == ""]\n',
        '    v2 = [f[2] for f in found if len(f) == 3 and f[1] == ""]\n',
        ME,
    ),
    p(
        "m08",
        MEM,
        "        free, total = torch.cuda.mem_get_info(device)\n",
        "        total, free = torch.cuda.mem_get_info(device)\n",
        ME,
    ),
    p(
        "m09",
        MEM,
        "    if limited is not None and limited[0] < free:\n        free, total, cgroup = limited\n",
        "    if limited is not None and limited[0] < free:\n        free, cgroup = limited[0], limited[2]\n",
        ME,
    ),
    p(
        "m10",
        MEM,
        '    return f"{n / 2**30:.2f} GiB"\n',
        '    return f"{n / 10**9:.2f} GiB"\n',
        ME,
    ),
    # ------------------------------------------------------------------ strict round 37: warmup's memory check
    p(
        "w01",
        WARM,
        "    require_fit_on(\n        device,\n        cfg2,\n",
        "    require_fit_on(\n        device,\n        cfg,\n",
        ME,
    ),
    p(
        "w02",
        WARM,
        "        max(plan.capacities_to_build(), default=1),\n",
        "        max(plan.decodes, default=1),\n",
        ME,
    ),
    p(
        "w03",
        WARM,
        "        torch_dtype(dtype).itemsize,\n        1,\n        longest,\n",
        "        4,\n        1,\n        longest,\n",
        ME,
    ),
    p(
        "w04",
        WARM,
        "    longest = max((p for prompts in plan.prefills.values() for p in prompts), default=1)\n",
        "    longest = max((p for prompts in plan.prefills.values() for p in prompts[:1]), default=1)\n",
        ME,
    ),
    # ------------------------------------------------------------------ gate round 36: G406's tracked METADATA member
    p(
        "g01",
        WHEEL,
        '            "METADATA, fewest folders first): `twine upload` would send PyPI its fields, '
        "not the .dist-info's\",\n"
        "        )\n",
        '            "METADATA, fewest folders first): `twine upload` would send PyPI its fields, '
        "not the .dist-info's\",\n"
        "        )\n        return\n",
        GT,
    ),
    p(
        "g02",
        WHEEL,
        "        if name == metadata:\n            return\n",
        '        if name.endswith("/METADATA"):\n            return\n',
        GT,
    ),
    p("g03", SDIST, '        if rel == "PKG-INFO":\n', '        if rel.endswith("PKG-INFO"):\n', GT),
    p(
        "g04",
        CHKR,
        '    names = [n for n in archive.files if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]\n',
        '    names = [n for n in archive.files if n.endswith("METADATA")]\n',
        GT,
    ),
    # ------------------------------------------------------------------ row_digests: the settings load's digests
    p(
        "r01",
        SCHEMA,
        "        text = settings[config] + domain(*numbers) + end\n",
        "        text = settings[0] + domain(*numbers) + end\n",
        DG,
    ),
    p(
        "r02",
        SCHEMA,
        "        numbers = [str(bound) if type(bound) is int else _json(bound) for bound in bounds]\n",
        "        numbers = [str(bound) if isinstance(bound, int) else _json(bound) for bound in bounds]\n",
        DG,
    ),
    p(
        "r03",
        SCHEMA,
        '    return json.dumps(value, sort_keys=True, separators=(",", ":"))\n',
        '    return json.dumps(value, separators=(",", ":"))\n',
        DG,
    ),
    p(
        "r04",
        SCHEMA,
        '    domain = ",".join("[" + _json(dim).replace("{", "{{").replace("}", "}}") + ",{},{}]" '
        "for dim in key).format\n",
        '    domain = ",".join("[" + _json(dim) + ",{},{}]" for dim in key).format\n',
        DG,
    ),
    p(
        "r05",
        SCHEMA,
        "    bounds = tuple(bound for _, lo, hi in domain.ranges for bound in (lo, hi))\n",
        "    bounds = tuple(bound for _, lo, hi in domain.ranges for bound in (hi, lo))\n",
        DG,
    ),
    p(
        "r06",
        TABLES,
        "        own = row_digests(kernel, class_id, index.key, index.configs, index.rows)\n",
        "        own = row_digests(class_id, kernel, index.key, index.configs, index.rows)\n",
        DG,
    ),
    p(
        "r07",
        SCHEMA,
        "            end = ends[dtypes] = '],\"dtypes\":' + _json(list(dtypes)) + tail\n",
        "            end = ends[dtypes] = '],\"dtypes\":' + _json(sorted(dtypes)) + tail\n",
        DG,
    ),
]
