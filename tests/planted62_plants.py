"""Round 60's planted bugs, in code the earlier rounds planted least: the strict tar and zip readers the release gate
judges hostile sdists and wheels with (gate/tarstrict.py, gate/zipstrict.py: the end of a tar, pax headers, owners,
entry comments, the directory's length, extra records and their times, where a member's data may run, the end of a
deflate stream), and the map from a kernel to the files of neurobrix/ops its proofs are bound to
(neurobrix/kernel_source.py: what ``MODULES`` is read as, where an op may be declared, an ``OpSpec`` imported under
another name, relative imports). For tests/planted62_driver.py: id, file, the exact text replaced (found once in its
file, one line), its replacement, and the existing tests a contributor would run for it (the outcome of each:
docs/planted-bugs.md, round 60)."""

from __future__ import annotations

TAR = "gate/tarstrict.py"
ZIP = "gate/zipstrict.py"
SOURCE = "neurobrix/kernel_source.py"
UNITS = "tests/test_gate_units.py"
HOSTILE = "tests/test_gate_hostile.py"


def H(*names: str) -> list[str]:
    """Tests of the hostile corpus, by name."""
    return [f"{HOSTILE}::test_{n}" for n in names]


# the code the syntax trees cannot bind, the kernel -> files map, the digests of this checkout
BINDING = [
    "tests/test_gate_round54.py",
    "tests/test_planted48.py",
    "tests/test_source_binding.py",
    "-k",
    "edit_in_any or comment_in_a_helper or declared_by_keyword or literal_declaration or cannot_bind_is_refused or "
    "digests_of_this_checkout or digest_sees or file_edited or relative_imports or kernel_maps or prefix_is_other or "
    "digest_follows or each_kernel_is_bound or awaiting or kernel_edited_after or run_refuses",
]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the strict tar reader
    # t01: the block after a zero block not looked at (the zero block compared with itself): a lone zero block, then
    # an empty member, read as the end (tarfile stops there, `tar -i` reads on)
    p(
        "t01",
        TAR,
        "if data[pos + BLOCK : pos + 2 * BLOCK] != bytes(BLOCK):",
        "if data[pos : pos + BLOCK] != bytes(BLOCK):",
        [UNITS, *H("sdist_tar_that_hides_or_redirects_a_member_is_refused")],
    ),
    # t02: what follows the end-of-archive marker judged from one block late (a header there unjudged)
    p(
        "t02",
        TAR,
        "rest = data[pos + 2 * BLOCK :]",
        "rest = data[pos + 3 * BLOCK :]",
        [UNITS, *H("sdist_tar_that_hides_or_redirects_a_member_is_refused")],
    ),
    # t03: a second pax header in a row taken (the first's records, which tarfile merges, unjudged)
    p(
        "t03",
        TAR,
        'raise _Fatal(Check.G312, raw_name, "two pax headers in a row")',
        "pax_records = {}",
        [
            UNITS,
            *H(
                "sdist_header_uv_refuses_and_tarfile_reads_is_refused",
                "sdist_owner_in_a_ustar_header_under_a_pax_owner_is_refused",
            ),
        ],
    ),
    # t04: the ustar time under a pax time compared for files only (a folder's said two ways)
    p(
        "t04",
        TAR,
        'if pax_pending is not None and "mtime" in pax_records:',
        'if pax_pending is not None and "mtime" in pax_records and kind == "file":',
        [UNITS, *H("sdist_header_time_under_a_pax_time_is_refused")],
    ),
    # t05: a pax header without gid given the header's uid for its gid (a group no root unpacker is refused for)
    p(
        "t05",
        TAR,
        'int(pax_records.get("gid", owner[1])),',
        'int(pax_records.get("gid", owner[0])),',
        [UNITS, *H("sdist_member_owners_and_group_write_a_root_unpacker_applies_are_refused")],
    ),
    # t06: pax keys compared case-insensitively (`MTIME`, a record every unpacker ignores, taken for the time)
    p(
        "t06",
        TAR,
        'key = key_bytes.decode("utf-8", "replace")',
        'key = key_bytes.decode("utf-8", "replace").lower()',
        [
            UNITS,
            *H(
                "sdist_tar_that_hides_or_redirects_a_member_is_refused",
                "sdist_header_uv_refuses_and_tarfile_reads_is_refused",
            ),
        ],
    ),
    # t07: a pax record set twice refused only when its two values differ (uv refuses the sdist either way)
    p(
        "t07",
        TAR,
        "        if key in seen:",
        "        if key in seen and seen[key] != value:",
        [UNITS, *H("sdist_header_uv_refuses_and_tarfile_reads_is_refused")],
    ),
    # ------------------------------------------------------------------ the strict zip reader
    # z01: an entry comment allowed on a folder entry
    p(
        "z01",
        ZIP,
        "        if comment_len:\n",
        '        if comment_len and not raw_name.endswith(b"/"):\n',
        [UNITS, "tests/test_gate_round35.py"],
    ),
    # z02: bytes after the last directory entry refused only past the end record (never: they are before it)
    p("z02", ZIP, "    if pos != end:", "    if pos > end:", [UNITS]),
    # z04: a 5-byte extended timestamp's time compared only where its flags name a modification time (the zip crate
    # reads it as one whatever its flags)
    p(
        "z04",
        ZIP,
        "if field == 0x5455 and len(data) >= 5 and (data[0] & 1 or len(data) == 5):",
        "if field == 0x5455 and len(data) >= 5 and data[0] & 1:",
        [UNITS, "tests/test_gate_round20.py", "tests/test_gate_round39.py"],
    ),
    # z05: an NTFS record's access time read for its modification time
    p(
        "z05",
        ZIP,
        'return float(struct.unpack_from("<Q", data, 8)[0]) / 10**7 - NTFS_EPOCH',
        'return float(struct.unpack_from("<Q", data, 16)[0]) / 10**7 - NTFS_EPOCH',
        [UNITS, "tests/test_gate_round20.py", "tests/test_gate_round39.py"],
    ),
    # z06: 1 to 3 bytes after an extra field's last record (no record header) not read
    p(
        "z06",
        ZIP,
        "while pos < len(extra) and not problems:",
        "while pos + 4 <= len(extra) and not problems:",
        [UNITS, "tests/test_gate_round20.py"],
    ),
    # z07: a member's data allowed to run into the central directory (up to the end of the file)
    p(
        "z07",
        ZIP,
        "if data_offset + entry.compressed > cd_offset:",
        "if data_offset + entry.compressed > len(data):",
        [UNITS],
    ),
    # z08: a deflate stream without its end taken once it holds the declared bytes
    p(
        "z08",
        ZIP,
        "        if not stream.eof:\n",
        "        if not stream.eof and len(out) < declared:\n",
        [UNITS, "tests/test_gate_round27.py", *H("compression_bomb_is_refused_within_bounds")],
    ),
    # ------------------------------------------------------------------ the kernel -> files map
    # k01: an OpSpec whose name is not written out looked for in the op modules only (a helper's unseen)
    p(
        "k01",
        SOURCE,
        "    for name in sorted(runs):",
        "    for name in sorted(own):",
        BINDING,
    ),
    # k02: a kernel declared outside MODULES (in a helper only) taken
    p(
        "k02",
        SOURCE,
        "if len(declared) > 1 or declared[0] not in own:",
        "if len(declared) > 1:",
        BINDING,
    ),
    # k03: a relative import resolved one level too high (`from .linear import x` leaves neurobrix/ops)
    p(
        "k03",
        SOURCE,
        "base = package[: len(package) - (level - 1)] if level else []",
        "base = package[: len(package) - level] if level else []",
        BINDING,
    ),
    # k04: an OpSpec imported under another name not followed (its calls declare nothing)
    p(
        "k04",
        SOURCE,
        'callers |= {a.asname for a in node.names if a.name == "OpSpec" and a.asname}',
        'callers |= {a.name for a in node.names if a.name == "OpSpec"}',
        BINDING,
    ),
    # k05: MODULES bound again (augmented, in a loop, deleted) not counted: its one assignment read
    p(
        "k05",
        SOURCE,
        "if len(bindings) == 1 and len(assigned) == 1:",
        "if len(assigned) == 1:",
        BINDING,
    ),
    # k06: a MODULES tuple with a name not written out read as its literal names
    p(
        "k06",
        SOURCE,
        "if isinstance(value, ast.Tuple) and all(",
        "if isinstance(value, ast.Tuple) and any(",
        BINDING,
    ),
]
