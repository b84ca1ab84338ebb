"""Round 24's planted-bug driver (not a test file): plants each bug of tests/planted24_plants.py one at a time, by
exact-string substitution, in a copy of the repository, runs the tests named for it there, and records whether
they failed (the bug caught) or passed (it survived). The working tree is never edited.

    python tests/planted24_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted24_driver.py COPY RESULTS.jsonl --with TESTS ID ...   (TESTS, copied in first, in place of
                                                                              each plant's own tests)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from planted24_plants import PLANTS  # noqa: E402


def usage(argv: list[str], doc: str | None = __doc__) -> int | None:
    """None when ``argv`` names COPY and RESULTS (and TESTS after --with); else the driver's usage (``doc``) printed,
    and the exit status: 0 for -h/--help, on stdout; 2 otherwise, on stderr (a missing argument was an IndexError's
    traceback)."""
    if argv[:1] in (["-h"], ["--help"]):
        print((doc or "").strip())
        return 0
    named = argv[:2] + (argv[3:4] if argv[2:3] == ["--with"] else [])
    if len(named) < (3 if argv[2:3] == ["--with"] else 2) or any(a.startswith("-") for a in named):
        print(f"error: expected COPY RESULTS.jsonl [ID ...], got {' '.join(argv) or 'nothing'}", file=sys.stderr)
        print((doc or "").strip(), file=sys.stderr)
        return 2
    return None


def main(argv: list[str], doc: str | None = __doc__) -> int:
    refused = usage(argv, doc)
    if refused is not None:
        return refused
    copy, results = Path(argv[0]), Path(argv[1])
    instead = None
    if argv[2:3] == ["--with"]:
        instead, argv = argv[3], argv[2:]
    wanted = set(argv[2:])
    if not copy.exists():
        shutil.copytree(HERE.parent, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", ".ruff_cache"))
    if instead is not None:
        shutil.copyfile(HERE.parent / instead.split("::")[0], copy / instead.split("::")[0])
    for plant in PLANTS:
        if wanted and plant["id"] not in wanted:
            continue
        path = copy / plant["file"]
        clean = path.read_text(encoding="utf-8")
        if clean.count(plant["old"]) != 1:
            record = {"id": plant["id"], "outcome": f"anchor found {clean.count(plant['old'])} times"}
        else:
            path.write_text(clean.replace(plant["old"], plant["new"]), encoding="utf-8")
            start = time.monotonic()
            try:
                run = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-x",
                        "-p",
                        "no:cacheprovider",
                        *([instead] if instead else plant["tests"]),
                    ],
                    cwd=copy,
                    capture_output=True,
                    text=True,
                    timeout=plant.get("timeout", 400),
                )
                rc, tail = run.returncode, (run.stdout + run.stderr)[-1500:]
            except subprocess.TimeoutExpired:
                rc, tail = -1, "timed out"
            finally:
                path.write_text(clean, encoding="utf-8")
            outcome = "survived" if rc == 0 else "caught" if rc == 1 else f"rc {rc}"
            record = {"id": plant["id"], "outcome": outcome, "seconds": round(time.monotonic() - start), "tail": tail}
        with results.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        print(record["id"], record["outcome"], record.get("seconds"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
