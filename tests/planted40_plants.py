"""Round 40's planted bugs, where no round planted before: what round 39 left (certify's ``plan``, ``provenance`` and
``write_table``, check's ``conforms``, hub.py's online paths ``_download``, ``_fetch`` and ``_from_cache``, driven by
test_store.py's fake hub), and the code this session added: neurobrix/stack.py's engine cache (``engine_cache``,
``_named``, ``use_engine_cache``, ``_cache_folder_problem``'s engine branch) and doctor.py's ``_cache_folder``;
hub.py's blob check (``check_blobs``, ``_check_blob``, ``_blob_digest``, strict round 45); store.py's lock and
claims (``_locked``, ``_claim``, ``_claimed``, ``_put_back``, ``_take_out``, the sweep's aside handling, strict
round 46); gate's G602 for one file name in other bytes and G408's path-like entry-point names (gate round 44). For
tests/planted40_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise
it (the outcome of each: tests/test_planted40.py's docstring)."""

from __future__ import annotations

ENG = ["tests/test_engine_cache.py"]
BLOB = ["tests/test_strict_round45.py", "-k", "blob or layout or no_name"]
LOCK = ["tests/test_strict_round46.py", "tests/test_strict_round43.py", "-k", "not triton_cache and not mistral"]
GATE = ["tests/test_gate_round44.py", "-k", "path or twice or another_entry"]
HUBO = ["tests/test_store.py", "-k", "gated or hub or unknown"]
CERT = ["tests/test_conformance.py", "-k", "plan or certify_writes or resum or reformat or where or crashes"]
PROV = [
    "tests/test_conformance.py",
    "tests/test_planted23.py",
    "tests/test_strict_round18.py",
    "-k",
    "commit or provenance or resum",
]
WRT = ["tests/test_contributor.py", "tests/test_conformance.py", "-k", "certify or reformat or ctrl_c"]
CONF = [
    "tests/test_conformance.py",
    "tests/test_ux34.py",
    "-k",
    "out_of_memory or failing or shrunk or tampered or render",
]

STACK, DOCTOR, HUBF, STORE = "neurobrix/stack.py", "neurobrix/doctor.py", "neurobrix/hub.py", "neurobrix/store.py"
CERTIFY, CHECK, CHECKER, META = "conformance/certify.py", "conformance/check.py", "gate/checker.py", "gate/metadata.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 400) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the engine's Triton cache (stack, doctor)
    p(
        "e01",
        STACK,
        "    if any(_named(name) is not None for name in CACHE_ENV):",
        '    if _named("TRITON_CACHE_DIR") is not None:',
        ENG,
    ),
    p(
        "e02",
        STACK,
        '    return None if name == "TRITON_CACHE_DIR" and value is not None and value == _ENGINE_CACHE_SET[0] else value',  # noqa: E501
        "    return value",
        ENG,
    ),
    p(
        "e03",
        STACK,
        '        os.environ["TRITON_CACHE_DIR"] = _ENGINE_CACHE_SET[0] = str(folder)',
        '        os.environ["TRITON_CACHE_DIR"] = str(folder)',
        ENG,
    ),
    p(
        "e04",
        STACK,
        '        del os.environ["TRITON_CACHE_DIR"]  # TRITON_HOME named since',
        '        os.environ.get("TRITON_CACHE_DIR")  # TRITON_HOME named since',
        ENG,
    ),
    p(
        "e05",
        STACK,
        "        folder, named = str(engine), f\"the engine's cache",
        "        folder, named = str(engine.parent), f\"the engine's cache",
        ENG,
    ),
    p(
        "d01",
        DOCTOR,
        '    return f"{value} (TRITON_CACHE_DIR)" if name == "TRITON_CACHE_DIR" else',
        '    return f"{value} (TRITON_CACHE_DIR)" if name != "TRITON_HOME" else',
        ENG,
    ),
    p(
        "d02",
        DOCTOR,
        "    name = next(n for n in CACHE_ENV if _named(n) is not None)",
        "    name = next(n for n in reversed(CACHE_ENV) if _named(n) is not None)",
        ENG,
    ),
    p(
        "d03",
        DOCTOR,
        'f"{value}/.triton/cache (TRITON_HOME)"',
        'f"{value} (TRITON_HOME)"',
        ENG,
    ),
    # ------------------------------------------------------------------ hub.py: the blob check
    p("b01", HUBF, 'hashlib.sha1(b"blob %d\\0" % size,', 'hashlib.sha1(b"blob %d" % size,', BLOB),
    p("b02", HUBF, "        while chunk := fh.read(16 << 20):", "        if chunk := fh.read(16 << 20):", BLOB),
    p("b03", HUBF, "            read(len(chunk))", "            read(16 << 20)", BLOB),
    p(
        "b04",
        HUBF,
        "    found = _blob_digest(blob, git=not sha256, read=read)",
        "    found = _blob_digest(blob, git=bool(sha256), read=read)",
        BLOB,
    ),
    p(
        "b05",
        HUBF,
        "    if not _snapshot_of(repo, snapshot):  # (as _own_snapshot",
        "    if not _snapshot_of(repo, snapshot.parent):  # (as _own_snapshot",
        BLOB,
    ),
    p("b06", HUBF, "    shown = progress and total >= 256 << 20", "    shown = progress", BLOB),
    # ------------------------------------------------------------------ store.py: the lock, claims, the sweep
    p("s01", STORE, "    if not depth and fcntl is not None:", "    if fcntl is not None:", LOCK, 150),
    p(
        "s02",
        STORE,
        "                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)",
        "                fcntl.flock(fd, fcntl.LOCK_SH)",
        LOCK,
        150,
    ),
    p(
        "s03",
        STORE,
        "        _HOLDS.depth = depth\n        if fd is not None:",
        "        if fd is not None:",
        LOCK,
        150,
    ),
    p(
        "s04",
        STORE,
        "        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)",
        "        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)",
        LOCK,
        150,
    ),
    p(
        "s05",
        STORE,
        "    return fcntl is not None and folder.is_dir() and not folder.is_symlink()",
        "    return fcntl is not None and folder.is_dir()",
        LOCK,
        150,
    ),
    p(
        "s06",
        STORE,
        "        if pid.isdigit() and not _pid_alive(int(pid)) and not _claimed(path):",
        "        if pid.isdigit() and not _pid_alive(int(pid)):",
        LOCK,
        150,
    ),
    p("s07", STORE, "                _put_back(path)", "                pass", LOCK, 150),
    p("s08", STORE, "                dest.parent.mkdir(exist_ok=True)\n", "", LOCK, 150),
    p("s09", STORE, "    _sweep_stale()\n    key, path = _find(name)", "    key, path = _find(name)", LOCK, 150),
    p("s10", STORE, "                old = _scratch(_ASIDE)", "                old = _scratch()", LOCK, 150),
    # ------------------------------------------------------------------ gate round 44: G602 twice, G408 paths
    p(
        "g01",
        CHECKER,
        "        if earlier is not archive and earlier.sha256 and earlier.sha256 != archive.sha256:",
        "        if earlier is not archive and earlier.sha256 and earlier.sha256 == archive.sha256:",
        GATE,
    ),
    p(
        "g02",
        CHECKER,
        "        if not archive.sha256:  # refused unread (G308)",
        "        if archive.sha256:  # refused unread (G308)",
        GATE,
    ),
    p(
        "g03",
        META,
        '    if name in (".", "..") or "/" in name or "\\\\" in name or _EP_DRIVE.match(name):',
        '    if name in (".", "..") or "/" in name or _EP_DRIVE.match(name):',
        GATE,
    ),
    p(
        "g04",
        META,
        '    if name in (".", "..") or "/" in name or "\\\\" in name or _EP_DRIVE.match(name):',
        '    if name == ".." or "/" in name or "\\\\" in name or _EP_DRIVE.match(name):',
        GATE,
    ),
    p(
        "g05",
        META,
        '    name = line.partition("=")[0].strip() if "=" in line else ""',
        '    name = line.partition("=")[0] if "=" in line else ""',
        GATE,
    ),
    p("g06", META, "or _EP_DRIVE.match(name):", "or _EP_DRIVE.fullmatch(name):", GATE),
    # ------------------------------------------------------------------ hub.py: the online paths
    p(
        "h01",
        HUBF,
        "    sharded = INDEX in names and SINGLE not in names",
        "    sharded = INDEX in names",
        HUBO,
    ),
    p(
        "h02",
        HUBF,
        "    if SINGLE not in top and INDEX not in top:",
        "    if not any(n.endswith((SINGLE, INDEX)) for n in names):",
        HUBO,
    ),
    p(
        "h03",
        HUBF,
        "    snapshot = _snapshot_download(repo_id, revision=snapshot.name, allow_patterns=wanted",
        "    snapshot = _snapshot_download(repo_id, revision=revision, allow_patterns=wanted",
        HUBO,
    ),
    p("h04", HUBF, '    top = [n for n in names if "/" not in n]', "    top = list(names)", HUBO),
    p(
        "h05",
        HUBF,
        '    if getattr(info, "gated", False) and not accept_license:',
        '    if getattr(info, "gated", False) == "manual" and not accept_license:',
        HUBO,
    ),
    p(
        "h06",
        HUBF,
        "        return _from_cache(repo_id, revision, why, offline=False, accept_license=accept_license)",
        "        return _from_cache(repo_id, revision, why, offline=True, accept_license=accept_license)",
        HUBO,
    ),
    p(
        "h07",
        HUBF,
        '        again += " --accept-license" if accept_license else ""',
        '        again += ""',
        HUBO,
    ),
    p(
        "h08",
        HUBF,
        '    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:\n        raise ModelNotFoundError(f"{repo_id}: {exc}")',  # noqa: E501
        '    except RepositoryNotFoundError as exc:\n        raise ModelNotFoundError(f"{repo_id}: {exc}")',
        HUBO,
    ),
    # ------------------------------------------------------------------ certify: plan, provenance, write_table
    p(
        "c01",
        CERTIFY,
        "            for ranges in RECORDS[kernel].interpreter_domains or (unbounded,):",
        "            for ranges in (unbounded,):",
        CERT,
    ),
    p(
        "c02",
        CERTIFY,
        "        raise UsageError(str(exc.args[0])) from exc\n    for kernel in kernels:",
        "        needed = {}\n    for kernel in kernels:",
        CERT,
    ),
    p("c03", CERTIFY, '            raise OSError("the commit was given")', "            pass", PROV),
    p(
        "c04",
        CERTIFY,
        '            ["git", "status", "--porcelain", "--", "neurobrix", "conformance"],',
        '            ["git", "status", "--porcelain", "--", "neurobrix"],',
        PROV,
    ),
    p("c05", CERTIFY, "        if pdl:\n", "        if not pdl:\n", PROV),
    p(
        "c06",
        CERTIFY,
        "    ordered = sorted(entries, key=lambda e: (e.domain.dtypes, [(lo, hi or 0) for _, lo, hi in e.domain.ranges]))",  # noqa: E501
        "    ordered = list(entries)",
        WRT,
    ),
    p(
        "c07",
        CERTIFY,
        "    for entry in ordered:  # kept from the table being added to",
        "    for entry in ordered[1:]:  # kept from the table being added to",
        WRT,
    ),
    # ------------------------------------------------------------------ check: conforms
    p(
        "k01",
        CHECK,
        "            if failing or not is_out_of_memory(exc):",
        "            if not is_out_of_memory(exc):",
        CONF,
    ),
    p(
        "k02",
        CHECK,
        "            result.worst_ratio = max(result.worst_ratio, verdict.ratio)",
        "            result.worst_ratio = verdict.ratio",
        CONF,
    ),
    p(
        "k03",
        CHECK,
        "        if not failing:\n            result.examples += 1",
        "        if True:\n            result.examples += 1",
        CONF,
    ),
    p(
        "k04",
        CHECK,
        "            and all(lo <= shape[d] and (hi is None or shape[d] <= hi) for d, (lo, hi) in domain.items())",
        "            and all(lo <= shape[d] and (hi is None or shape[d] < hi) for d, (lo, hi) in domain.items())",
        CONF,
    ),
]
