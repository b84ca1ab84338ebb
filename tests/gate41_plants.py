"""Gate mutation round 41's planted bugs (not a test file): bugs planted one at a time in the checks gate round 38
pinned, which no mutation round had planted in (a tar member that is no file declaring content, G312; an old-style
folder, a regular-file header named with a trailing '/', G310; a pax header's bytes after its records, G312; core
metadata with a second Version or a byte order mark, G404; Requires-Dist markers, G406; WHEEL's Wheel-Version, G407),
and in gate functions rounds 24 to 39 planted none in (counted by the function around each anchor in today's code):
archive.py's member safety pass (kinds, aliases, the ratio bound), names.py's length bound, decoding, aliases, short
names and device names, the metadata and entry points size bounds, the package's __version__, the zip reader's local
header comparison, extra-record times and padding bound, and the gzip header's OS byte. For tests/planted24_driver.py
(run as `python tests/gate41_driver.py COPY RESULTS`): id, file, the exact text replaced, its replacement, and the
gate's tests that exercise it. The outcome of each: tests/test_gate_round41.py's docstring."""

from __future__ import annotations

from gate37_plants import GATE, HOSTILE, UNITS, G, H, R, _p  # noqa: F401

R = {**R, 38: "tests/test_gate_round38.py", 39: "tests/test_gate_round39.py"}


def R38(*names: str) -> list[str]:
    """Tests of round 38's file, by name."""
    return [f"{R[38]}::test_{n}" for n in names]


HIDDEN = R38("a_member_that_is_no_file_declaring_a_hidden_member_as_content_is_refused")
PAX_JUNK = R38("a_pax_header_with_bytes_after_its_records_is_refused")
META38 = R38(
    "core_metadata_read_two_ways_is_refused_in_a_wheel",
    "core_metadata_read_two_ways_is_refused_in_an_sdist",
    "what_the_metadata_edits_are_to_their_readers",
)
WHEEL_VERSION = R38("another_wheel_version_is_refused")
TAR_KINDS = [
    UNITS,
    *HIDDEN,
    *H(
        "sdist_member_types_tarfile_unpacks_its_own_way_are_refused",
        "sdist_tar_that_hides_or_redirects_a_member_is_refused",
    ),
    *H("sdist_members_tarfile_names_alike_are_judged_alike"),
]
METADATA = [
    UNITS,
    *META38,
    *H(
        "metadata_marker_that_breaks_the_parser_is_a_finding",
        "metadata_that_differs_from_pyproject_is_refused",
        "metadata_value_of_other_non_ascii_bytes_is_refused",
        "metadata_whose_fields_parsers_split_differently_is_refused",
        "sdist_pkg_info_with_an_added_requirement_is_refused",
    ),
    R[36],
    "tests/test_gate_planted29.py",
]
WHEEL_FILE = [
    UNITS,
    *WHEEL_VERSION,
    *H("wheel_file_that_lies_is_refused", "lone_wheel_files_a_build_writes_are_held_to_its_bytes"),
    R[28],
    R[35],
]
NAMES = [
    UNITS,
    *H(
        "member_name_judged_from_its_raw_bytes",
        "name_that_aliases_on_another_file_system_is_refused",
        "members_that_collide_on_case_or_unicode_form_are_refused",
        "sdist_members_tarfile_names_alike_are_judged_alike",
        "dot_and_double_slash_spellings_of_the_tables_are_refused",
    ),
    *G("unsafe_member_names_are_refused", "members_differing_only_in_case_are_refused"),
    R[19],
    R[29],
    R[35],
    R[37],
]
SAFETY = [
    UNITS,
    *H(
        "sdist_member_types_tarfile_unpacks_its_own_way_are_refused",
        "members_that_collide_on_case_or_unicode_form_are_refused",
        "name_that_aliases_on_another_file_system_is_refused",
        "compression_bomb_is_refused_within_bounds",
        "sdist_bombs_are_abandoned_while_streaming",
    ),
    *HIDDEN,
    R[35],
]
BOUNDS = [UNITS, R[19], R[37]]
VERSION = [
    UNITS,
    *G("a_package_version_other_than_the_wheel_version_is_refused"),
    "tests/test_gate_round21.py",
]
ZIP_LOCAL = [
    UNITS,
    *H(
        "zip_that_tools_read_differently_is_refused",
        "local_extra_records_that_differ_from_the_central_ones_are_refused",
    ),
    *H("the_same_wheel_written_by_info_zip_passes"),
    *R38("a_central_directory_listing_one_local_entry_twice_is_refused"),
    R[20],
    R[35],
]
ZIP_TIMES = [
    UNITS,
    *H("zip_dos_times_that_name_no_moment_are_refused", "zip_dos_times_at_the_edges_of_their_ranges_pass"),
    *H("the_same_wheel_written_by_info_zip_passes", "local_extra_records_as_info_zip_writes_them_pass"),
    R[20],
    R[39],
]
PADDING = [
    UNITS,
    *H("a_wheel_member_in_a_padded_deflate_stream_is_refused", "the_same_wheel_written_by_info_zip_passes"),
    R[39],
]
GZIP = [UNITS, *H("sdist_gzip_header_bytes_the_format_leaves_undefined_are_refused"), R[27]]

T, N, A, M, W, Z = (
    "gate/tarstrict.py",
    "gate/names.py",
    "gate/archive.py",
    "gate/metadata.py",
    "gate/wheel.py",
    "gate/zipstrict.py",
)
SIZED = '            if kind != "file" and size:\n'

PLANTS = [
    # -- round 38's checks: a member that is no file declaring content (G312) ------------------------------------------
    _p("K1", T, SIZED, '            if kind not in ("file", "dir") and size:\n', TAR_KINDS),
    _p("K2", T, SIZED, '            if kind != "file" and size > BLOCK:\n', TAR_KINDS),
    _p("K3", T, SIZED, '            if kind == "dir" and size:\n', TAR_KINDS),
    _p(
        "K4",
        T,
        '                    Check.G312,\n                    raw_name,\n                    f"a {kind} declaring',
        '                    Check.G313,\n                    raw_name,\n                    f"a {kind} declaring',
        TAR_KINDS,
    ),
    # -- an old-style folder: a regular file named with a trailing '/', read as a name with an empty component (G310) --
    _p(
        "K5",
        A,
        'names.name_problems(name, m.kind == "dir")',
        'names.name_problems(name, name.endswith("/"))',
        TAR_KINDS + NAMES[1:2],
    ),
    _p(
        "K6",
        N,
        'body = name[:-1] if is_dir and name.endswith("/") else name',
        'body = name.removesuffix("/")',
        TAR_KINDS + NAMES[1:],
    ),
    _p("K7", N, 'if "" in parts or "." in parts:', 'if "." in parts:', TAR_KINDS + NAMES[1:]),
    # -- a pax header's bytes after its records (G312) -----------------------------------------------------------------
    _p(
        "K8",
        T,
        "        if space < 0 or not payload[pos:space].isdigit() or space - pos > 12:\n",
        "        if space < 0:\n            break\n        if not payload[pos:space].isdigit() or space - pos > 12:\n",
        [UNITS, *PAX_JUNK, *H("sdist_pax_value_an_unpacker_cannot_apply_is_refused"), R[24]],
    ),
    # -- core metadata read two ways (G404), markers (G406) ------------------------------------------------------------
    _p("C1", M, "Metadata.from_email(data, validate=True)", "Metadata.from_email(data, validate=False)", METADATA),
    _p(
        "C2",
        M,
        "    if message.get_unixfrom() is not None or message.defects:\n",
        "    if message.get_unixfrom() is not None:\n",
        METADATA,
    ),
    _p(
        "C3",
        M,
        'archive.fail(Check.G404, path, f"not valid core metadata: {why}")',
        'archive.fail(Check.G406, path, f"not valid core metadata: {why}")',
        METADATA,
    ),
    _p(
        "C4",
        M,
        "    why = _split_one_way(data)\n",
        '    why = _split_one_way(data.removeprefix(b"\\xef\\xbb\\xbf"))\n',
        METADATA,
    ),
    _p(
        "C5",
        M,
        "into.setdefault(key, Counter())[value] += 1",
        'into.setdefault(key, Counter())[value.split(b";")[0]] += 1',
        METADATA,
    ),
    _p(
        "C6",
        M,
        "    if data == expected:\n        return []\n",
        '    if data.replace(b"\\r\\n", b"\\n") == expected:\n        return []\n',
        METADATA,
    ),
    # -- WHEEL's Wheel-Version (G407) ----------------------------------------------------------------------------------
    _p(
        "V1",
        M,
        "        if fields.get(key) != values:\n",
        '        if fields.get(key, [""])[0].split(".")[0] != values[0].split(".")[0]:\n',
        WHEEL_FILE,
    ),
    _p(
        "V2",
        M,
        "if len(archive.findings) > found or data is None or data == expected:\n        return\n    generator",
        "if len(archive.findings) >= found or data is None or data == expected:\n        return\n    generator",
        WHEEL_FILE,
    ),
    _p(
        "V3",
        M,
        '_WHEEL_LINE = re.compile(rb"(Wheel-Version|Generator|Root-Is-Purelib|Tag): [!-~]([ -~]*[!-~])?")',
        '_WHEEL_LINE = re.compile(rb"(Wheel-Version|Generator|Root-Is-Purelib|Tag): [!-~]([ -~]*[!-~])?", re.I)',
        WHEEL_FILE,
    ),
    # -- archive.py's safety pass --------------------------------------------------------------------------------------
    _p(
        "S1",
        A,
        'if m.kind in ("symlink", "hardlink", "other"):',
        'if m.kind in ("symlink", "other"):',
        SAFETY + TAR_KINDS[1:],
    ),
    _p(
        "S2",
        A,
        "first = seen.setdefault(names.destination_key(name), name)",
        "first = seen.setdefault(name.casefold(), name)",
        SAFETY + NAMES[1:],
    ),
    _p(
        "S3",
        A,
        "m.size >= limits.ratio_from and m.size > limits.ratio * max(m.compressed, 1)",
        "m.size > limits.ratio_from and m.size > limits.ratio * max(m.compressed, 1)",
        SAFETY,
    ),
    # -- names.py: the length bound, decoding, aliases, short names, device names --------------------------------------
    _p(
        "N1",
        N,
        'longest = max(len(part.encode()) for part in name.split("/"))',
        'longest = max(len(part) for part in name.split("/"))',
        NAMES,
    ),
    _p(
        "N2",
        N,
        "    if longest <= NAME_MAX and size <= PATH_MAX:\n",
        "    if longest <= NAME_MAX or size <= PATH_MAX:\n",
        NAMES,
    ),
    _p(
        "N3",
        N,
        'part = part.split(":", 1)[0].rstrip(". ")',
        'part = part.split(":", 1)[0].rstrip(".")',
        NAMES,
    ),
    _p("N4", N, '        return raw.decode("utf-8"), ""', '        return raw.decode("utf-8", "replace"), ""', NAMES),
    _p("N5", N, "if not utf8_flag and not raw.isascii():", "if utf8_flag and not raw.isascii():", NAMES),
    _p("N6", N, '_SHORT_NAME = re.compile(r"~\\d")', '_SHORT_NAME = re.compile(r"~1")', NAMES),
    _p("N7", N, '_DRIVE = re.compile(r"^[A-Za-z]:")', '_DRIVE = re.compile(r"^[A-Z]:")', NAMES),
    _p(
        "N8",
        N,
        '*(f"com{i}" for i in range(10)),',
        '*(f"com{i}" for i in range(1, 10)),',
        NAMES,
    ),
    # -- the metadata and entry points size bounds ---------------------------------------------------------------------
    _p(
        "B1",
        M,
        "    bound = metadata_bound(declared.metadata)\n",
        "    bound = metadata_bound(data)\n",
        BOUNDS,
    ),
    _p(
        "B2",
        M,
        "    bound = metadata_bound(expected)\n    if len(data) > bound:  # as core metadata",
        "    bound = metadata_bound(data)\n    if len(data) > bound:  # as core metadata",
        BOUNDS,
    ),
    # -- the package's __version__ -------------------------------------------------------------------------------------
    _p(
        "P1",
        W,
        "elif not _is_version(found) or Version(found) != version:",
        "elif _is_version(found) and Version(found) != version:",
        VERSION,
    ),
    _p(
        "P2",
        W,
        "                    found = node.value.value\n",
        "                    found = found or node.value.value\n",
        VERSION,
    ),
    # -- the zip reader: the local header, extra-record times, the padding bound ---------------------------------------
    _p(
        "Z1",
        Z,
        "    if raw_name != entry.raw_name:\n",
        "    if raw_name.lower() != entry.raw_name.lower():\n",
        ZIP_LOCAL,
    ),
    _p(
        "Z2",
        Z,
        "zip(names, local, central, strict=True) if a != b]",
        'zip(names, local, central, strict=True) if a != b and n not in ("time", "date")]',
        ZIP_LOCAL,
    ),
    _p(
        "Z3",
        Z,
        'return float(struct.unpack_from("<L", data, 4)[0])  # after the access time',
        'return float(struct.unpack_from("<L", data, 0)[0])  # after the access time',
        ZIP_TIMES,
    ),
    _p("Z4", Z, "    dos += (mtime & 0x1F) * 2\n", "    dos += mtime & 0x1F\n", ZIP_TIMES),
    _p(
        "Z5",
        Z,
        "packer = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)",
        "packer = zlib.compressobj(0, zlib.DEFLATED, -zlib.MAX_WBITS)",
        PADDING,
    ),
    # -- the gzip header's operating system byte -----------------------------------------------------------------------
    _p("G1", A, "GZIP_OS = (*range(14), 255)", "GZIP_OS = (*range(15), 255)", GZIP),
]
