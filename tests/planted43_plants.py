"""Round 43's planted bugs, in the code merged this session that no round planted: gate round 49's escaping of report
lines (gate/report.py's ``shown`` and ``_uncommanded``) and of ``python -m gate``'s stop line (gate/__init__.py's
``_refuse_shadowing``), and strict round 49's locale and umask work (neurobrix/checkpoint.py's ``name_text`` and
``disk_name``, neurobrix/cli.py's ``argument_text``, ``utf8_text``, the standard output's error handler and `run`'s
strict write; neurobrix/store.py's names read as UTF-8 text and the import's permission clearing; neurobrix/stack.py's
engine cache folder made closed to others). For tests/planted43_driver.py: id, file, the exact text replaced, its
replacement, and the existing tests a contributor would run for it (the outcome of each: tests/test_planted43.py's
docstring)."""

from __future__ import annotations

G49 = ["tests/test_gate_round49.py"]
STOP = ["tests/test_gate_round49.py", "tests/test_gate_round45.py", "-k", "stop or shadow or top"]
S49 = ["tests/test_strict_round49.py"]
NAMES = ["tests/test_strict_round49.py", "tests/test_store.py", "-k", "c_locale or utf8 or org"]
CLI = ["tests/test_strict_round49.py", "tests/test_text_round34.py", "-k", "c_locale or argument or standard_output"]
STORE = ["tests/test_strict_round49.py", "tests/test_store.py", "-k", "umask or reimport or org"]
STACK = ["tests/test_engine_cache.py", "tests/test_strict_round49.py", "-k", "cache"]

REPORT, INIT = "gate/report.py", "gate/__init__.py"
CKPT, CLIPY, STOREPY, STACKPY, TOK = (
    "neurobrix/checkpoint.py",
    "neurobrix/cli.py",
    "neurobrix/store.py",
    "neurobrix/stack.py",
    "neurobrix/tokenizer.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ gate round 49: report lines, the stop line
    p("r01", REPORT, '    line = line.replace("##", "#\\\\x23")', '    line = line.replace("##[", "#\\\\x23[")', G49),
    p("r02", REPORT, "    body = line.lstrip()\n", "    body = line\n", G49),
    p(
        "r03",
        REPORT,
        '        line = f"{line[:start]}\\\\x3a{line[start + 1 :]}"',
        '        line = f"{line[:start]}\\\\x3a{line[start + 2 :]}"',
        G49,
    ),
    p(
        "r04",
        REPORT,
        '    return _uncommanded("".join(ch if unicodedata.category(ch) not in _UNSHOWN else ascii(ch)[1:-1] '
        "for ch in text))",
        '    return "".join(ch if unicodedata.category(ch) not in _UNSHOWN else ascii(ch)[1:-1] '
        "for ch in _uncommanded(text))",
        G49,
    ),
    p("r05", REPORT, '    if body.startswith("::"):', '    if body.startswith("::") and line == body:', G49),
    p(
        "i01",
        INIT,
        "            (n if n.isascii() and n.isprintable() else ascii(n)[1:-1])",
        "            (n if n.isprintable() else ascii(n)[1:-1])",
        STOP,
    ),
    p("i02", INIT, '.replace("##", "#\\\\x23") for n in found', " for n in found", STOP),
    p(
        "i03",
        INIT,
        "            (n if n.isascii() and n.isprintable() else ascii(n)[1:-1])",
        "            (n if n.isascii() and n.isprintable() else ascii(n)[2:-1])",
        STOP,
    ),
    p(
        "i04",
        INIT,
        "            (n if n.isascii() and n.isprintable() else ascii(n)[1:-1])",
        "            (n if n.isascii() or n.isprintable() else ascii(n)[1:-1])",
        STOP,
    ),
    # ------------------------------------------------------------------ strict round 49: names as UTF-8 text
    p("c01", CKPT, '    return codecs.lookup(sys.getfilesystemencoding()).name == "utf-8"', "    return True", S49),
    p(
        "c02",
        CKPT,
        '    return name if _utf8_names() else os.fsencode(name).decode("utf-8", "surrogateescape")',
        '    return name if _utf8_names() else os.fsencode(name).decode("utf-8", "replace")',
        S49,
    ),
    p(
        "c03",
        CKPT,
        '    return text if _utf8_names() else os.fsdecode(text.encode("utf-8", "surrogateescape"))',
        '    return text if _utf8_names() else os.fsdecode(text.encode("utf-8"))',
        S49,
    ),
    p(
        "c04",
        CKPT,
        "parse_tokenizer_file(path, rebuilding_class(folder), name_text(str(path)))",
        "parse_tokenizer_file(path, rebuilding_class(folder), str(path))",
        S49,
    ),
    p(
        "c05",
        TOK,
        "            self._tok = parse_tokenizer_file(path, parsed_for, name_text(str(path)))",
        "            self._tok = parse_tokenizer_file(path, parsed_for, str(path))",
        NAMES,
    ),
    p(
        "n01",
        STOREPY,
        '                (sub, f"{name_text(top.name)}/{name_text(sub.name)}")',
        '                (sub, f"{name_text(top.name)}/{sub.name}")',
        NAMES,
    ),
    p(
        "n02",
        STOREPY,
        "        if stored is not None and _load(stored, local).source == name_text(str(folder.resolve())):",
        "        if stored is not None and _load(stored, local).source == str(folder.resolve()):",
        NAMES,
    ),
    p("n03", STOREPY, "        name = name_text(folder.name)\n", "        name = folder.name\n", NAMES),
    p(
        "n04",
        STOREPY,
        '            name_text(str(folder)).encode("utf-8")',
        '            str(folder).encode("utf-8", "surrogateescape")',
        NAMES,
    ),
    # ------------------------------------------------------------------ strict round 49: arguments, standard output
    p(
        "a01",
        CLIPY,
        '            return os.fsencode(text).decode("utf-8")\n',
        '            return os.fsencode(text).decode("latin-1")\n',
        CLI,
    ),
    p("a02", CLIPY, '    for name in ("model", "name"):', '    for name in ("model",):', CLI),
    p(
        "a03",
        CLIPY,
        'sys.stdout.errors in ("strict", "surrogateescape"):',
        'sys.stdout.errors == "strict":',
        CLI,
    ),
    p(
        "a04",
        CLIPY,
        """        return codecs.lookup_error("surrogateescape")(exc)  # type: ignore[no-any-return]
    except UnicodeError:
        return codecs.lookup_error("backslashreplace")(exc)  # type: ignore[no-any-return]""",
        """        return codecs.lookup_error("backslashreplace")(exc)  # type: ignore[no-any-return]
    except UnicodeError:
        return codecs.lookup_error("surrogateescape")(exc)  # type: ignore[no-any-return]""",
        CLI,
    ),
    p(
        "a05",
        CLIPY,
        '            text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")\n',
        "",
        CLI,
    ),
    p("a06", CLIPY, "    text = argument_text(text)\n    try:", "    try:", CLI),
    # ------------------------------------------------------------------ strict round 49: the umask
    p("u01", STOREPY, "    if mode & stat.S_IWOTH:\n", "    if mode & stat.S_IWGRP:\n", STORE),
    p(
        "u02",
        STOREPY,
        "        os.chmod(path, mode & ~stat.S_IWOTH)",
        "        os.chmod(path, mode & ~stat.S_IRWXO)",
        STORE,
    ),
    p("u03", STOREPY, "    if not org_existed:  # an org folder", "    if org_existed:  # an org folder", STORE),
    # u04 run as root clears others' write from every folder above the store that exists, /tmp among them (1777 made
    # 1775): put it back (`chmod 1777 /tmp`) after running it
    p(
        "u04",
        STOREPY,
        "    made = [folder for folder in made if not folder.exists() and not folder.is_symlink()]",
        "    made = [folder for folder in made if not folder.is_symlink()]",
        STORE,
    ),
    p(
        "u05",
        STOREPY,
        '        for placed in (tmp, *tmp.rglob("*")):',
        '        for placed in (tmp, *tmp.glob("*")):',
        STORE,
    ),
    p(
        "u06",
        STOREPY,
        "            if placed.is_dir() or placed.stat().st_nlink == 1:",
        "            if placed.is_dir() or placed.stat().st_nlink >= 1:",
        STORE,
    ),
    p(
        "u07",
        STOREPY,
        "    made = [models_dir(), *models_dir().parents]",
        "    made = [*models_dir().parents]",
        STORE,
    ),
    p(
        "u08",
        STOREPY,
        "            if placed.is_dir() or placed.stat().st_nlink == 1:",
        "            if placed.is_file() and placed.stat().st_nlink == 1:",
        STORE,
    ),
    # ------------------------------------------------------------------ strict round 49: the engine's cache folder
    p(
        "k01",
        STACKPY,
        "                    os.chmod(above, stat.S_IMODE(above.stat().st_mode) & ~stat.S_IWOTH)",
        "                    os.chmod(above, stat.S_IMODE(above.stat().st_mode) & ~stat.S_IRWXO)",
        STACK,
    ),
    p(
        "k02",
        STACKPY,
        """            made = [above for above in folder.parents if not above.exists()]  # (NEUROBRIX_HOME, say)
            try:  # every user could write it (and the 0777 folders Triton makes in it), and the next run refused it
                folder.mkdir(parents=True, exist_ok=True)
""",
        "            try:  # every user could write it (and the 0777 folders Triton makes in it), and the next run "
        "refused it\n"
        "                folder.mkdir(parents=True, exist_ok=True)\n"
        "                made = [above for above in folder.parents if not above.exists()]  # (NEUROBRIX_HOME, say)\n",
        STACK,
    ),
    p(
        "k03",
        STACKPY,
        "                os.chmod(folder, stat.S_IMODE(folder.stat().st_mode) & ~stat.S_IRWXO)",
        "                os.chmod(folder, stat.S_IMODE(folder.stat().st_mode) & ~stat.S_IWOTH)",
        STACK,
    ),
    p(
        "k04",
        STACKPY,
        "        if not folder.exists():  # made here, closed",
        "        if folder.exists():  # made here, closed",
        STACK,
    ),
    p(
        "k05",
        STACKPY,
        "                folder.mkdir(parents=True, exist_ok=True)\n                for above in made:",
        "                folder.mkdir(exist_ok=True)\n                for above in made:",
        STACK,
    ),
]
