"""Round 54's planted bugs, in what strict round 56 added to the runtime's read of the tables (neurobrix/tables.py):
the fast path's reading of each entry as certify writes it (``_certified_entries``, ``_entry_heads``, ``_plain``,
``_candidate``, the text and duration forms of ``_PROOF_REST``), the header held to the schema in ``_record_layout``,
the installed wheel's exemption (``Tables._release``, set in ``_load``) and the stat of every table file in the
folder's state (``_state``). For tests/planted56r_driver.py: id, file, the exact text replaced, its replacement, and
the existing tests a contributor would run for it (the outcome of each: tests/test_planted56r.py's docstring)."""

from __future__ import annotations

TABLES = "neurobrix/tables.py"
T = [
    "tests/test_strict_round56.py",
    "tests/test_strict_round27.py",
    "tests/test_tables.py",
]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the installed wheel's exemption
    # w01: the exemption taken for a source checkout (its records are not the release's: nothing pins them)
    p("w01", TABLES, "    release = False\n", '    release = location.origin == "source checkout"\n', T),
    # w02: taken for an installed package no wheel's RECORD lists (an editable install: a checkout under site-packages)
    p("w02", TABLES, "        release = bool(records)  #", "        release = True  #", T),
    # ------------------------------------------------------------------ the header check (_record_layout)
    # h01: a header the schema refuses read on the fast path all the same
    p(
        "h01",
        TABLES,
        "    except TablesError:\n        return None\n    # one match",
        "    except TablesError:\n        pass\n    # one match",
        T,
    ),
    # h02: the header validated without its provenance's re-proofs
    p(
        "h02",
        TABLES,
        'validate("proofs", {**head, "entries": [_STAND_IN]}, "header")',
        'validate("proofs", {**head, "provenance": {k: v for k, v in provenance.items() if k != "reproved"}, '
        '"entries": [_STAND_IN]}, "header")',
        T,
    ),
    # ------------------------------------------------------------------ _certified_entries and its forms
    # e01: the fast path taken after a failed match (the entries' check made and its answer ignored)
    p(
        "e01",
        TABLES,
        "self._verified_record(class_id, kernel) or _certified_entries(text, index, own):\n",
        "self._verified_record(class_id, kernel) or _certified_entries(text, index, own) is not None:\n",
        T,
    ),
    # e02: the setting lines of an entry not compared (only its domain and its digest)
    p(
        "e02",
        TABLES,
        'parts[0::7] != heads + [""]',
        '[h.split("  config:")[0] + h.split("  proof:")[-1] for h in parts[0::7]] != '
        '[h.split("  config:")[0] + h.split("  proof:")[-1] for h in heads] + [""]',
        T,
    ),
    # e03: a setting's value that YAML 1.1 reads as a boolean or null (on, off, yes, no, null) written plain
    p("e03", TABLES, "_PLAIN_WORD.fullmatch(value) and value not in _YAML_WORDS:", "_PLAIN_WORD.fullmatch(value):", T),
    # e04: only YAML 1.2's words (true, false, null) kept from a plain text: yes, no, on and off read as texts
    p(
        "e04",
        TABLES,
        '+ "|".join(sorted(_YAML_WORDS))\n',
        '+ "|".join(sorted(w for w in _YAML_WORDS if w.lower() in ("true", "false", "null")))\n',
        T,
    ),
    # e05: a duration of any number of digits (YAML reads 400 digits as infinity, which the schema refuses)
    p("e05", TABLES, '_DURATION = r"(?:0|[1-9][0-9]{0,15})\\.[0-9]+"', '_DURATION = r"(?:0|[1-9][0-9]*)\\.[0-9]+"', T),
    # e06: a candidate rejected twice in the same words passed (only one written two ways is counted)
    p("e06", TABLES, "        if len(unique) != items:\n            return False\n", "", T),
    # e07: the entry's own setting among its rejected candidates not looked for where a candidate is written two ways
    p(
        "e07",
        TABLES,
        "if len(candidates) != len(texts) or owns[config] in candidates:",
        "if len(candidates) != len(texts):",
        T,
    ),
    # e08: the best time above the median passed
    p("e08", TABLES, "if float(best) > float(median) or int(tried)", "if int(tried)", T),
    # ------------------------------------------------------------------ the folder's state (_state)
    # s01: the records' stat skipped (only the indexes and class.yaml looked at)
    p(
        "s01",
        TABLES,
        "                    seen = entry.stat(follow_symlinks=False)\n",
        "                    if entry.name.endswith(PROOFS_SUFFIX):\n                        continue\n"
        "                    seen = entry.stat(follow_symlinks=False)\n",
        T,
    ),
    # s02: a table file's change time left out (a copy that keeps the times, the inode and the size)
    p("s02", TABLES, "seen.st_size, seen.st_ino, seen.st_ctime_ns))", "seen.st_size, seen.st_ino))", T),
    # s03: only the first class folder's files looked at
    p("s03", TABLES, "        for folder in folders:\n", "        for folder in folders[:1]:\n", T),
]
