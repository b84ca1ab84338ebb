"""Gate mutation round 39's planted bugs (not a test file): bugs planted one at a time in the gate code the earlier
mutation rounds (tests/planted*_plants.py, tests/gate*_plants.py up to round 37) planted least: none had planted in the
strict zip reader (gate/zipstrict.py) or the strict tar reader (gate/tarstrict.py), nor in archive.py's member modes,
owners and attributes, the gzip header's file name, WHEEL's file-name tags or RECORD's layout. For
tests/planted24_driver.py (run as `python tests/gate39_driver.py COPY RESULTS`): id, file, the exact text replaced, its
replacement, and the gate's tests that exercise it (the unit tests, the hostile corpus's tests of its class by name,
the round files of its checks). The outcome of each: tests/test_gate_round39.py's docstring."""

from __future__ import annotations

from gate37_plants import GATE, HOSTILE, UNITS, H, R, _p  # noqa: F401

R = {**R, 38: "tests/test_gate_round38.py"}

ZIP_MODES = [
    UNITS,
    *H(
        "executable_mode_behind_a_dos_host_byte_is_seen",
        "dos_folder_attribute_on_a_file_is_refused",
        "wheel_mode_with_executable_bits_and_no_file_type_is_judged_executable",
        "wheel_member_modes_unzip_applies_are_refused",
        "wheel_made_on_a_host_whose_modes_uv_does_not_read_is_refused",
        "wheel_made_on_ms_dos_passes_unless_a_mode_is_executable",
        "wheel_member_owners_and_group_write_unzip_applies_are_refused",
        "wheel_member_attributes_other_unpackers_apply_are_refused",
        "wheel_member_attributes_writers_set_alike_pass",
        "wheel_member_modes_distlib_applies_as_they_are_are_refused",
    ),
]
TAR_MODES = [
    UNITS,
    *H(
        "sdist_owner_names_are_judged",
        "sdist_member_owners_and_group_write_a_root_unpacker_applies_are_refused",
        "sdist_owner_in_a_ustar_header_under_a_pax_owner_is_refused",
        "sdist_modes_other_unpackers_apply_are_refused",
        "the_same_sdist_written_with_pax_times_passes",
    ),
]
GZIP = [
    UNITS,
    *H(
        "sdist_gzip_header_fields_that_hold_bytes_are_refused",
        "sdist_gzip_header_bytes_the_format_leaves_undefined_are_refused",
        "sdist_of_two_gzip_members_is_refused",
    ),
    R[27],
]
WHEEL_FILE = [
    UNITS,
    *H("wheel_file_that_lies_is_refused", "wheel_named_for_another_platform_is_refused"),
    *H("wheel_named_with_a_build_tag_is_refused", "lone_wheel_files_a_build_writes_are_held_to_its_bytes"),
    R[35],
    R[28],
]
RECORD = [
    UNITS,
    *H(
        "record_rows_installers_read_differently_are_refused",
        "lone_wheel_files_a_build_writes_are_held_to_its_bytes",
        "record_size_with_a_leading_zero_is_refused",
    ),
    R[28],
    R[35],
]

# Each plant runs against the tests of its own check, by name: a plant that survived its class's whole list (the lists
# above, T1's of 251 tests) took 170 s on this machine. A survivor was then run with --with against
# tests/test_gate_round39.py (each caught there), T16 against tests/test_gate_round24.py (caught).
ZIP_END = [UNITS, *H("zip_that_tools_read_differently_is_refused", "junk_members_past_the_limit_make_one_finding")]
ZIP_HEADERS = [
    UNITS,
    *H("zip_header_bytes_the_format_reserves_are_refused", "zip_that_tools_read_differently_is_refused"),
    *H("the_same_wheel_written_by_info_zip_passes"),
]
ZIP_TIMES = [
    UNITS,
    *H("zip_dos_times_that_name_no_moment_are_refused", "zip_dos_times_at_the_edges_of_their_ranges_pass"),
    *H("the_same_wheel_written_by_info_zip_passes"),
    R[20],
]
ZIP_EXTRAS = [
    UNITS,
    *H(
        "local_extra_records_that_differ_from_the_central_ones_are_refused",
        "zip_that_tools_read_differently_is_refused",
    ),
    *H("local_extra_records_as_info_zip_writes_them_pass", "the_same_wheel_written_by_info_zip_passes"),
    R[20],
]
ZIP_DATA = [
    UNITS,
    *H("compression_bomb_is_refused_within_bounds", "a_wheel_member_in_a_padded_deflate_stream_is_refused"),
    *H("zip_that_tools_read_differently_is_refused", "a_folder_entry_must_store_an_empty_member"),
]
TAR_STRUCT = [
    UNITS,
    *H("sdist_tar_that_hides_or_redirects_a_member_is_refused", "sdist_bytes_in_block_padding_are_refused"),
    *H(
        "sdist_member_types_tarfile_unpacks_its_own_way_are_refused",
        "sdist_members_tarfile_names_alike_are_judged_alike",
    ),
    R[38],
]
TAR_NUMBERS = [
    UNITS,
    *H("huge_numbers_are_findings_not_crashes", "sdist_header_uv_refuses_and_tarfile_reads_is_refused"),
    *H("sdist_header_tarfile_stops_at_is_refused", "sdist_device_numbers_on_a_file_or_folder_are_refused"),
]
TAR_PAX = [
    UNITS,
    *H("sdist_pax_value_an_unpacker_cannot_apply_is_refused", "sdist_header_time_under_a_pax_time_is_refused"),
    *H("sdist_pax_header_fields_a_ustar_only_unpacker_applies_are_refused"),
    *H("sdist_header_time_as_writers_write_it_under_a_pax_time_passes", "the_same_sdist_written_with_pax_times_passes"),
]

Z, T, A, M, W = "gate/zipstrict.py", "gate/tarstrict.py", "gate/archive.py", "gate/metadata.py", "gate/wheel.py"

PLANTS = [
    # -- the strict zip reader: the archive's end record and directory -------------------------------------------------
    _p(
        "Z1", Z, "    if comment_len:\n        return fatal(", "    if comment_len > 1:\n        return fatal(", ZIP_END
    ),
    _p("Z2", Z, "if disk or cd_disk or disk_entries != entries:", "if disk or disk_entries != entries:", ZIP_END),
    _p(
        "Z6",
        Z,
        "UNZIP_MAX_NEEDED = 20",
        "UNZIP_MAX_NEEDED = 45",
        [UNITS, *H("a_version_needed_that_zipfile_cannot_open_is_refused_by_the_gate_itself"), R[19]],
    ),
    _p("Z8", Z, "mode = external >> 16  #", "mode = (external >> 16) & 0o7777  #", ZIP_MODES),
    _p("Z9", Z, "    if covered < cd_offset:", "    if covered + 1 < cd_offset:", ZIP_END),
    _p(
        "Z10",
        Z,
        "for before, after in zip(listed, listed[1:]):",
        "for before, after in zip(listed, listed[2:]):",
        [UNITS, *H("a_central_directory_in_another_order_than_the_local_entries_is_refused"), R[38]],
    ),
    _p(
        "Z11",
        Z,
        "unknown = flags & ~(_FLAGS_ALLOWED | FLAG_ENCRYPTED | FLAG_DESCRIPTOR)",
        "unknown = flags & ~(_FLAGS_ALLOWED | FLAG_ENCRYPTED | FLAG_DESCRIPTOR) & 0xFF",
        ZIP_HEADERS,
    ),
    _p("Z12", Z, "if flags & 0x0006 and method != DEFLATED:", "if flags & 0x0004 and method != DEFLATED:", ZIP_HEADERS),
    _p("Z13", Z, "if made_by & 0xFF > ZIPFILE_MAX_NEEDED:", "if made_by >> 8 > ZIPFILE_MAX_NEEDED:", ZIP_HEADERS),
    _p("Z15", Z, "    if hour > 23:", "    if hour > 24:", ZIP_TIMES),
    _p(
        "Z16",
        Z,
        "elif not 1 <= day <= calendar.monthrange(year, month)[1]:",
        "elif not 1 <= day <= 31:",
        ZIP_TIMES,
    ),
    _p("Z17", Z, "    if second > 59:", "    if second > 62:", ZIP_TIMES),
    _p("Z18", Z, "abs(dos - seconds - zone) <= 2", "abs(dos - seconds - zone) <= 60", ZIP_TIMES),
    _p("Z19", Z, "ZONES = (-12 * 3600, 14 * 3600)", "ZONES = (-14 * 3600, 14 * 3600)", ZIP_TIMES),
    _p("Z20", Z, "        seen.add(field)\n", "        seen.add(length)\n", ZIP_EXTRAS),
    _p("Z21", Z, "_EXTRA_SHORTEST = {0x5855: 8}", "_EXTRA_SHORTEST = {0x5855: 4}", ZIP_EXTRAS),
    _p(
        "Z23",
        Z,
        "same = local_data[: len(central_data)] == central_data and len(central_data) in (8, len(local_data))",
        "same = local_data[: len(central_data)] == central_data",
        ZIP_EXTRAS,
    ),
    _p(
        "Z24",
        Z,
        "    if zlib.crc32(out) != entry.crc:",
        "    if zlib.crc32(out) != entry.crc and entry.method == DEFLATED:",
        ZIP_DATA,
    ),
    _p("Z26", Z, "if stream.unused_data or pos < len(raw):", "if stream.unused_data:", ZIP_DATA),
    _p("Z27", Z, "elif field == 0x5855 and len(data) > 8:", "elif field == 0x5855 and len(data) > 12:", ZIP_MODES),
    # -- the strict tar reader -----------------------------------------------------------------------------------------
    _p(
        "T1",
        T,
        'if data[start + size : end].strip(b"\\x00"):',
        'if data[start + size : end].strip(b"\\x00 "):',
        TAR_STRUCT,
    ),
    _p("T3", T, "            if block != written:", "            if block[:148] != written[:148]:", TAR_PAX),
    _p("T5", T, 'if kind in ("file", "dir") and link:', 'if kind == "file" and link:', TAR_STRUCT),
    _p("T6", T, 'if fraction[:1] >= b"5"', 'if fraction[:1] > b"5"', TAR_PAX),
    _p("T8", T, '        if block[345:500].strip(b"\\x00"):', '        if block[345:400].strip(b"\\x00"):', TAR_STRUCT),
    _p("T9", T, '    if block[500:].strip(b"\\x00"):', '    if block[500:504] == b"tar\\x00":', TAR_STRUCT),
    _p("T10", T, 'block[156:157] not in (b"3", b"4")', 'block[156:157] not in (b"3", b"4", b"0")', TAR_NUMBERS),
    _p(
        "T11",
        T,
        '_OWNER = re.compile(rb"[!-~]{0,32}")',
        '_OWNER = re.compile(rb"[ -~]{0,32}")',
        TAR_PAX + TAR_MODES[1:2],
    ),
    _p("T13", T, "if field[:1] and field[0] & 0x80:", 'if field[:1] == b"\\x80":', TAR_NUMBERS),
    _p(
        "T14",
        T,
        '_NUMBER = re.compile(rb"([0-7]+)[\\0 ]+|\\0+")',
        '_NUMBER = re.compile(rb"([0-7]+)[\\0 ]*|\\0+")',
        TAR_NUMBERS,
    ),
    _p(
        "T15",
        T,
        '_TIME = re.compile(rb"\\d{1,11}(\\.\\d{1,9})?")',
        '_TIME = re.compile(rb"-?\\d{1,11}(\\.\\d{1,9})?")',
        TAR_PAX,
    ),
    _p("T16", T, "        if key in _PAX_UNWRITTEN:\n", "        if key in _PAX_UNWRITTEN and not value:\n", TAR_PAX),
    # -- archive.py: member modes, owners, attributes, the gzip header's file name -------------------------------------
    _p("A1", A, "ZIP_SPECIAL_MODE = 0o7000 | 0o002", "ZIP_SPECIAL_MODE = 0o7000", ZIP_MODES),
    _p(
        "A2", A, "elif entry.host == 0 and entry.executable:", "elif entry.host == 0 and entry.mode & 0o100:", ZIP_MODES
    ),
    _p("A4", A, '(0o055 if name.endswith("/") else 0o044)', '(0o055 if name.endswith("/") else 0o004)', ZIP_MODES),
    _p(
        "A5",
        A,
        "if mode & GROUP_WRITE and not mode & 0o002:",
        "if mode & GROUP_WRITE and not mode & 0o022:",
        ZIP_MODES + TAR_MODES[1:],
    ),
    _p("A6", A, "            elif owner != (0, 0):", "            elif owner[0] != 0:", ZIP_MODES),
    _p(
        "A7",
        A,
        "return bool(uid or gid or user not in ROOT_NAMES or group not in ROOT_NAMES)",
        "return bool(uid or gid or user not in ROOT_NAMES)",
        TAR_MODES,
    ),
    _p("A8", A, "    elif _not_root(entry.header_owner):", "    elif entry.header_owner[:2] != (0, 0):", TAR_MODES),
    _p(
        "A9",
        A,
        "if attributes & DOS_READ_ONLY and entry.mode and not entry.mode & 0o200:",
        "if attributes & DOS_READ_ONLY:",
        ZIP_MODES,
    ),
    _p(
        "A11",
        A,
        "attributes = entry.attributes & ~(DOS_ARCHIVE | DOS_FOLDER)",
        "attributes = entry.attributes & 0xFF & ~(DOS_ARCHIVE | DOS_FOLDER)",
        ZIP_MODES,
    ),
    _p("A12", A, "    if entry.dos_folder:\n", "    if entry.dos_folder and entry.host == 0:\n", ZIP_MODES),
    _p(
        "A13",
        A,
        'if flag != GZIP_FNAME or value != dist.removesuffix(".gz").encode():',
        'if flag != GZIP_FNAME or value.lower() != dist.removesuffix(".gz").lower().encode():',
        GZIP,
    ),
    # -- WHEEL's tags in the file name, RECORD's layout ----------------------------------------------------------------
    _p("M1", M, "    if tags != frozenset({PURE_TAG}):\n", "    if not tags >= frozenset({PURE_TAG}):\n", WHEEL_FILE),
    _p("W1", W, "    if text != written:\n", '    if text.replace("\\r\\n", "\\n") != written:\n', RECORD),
    _p(
        "W2",
        W,
        "if order != members and sorted(order) == sorted(members):",
        "if order[-1] != record and sorted(order) == sorted(members):",
        RECORD,
    ),
]
