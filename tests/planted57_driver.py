"""Round 55's planted-bug driver (not a test file), in a copy that is a git checkout of itself (round 26's
``git_copy``).

    python tests/planted57_driver.py COPY RESULTS.jsonl [ID ...]
        the plants of tests/planted57_plants.py, each against its own tests (round 26's ``run_round``)
    python tests/planted57_driver.py COPY RESULTS.jsonl --with TESTS ID ...
        those plants against TESTS in place of their own
    python tests/planted57_driver.py --registry [ID ...]
        each offsets plant read as the registry's check reads it: the registered mutants of the ops whose offsets
        the lint names on clean code and no longer with the plant (those the check's examples pass are caught by
        the lint alone), and what it names on the shipped kernels (a lint that refuses clean code)
    python tests/planted57_driver.py COPY RESULTS.jsonl --again [ROUND:ID ...]
        rounds 27 and 28's plants outside neurobrix/tables.py and schema.py run again, each in stages that stop at
        the first that fails: a plant the tests before its round caught runs its own tests, then its round's file;
        one that survived them runs its round's file (which caught it), then its own tests
    python tests/planted57_driver.py COPY RESULTS.jsonl --again-lists [ROUND:ID ...]
        those that survived their tests before, against those tests alone (does one catch it now?)
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import planted27_plants  # noqa: E402
import planted28_plants  # noqa: E402
from planted26_driver import git_copy, run_round  # noqa: E402
from planted57_plants import PLANTS  # noqa: E402

# what each round recorded (tests/test_planted27.py's and test_planted28.py's docstrings): the plants its tests caught
# before the round; the rest survived them (caught by the round's file, or equivalent)
EQUIVALENT = {"28:g18", "28:t04"}
SURVIVED = {
    "27": "e01 e02 e03 e06 e08 e09 e14 e17 e20 s01 s03 k01 k04 k08 k10 k13 k14 k16",
    "28": "g04 g06 g07 g11 g14 g15 g16 g23 g25 g27 g29 g41 t07 t16 t19 n06 n07 n08 n09 g18 t04",
}
OWN_FILE = {"27": "tests/test_planted27.py", "28": "tests/test_planted28.py"}
SKIPPED = ("neurobrix/tables.py", "neurobrix/schema.py")  # run again in round 54


def registry(wanted: set[str]) -> int:
    """``--registry``: each offsets plant applied to the lint's source in this process (no file is edited)."""
    import types

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    from conformance import mutants

    clean_text = (root / "conformance/offsets.py").read_text(encoding="utf-8")

    def lint(text: str) -> types.ModuleType:
        module = types.ModuleType("planted_offsets")
        exec(compile(text, "offsets.py", "exec"), module.__dict__)
        return module

    def named(module: types.ModuleType, file: str, source: str) -> set[str]:
        name = file.removesuffix(".py").replace("/", ".")
        return {p.split(" ", 1)[0] for p in module.narrow_offsets(name, source)}

    ops = sorted(str(f.relative_to(root)) for f in (root / "neurobrix/ops").glob("*.py"))
    registered = [m for m in mutants.MUTANTS if m.file in ops]
    clean = lint(clean_text)
    before = {m.id: named(clean, m.file, _patched(root, m)) for m in registered}
    for plant in PLANTS:
        if wanted and plant["id"] not in wanted:
            continue
        planted = lint(clean_text.replace(plant["old"], plant["new"]))
        shipped = sorted(set().union(*(named(planted, f, (root / f).read_text(encoding="utf-8")) for f in ops)))
        lost = sorted(m.id for m in registered if before[m.id] and not named(planted, m.file, _patched(root, m)))
        print(json.dumps({"id": plant["id"], "shipped_named": shipped, "mutants_lost": lost}), flush=True)
    return 0


def _patched(root: Path, mutant) -> str:
    return (root / mutant.file).read_text(encoding="utf-8").replace(mutant.old, mutant.new)


def again_plants() -> list[dict]:
    """Rounds 27 and 28's plants outside tables.py and schema.py, each with its stages ``(name, tests)``."""
    plants = []
    for round_, module in (("27", planted27_plants), ("28", planted28_plants)):
        for plant in module.PLANTS:
            if plant["file"] in SKIPPED:
                continue
            own = ("own", plant["tests"])
            file = ("file", [OWN_FILE[round_]])
            survived = plant["id"] in SURVIVED[round_].split()
            stages = [file, own] if survived else [own, file]
            plants.append(dict(plant, id=f"{round_}:{plant['id']}", survived=survived, stages=stages))
    return plants


def _pytest(copy: Path, tests: list[str], timeout: int) -> tuple[int, str]:
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
            cwd=copy,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return run.returncode, (run.stdout + run.stderr)[-1200:]
    except subprocess.TimeoutExpired:
        return -1, "timed out"


def run_again(argv: list[str]) -> int:
    copy, results = Path(argv[0]), Path(argv[1])
    wanted, lists = set(argv[3:]), argv[2] == "--again-lists"
    git_copy(copy)
    for plant in again_plants():
        if (wanted and plant["id"] not in wanted) or (lists and not plant["survived"]):
            continue
        if lists:
            plant = dict(plant, stages=[("own", plant["tests"])])
        path = copy / plant["file"]
        clean = path.read_text(encoding="utf-8")
        record: dict = {"id": plant["id"], "survived_before": plant["survived"]}
        if clean.count(plant["old"]) != 1:
            record["outcome"] = f"anchor found {clean.count(plant['old'])} times"
        else:
            path.write_text(clean.replace(plant["old"], plant["new"]), encoding="utf-8")
            start = time.monotonic()
            try:
                record["outcome"] = "survived"
                for name, tests in plant["stages"]:
                    rc, tail = _pytest(copy, tests, plant.get("timeout", 900))
                    record[name] = "caught" if rc == 1 else "survived" if rc == 0 else f"rc {rc}"
                    if rc != 0:
                        record["outcome"], record["tail"] = f"{record[name]} by {name}", tail
                        break
            finally:
                path.write_text(clean, encoding="utf-8")
            record["seconds"] = round(time.monotonic() - start)
        with results.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        print(record["id"], record["outcome"], record.get("seconds"), flush=True)
    return 0


if __name__ == "__main__":
    # the tests run as from a terminal (round 34's driver says why: a background job starts with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # and one started under nohup ignores SIGHUP, which test_store.py's import ended by a signal sends: it fails then
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if sys.argv[1:2] == ["--registry"]:
        sys.exit(registry(set(sys.argv[2:])))
    if sys.argv[3:4] in (["--again"], ["--again-lists"]):
        sys.exit(run_again(sys.argv[1:]))
    sys.exit(run_round(PLANTS, sys.argv[1:], __doc__))
