"""Round 29's planted bugs, in the code the newest rounds changed and round 28 left unplanted: gate round 33 (G003
for an upload folder that gains an entry while judged: ``_entry_type``, ``_listing``, ``_folder_changed``; the
publish step's report binding and format check in release.yml), gate round 32's limits and report lines, strict round
32 (the store behind a link that leads nowhere, a model removed during a run, two imports of one model at once, the
``--prompt-file`` cap), strict rounds 31 and 33 (``printable``, ``NeuroBrixError.lines``, ``schema.device_problem``
and ``foreign_device``), text round 28's stop strings and text round 29's decay, for tests/planted29_driver.py: id,
file, the exact text replaced, its replacement, and the existing tests that exercise it (the outcome of each:
tests/test_planted29.py's docstring)."""

from __future__ import annotations

GC = ["tests/test_gate_round33.py", "tests/test_gate_units.py", "-k", "not readme_publish and not publish_step"]
GR = ["tests/test_gate_round32.py", "tests/test_gate_units.py", "tests/test_planted28.py"]
RY = ["tests/test_gate_round33.py", "tests/test_workflows.py", "-k", "not changes_while_judged"]
SS = ["tests/test_strict_round32.py", "tests/test_store.py"]
PF = ["tests/test_strict_round32.py", "tests/test_cli.py"]
ER = [
    "tests/test_strict_round31.py",
    "tests/test_newcomer30.py",
    "tests/test_cli.py",
    "tests/test_planted27.py",
    "tests/test_planted28.py",
]
SD = ["tests/test_strict_round33.py", "tests/test_strict_round16.py", "tests/test_planted20.py"]
SD += ["tests/test_planted28.py"]
TS = [
    "tests/test_text_round28.py",
    "tests/test_text_round9.py",
    "tests/test_text_round14.py",
    "tests/test_planted27.py",
]
TX = ["tests/test_text_round29.py", "tests/test_planted28.py"]

CHKR, REP, CHECKS, ARC = "gate/checker.py", "gate/report.py", "gate/checks.py", "gate/archive.py"
REL = ".github/workflows/release.yml"
STORE, CLI, ERR, SCH = "neurobrix/store.py", "neurobrix/cli.py", "neurobrix/errors.py", "neurobrix/schema.py"
TOK, GEN = "neurobrix/tokenizer.py", "neurobrix/generate.py"
HOME_LINK = (
    '        shown = f"{HOME_ENV}={value}" if value else f"the default home {path}"\n'
    '        raise UsageError(\n            f"{shown} {where} a symbolic link'
)
PATTERN = r'"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"'


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ gate/checker.py: the folder read again (G003)
    p(
        "c01",
        CHKR,
        '"a link" if path.is_symlink() else "a folder" if path.is_dir() else',
        '"a folder" if path.is_dir() else "a link" if path.is_symlink() else',
        GC,
    ),
    p("c02", CHKR, 'for p in folder.iterdir() if not p.name.startswith(".")}', "for p in folder.iterdir()}", GC),
    p("c03", CHKR, "listings[argument] = {p.name: _entry_type(p) for p in held}", "listings[argument] = {}", GC),
    p(
        "c04",
        CHKR,
        "listings[argument] = {p.name: _entry_type(p) for p in held}",
        "listings[argument] = {p.name: _entry_type(p) for p in held if dist_kind(p)}",
        GC,
    ),
    p("c05", CHKR, "        findings.extend(_folder_changed(listings))\n", "", GC),
    p("c06", CHKR, "            if was == now:\n", "            if was is not None:\n", GC),
    p(
        "c07",
        CHKR,
        "    for argument, before in listings.items():\n        folder = argument.resolve().name",
        "    for argument, before in listings.items():\n        folder = argument.name",
        GC,
    ),
    p(
        "c08",
        CHKR,
        'would upload it"\n                    if was is None\n',
        'would upload it"\n                    if was is not None\n',
        GC,
    ),
    p(
        "c09",
        CHKR,
        "paths, folder_findings = collect(arguments, listings)",
        "paths, folder_findings = collect(arguments)",
        GC,
    ),
    p("c10", CHKR, "            if listings is not None:\n", "            if listings:\n", GC),
    p(
        "c11",
        CHKR,
        "        for name, now in sorted(_listing(argument).items()):\n",
        "        for name, now in sorted(before.items()):\n",
        GC,
    ),
    # ------------------------------------------------------------------ gate: limits, report lines, budget
    p("b01", CHECKS, "    dists: int = 64\n", "    dists: int = 63\n", GR),
    p("b02", REP, "    keep = LINE_MAX // 2\n", "    keep = LINE_MAX // 2 - 1\n", GR),
    p("b03", REP, "{len(line) - 2 * keep} characters left out", "{len(line) - keep} characters left out", GR),
    p("b04", ARC, "    if archive.budget.left >= limits.total_size:\n", "    if archive.budget.left > 0:\n", GR),
    p("b05", CHECKS, "        self.left -= size\n", "        self.left -= min(size, self.left)\n", GR),
    # ------------------------------------------------------------------ release.yml: the publish step, its binding
    p(
        "r01",
        REL,
        "          diff <(find gate -mindepth 1 -printf '%y %P\\n') <(echo 'f report.json')\n",
        "",
        RY,
    ),
    p("r02", REL, "jq -e '.format == 1 and .verdict", "jq -e '.verdict", RY),
    p("r03", REL, 'echo "sha256=${sum%% *}"', 'echo "sha256=${sum}"', RY),
    p(
        "r04",
        REL,
        "report-sha256: ${{ steps.report.outputs.sha256 }}",
        "report-sha256: ${{ steps.gate.outputs.sha256 }}",
        RY,
    ),
    p(
        "r05",
        REL,
        "GATE_REPORT_SHA256: ${{ needs.gate.outputs.report-sha256 }}",
        "GATE_REPORT_SHA256: ${{ needs.build.outputs.report-sha256 }}",
        RY,
    ),
    p("r06", REL, 'select(.status == "passed")', 'select(.status != "failed")', RY),
    p(
        "r07",
        REL,
        "'.repository.clean == true and .repository.commit == $commit'",
        "'.repository.commit == $commit'",
        RY,
    ),
    p(
        "r08",
        REL,
        "-printf '%y %P\\n' | sort) <(jq -r '.dists[] | \"f \\(.file)\"'",
        "-printf '%P\\n' | sort) <(jq -r '.dists[] | \"\\(.file)\"'",
        RY,
    ),
    # ------------------------------------------------------------------ neurobrix/store.py: strict round 32
    p("h01", STORE, "if os.path.lexists(p)), None)", "if p.exists()), None)", SS),
    p(
        "h02",
        STORE,
        "    if blocker is not None and blocker.is_symlink() and not blocker.exists():\n",
        "    if blocker is not None and blocker.is_symlink():\n",
        SS,
    ),
    p(
        "h03",
        STORE,
        'where = "is" if blocker == path else f"lies under {blocker}, which is"\n' + HOME_LINK,
        'where = "is"\n' + HOME_LINK,
        SS,
    ),
    p(
        "h04",
        STORE,
        "    if root.is_symlink() and not root.exists():\n",
        "    if root.is_symlink() and not root.is_dir():\n",
        SS,
    ),
    p("h05", STORE, "    if problem and models_dir().is_symlink():\n", "    if problem and False:\n", SS),
    p(
        "h06",
        STORE,
        "        if _stamp(self.path) == ():  # `neurobrix remove`",
        "        if False:  # `neurobrix remove`",
        SS,
    ),
    p("h07", STORE, "    changed = model.changed()\n    if changed is not None:\n        return changed\n", "", SS),
    p("h08", STORE, "        for _ in range(8):\n", "        for _ in range(1):\n", SS),
    p(
        "h09",
        STORE,
        "if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not dest.exists():",
        "if exc.errno not in (errno.EEXIST,) or not dest.exists():",
        SS,
    ),
    p(
        "h10",
        STORE,
        "        if aside and not dest.exists():\n            os.rename(aside.pop(), dest)",
        "        if aside and not dest.exists():\n            os.rename(aside[0], dest)",
        SS,
    ),
    p(
        "h11",
        STORE,
        "                except FileNotFoundError:  # moved aside by the other import meanwhile\n"
        + " " * 20
        + "pass\n",
        "                except FileNotFoundError:  # moved aside by the other import meanwhile\n"
        + " " * 20
        + "raise\n",
        SS,
    ),
    # ------------------------------------------------------------------ neurobrix/cli.py: --prompt-file's cap
    p(
        "f01",
        CLI,
        "                text = f.read(PROMPT_FILE_LIMIT + 1)\n",
        "                text = f.read(PROMPT_FILE_LIMIT)\n",
        PF,
    ),
    p("f02", CLI, "    if len(text) > PROMPT_FILE_LIMIT:\n", "    if len(text) >= PROMPT_FILE_LIMIT:\n", PF),
    p("f03", CLI, "PROMPT_FILE_LIMIT = 1 << 26\n", "PROMPT_FILE_LIMIT = 1 << 20\n", PF),
    p(
        "f04",
        CLI,
        "utf8_text(sys.stdin.read(PROMPT_FILE_LIMIT + 1), shown)",
        "utf8_text(sys.stdin.read(PROMPT_FILE_LIMIT), shown)",
        PF,
    ),
    # ------------------------------------------------------------------ neurobrix/errors.py: printable, lines
    p("e01", ERR, PATTERN, PATTERN.replace(r"\u061c", ""), ER),
    p("e02", ERR, PATTERN, PATTERN.replace(r"\ud800-\udfff", r"\ud800-\udbff"), ER),
    p("e03", ERR, PATTERN, PATTERN.replace(r"\u202a-\u202e", r"\u202a-\u202d"), ER),
    p("e04", ERR, "tuple(map(str, lines)) if several else ()", "tuple(lines) if several else ()", ER),
    # ------------------------------------------------------------------ schema: device_problem, foreign_device
    p("d01", SCH, '            "vendor": match.vendor,\n', "", SD),
    p("d02", SCH, '            "name": match.device_name,\n', "", SD),
    p(
        "d03",
        SCH,
        "same = isinstance(value, str) and fnmatch.fnmatchcase(value, str(expected))",
        "same = value == expected",
        SD,
    ),
    p(
        "d04",
        SCH,
        "            same = type(value) is type(expected) and value == expected\n",
        "            same = value == expected\n",
        SD,
    ),
    p(
        "d05",
        SCH,
        "            if same and isinstance(value, tuple):\n"
        + " " * 16
        + "same = all(type(v) is int for v in value)\n",
        "",
        SD,
    ),
    p(
        "d06",
        SCH,
        "records a device that is not of class {gpu_class.id} ({problem}):",
        "records a device that is not of class {gpu_class.id}:",
        SD,
    ),
    p("d07", SCH, "            value = tuple(value)  # a proof", "            value = list(value)  # a proof", SD),
    # ------------------------------------------------------------------ stop strings: StopStrings, the decode loop
    p(
        "s01",
        TOK,
        "        self.window = max((len(s) for s in self.strings), default=0)\n",
        "        self.window = max((len(s) for s in self.strings), default=0) - 1\n",
        TS,
    ),
    p(
        "s02",
        TOK,
        "            if spelt is None:\n                break\n            pieces.append(spelt)",
        "            if spelt is None:\n                continue\n            pieces.append(spelt)",
        TS,
    ),
    p("s03", TOK, "start = max(0, len(text) - last - len(s) + 1)", "start = max(0, len(text) - last - len(s))", TS),
    p("s04", GEN, "(stop is not None and stop(prompts[b] + outs[b]))", "(stop is not None and stop(outs[b]))", TS),
    p(
        "s05",
        TOK,
        "        if value == []:  # StopStringCriteria",
        "        if value == [] and False:  # StopStringCriteria",
        TS,
    ),
    p(
        "s06",
        TOK,
        "return stops if stops.strings or stops.any_token else None",
        "return stops if stops.strings else None",
        TS,
    ),
    p("s07", TOK, "        last = len(pieces[0])\n", "        last = len(pieces[-1])\n", TS),
    # ------------------------------------------------------------------ decay: decay_scale's message
    p("x01", GEN, 'what = "out of range" if scale is None else "no real number"', 'what = "out of range"', TX),
    p(
        "x02",
        GEN,
        "        if length > decay[0] + prompt_len:\n",
        "        if length > decay[0] + prompt_len + 1:\n",
        TX,
    ),
]
