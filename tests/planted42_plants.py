"""Round 42's planted bugs, in the code merged last session that no round planted yet: hub.py's blob check
(``check_blobs`` and its caller in store.py's import, strict round 45) and import's progress bar for it; store.py's
lock, claimed scratch folders and the model moved aside put back (strict round 46); strict round 48's atomic writes
(certify's ``_replace_tracked``, track's ``replace_text``, the ``--json`` reports) and resource errors
(errors.py's ``ran_out`` and the lines that name it); the engine-owned Triton cache (stack.py's ``use_engine_cache``,
``_cache_folder_problem``). Round 40 planted the same modules: every anchor here is a line no round planted. For
tests/planted42_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise it
(the outcome of each: tests/test_planted42.py's docstring)."""

from __future__ import annotations

BLOB = ["tests/test_strict_round45.py", "tests/test_planted40.py", "-k", "blob or layout or no_name"]
LOCK = [
    "tests/test_strict_round46.py",
    "tests/test_planted40.py",
    "-k",
    "(round46 or aside or swept or sweeps) and not triton",
]
S48 = ["tests/test_strict_round48.py", "tests/test_cli.py", "-k", "round48 or full_disk or json"]
ENG = ["tests/test_engine_cache.py"]

HUBF, STORE, STACK = "neurobrix/hub.py", "neurobrix/store.py", "neurobrix/stack.py"
ERRORS, CLI, CERTIFY, TRACK, CMAIN = (
    "neurobrix/errors.py",
    "neurobrix/cli.py",
    "conformance/certify.py",
    "conformance/track.py",
    "conformance/__main__.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 400) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ hub.py's blob check, its caller, its bar
    p(
        "b01",
        HUBF,
        "        if blob.parent == blobs and (_SHA256_NAME.fullmatch(blob.name) or _GIT_NAME.fullmatch(blob.name)):",
        "        if blob.parent == blobs and _SHA256_NAME.fullmatch(blob.name):",
        BLOB,
    ),
    p(
        "b02",
        HUBF,
        "        if blob.parent == blobs and (_SHA256_NAME.fullmatch(blob.name) or _GIT_NAME.fullmatch(blob.name)):",
        "        if _SHA256_NAME.fullmatch(blob.name) or _GIT_NAME.fullmatch(blob.name):",
        BLOB,
    ),
    p("b03", HUBF, '    blobs = Path(os.path.realpath(repo)) / "blobs"', '    blobs = repo / "blobs"', BLOB),
    p(
        "b04",
        HUBF,
        "models--{repo_id.replace('/', '--')}\"\n    if not _snapshot_of(repo, snapshot):  # (as",
        "models--{repo_id.replace('/', '-')}\"\n    if not _snapshot_of(repo, snapshot):  # (as",
        BLOB,
    ),
    p(
        "b05",
        HUBF,
        '        what = "sha256" if sha256 else "git blob hash"',
        '        what = "git blob hash" if sha256 else "sha256"',
        BLOB,
    ),
    p(
        "b06",
        HUBF,
        'byte_progress(f"checking {repo_id}", total, shown)',  # re-anchored in strict round 51
        'byte_progress(f"checking {repo_id}", total, not shown)',
        BLOB,
    ),
    p(
        "b07",
        STORE,
        "        hub.check_blobs(source, folder, files, progress)",
        "        hub.check_blobs(source, folder, files)",
        BLOB,
    ),
    p("b08", HUBF, "    if found != blob.name:", "    if found[:40] != blob.name[:40]:", BLOB),
    p(
        "b09",
        HUBF,
        "    total = sum(blob.stat().st_size for blob in named.values())",
        "    total = sum(blob.stat().st_size for blob in list(named.values())[:1])",
        BLOB,
    ),
    # ------------------------------------------------------------------ store.py: the lock, claims, put back, install
    p(
        "s01",
        STORE,
        "    except (OSError, ValueError, KeyError, TypeError, AttributeError):\n        pass  # unreadable",
        "    except (OSError, KeyError, TypeError, AttributeError):\n        pass  # unreadable",
        LOCK,
        400,
    ),
    p(
        "s02",
        STORE,
        "    with _locked(exclusive=True):  # taken out of the store whole",
        "    with _locked(exclusive=False):  # taken out of the store whole",
        LOCK,
        400,
    ),
    p(
        "s03",
        STORE,
        "            os.rename(aside.pop(), dest)  # the model",
        "            os.rename(aside[0], dest)  # the model",
        LOCK,
        400,
    ),
    p(
        "s04",
        STORE,
        "        with _locked(exclusive=True):  # made and claimed before any sweep",
        "        with _locked(exclusive=False):  # made and claimed before any sweep",
        LOCK,
        400,
    ),
    p(
        "s05",
        STORE,
        '        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))',
        "        fd = os.open(folder, os.O_RDONLY)",
        LOCK,
        400,
    ),
    p(
        "s06",
        STORE,
        "    dest = _destination(name)\n    with _locked(exclusive=False):\n        _sweep_stale()\n",
        "    dest = _destination(name)\n    _sweep_stale()\n",
        LOCK,
        400,
    ),
    p(
        "s07",
        STORE,
        "            trash = _scratch()  # no longer to be put back",
        "            trash = _scratch(_ASIDE)  # no longer to be put back",
        LOCK,
        400,
    ),
    # ------------------------------------------------------------------ strict round 48: whole or not at all
    p(
        "w01",
        CERTIFY,
        "            if tracked.path in scratch or tracked.path in staged:",
        "            if tracked.path in staged:",
        S48,
    ),
    p("w02", CERTIFY, "        files.sort(key=lambda f: f.path)\n", "", S48),
    p(
        "w03",
        CERTIFY,
        "        for tmp in tmps.values():\n            tmp.unlink(missing_ok=True)",
        "        pass",
        S48,
    ),
    p(
        "w04",
        CERTIFY,
        '        if not tracked_path.is_file() or tracked_path.read_text(encoding="utf-8") != tracked_text:',
        "        if not tracked_path.is_file():",
        S48,
    ),
    p(
        "w05",
        TRACK,
        '    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")',
        '    tmp = path.with_suffix(".tmp")',
        S48,
    ),
    p("w06", TRACK, "    finally:\n        tmp.unlink(missing_ok=True)", "    except OSError:\n        raise", S48),
    # ------------------------------------------------------------------ strict round 48: the resource named
    p("r01", ERRORS, '    errno.ENFILE: "the system may open no more files: close some programs",\n', "", S48),
    p("r02", ERRORS, '    errno.EROFS: "the filesystem is read-only",\n', "", S48),
    p(
        "r03",
        CMAIN,
        "{exc.strerror or exc}{where}{f'; {why}' if why else ''}\", file=sys.stderr)",
        '{exc.strerror or exc}{where}", file=sys.stderr)',
        S48,
    ),
    p(
        "r04",
        STORE,
        '                    f"{why}; nothing was stored"\n                    if why',
        '                    f"{why}; nothing was stored"\n                    if not why',
        S48,
    ),
    p(
        "r05",
        ERRORS,
        '    errno.EFBIG: "a file passed this process\'s file-size limit (`ulimit -f`): raise it",',
        '    errno.E2BIG: "a file passed this process\'s file-size limit (`ulimit -f`): raise it",',
        S48,
    ),
    # ------------------------------------------------------------------ the engine-owned Triton cache
    p(
        "e01",
        STACK,
        '    elif _ENGINE_CACHE_SET[0] is not None and os.environ.get("TRITON_CACHE_DIR") == _ENGINE_CACHE_SET[0]:',
        "    elif _ENGINE_CACHE_SET[0] is not None:",
        ENG,
    ),
    p(
        "e02",
        STACK,
        '    elif _named("TRITON_CACHE_DIR"):\n        folder = os.environ["TRITON_CACHE_DIR"]',
        '    elif os.environ.get("TRITON_CACHE_DIR"):\n        folder = os.environ["TRITON_CACHE_DIR"]',
        ENG,
    ),
    p(
        "e03",
        STACK,
        '    if class_id != "interpreter":\n        use_engine_cache()',
        '    if class_id == "interpreter":\n        use_engine_cache()',
        ENG,
    ),
    p(
        "e04",
        STACK,
        "        _ENGINE_CACHE_SET[0] = None\n",
        "",
        ENG,
    ),
]
