"""The forty-third round against the release gate: deflate streams at the edges of RFC 1951, read by more than one
inflater.

Every earlier round left open "whether an inflater other than zlib reads any stream zlib takes otherwise" (round 38):
the gate inflates every wheel member and the sdist's gzip stream with zlib, and the installers and unpackers do not all
use zlib. Info-ZIP's ``unzip`` (Debian's 6.0, built with Deflate64) and GNU gzip 1.12 (which GNU tar runs for ``-z``)
carry inflaters of their own, uv 0.13.9 uses a Rust one, pip (23.2 here, and 26.3 run by hand), ``installer``, tarfile
and twine use zlib through Python. Each stream here was written bit by bit by the small deflate writer below, every
other byte of the dist the project's own, and read by each of them. Classes:

1. codings at RFC 1951's edges that zlib reads, most of which zlib never writes: a block of fixed Huffman codes; the
   length 258 sent as code 284 with all five extra bits set, past the 227-257 RFC 1951 gives that code (zlib's own
   tables decode it as 258); a block whose distance tree has one code of one bit, or no code at all; a run of zero
   code lengths sent by one repeat code across the literal and the distance code lengths; a block holding its end
   code alone; stored, fixed and dynamic blocks in one stream; matches reaching back the whole 32 KiB window (zlib
   writes none past 32,506). Each wheel passes the gate (within G311's margin over zlib's fastest setting), and
   zipfile, pip 23.2's ``install_wheel``, ``installer`` and ``unzip`` install the repository's bytes from it, uv
   0.13.9 too, and pip 26.3 (run by hand on every one). Four of them in the sdist's gzip stream pass, and tarfile, GNU
   gzip and uv read the project's tar from them. Nothing reads them otherwise: harmless, pinned (a gate refusing them,
   or an installer reading them otherwise, would show here);
2. streams zlib refuses and an older inflater reads on: a distance reaching past the start of the output, which
   ``unzip`` (64 KiB window) and GNU gzip (32 KiB) copy from their window, zeros, or in ``unzip`` extracting a whole
   wheel the previous member's bytes; and a code length repeat (code 16) with no code length before it, a repeat of 0
   to both. Shown: ``unzip`` extracting the wheel wrote ``neurobrix/stack.py``, its first 24 bytes taken from
   ``neurobrix/schema.py``'s window, byte for byte the repository's file, and a member opening on the repeat;
   GNU gzip and GNU tar unpacked an sdist whose gzip stream holds either, file for file the project's sdist; zlib,
   so pip, ``installer``, tarfile, twine and uv, refuse each. One wheel, one sdist read two ways. The wheel members
   were refused already (G309); the sdist was not judged: the gate answered "not a gzip stream, so not an sdist"
   (exit 2) for any stream zlib failed on within its first MiB, a gzip header and all, as for a file that is no
   gzip at all, and named the same error a finding (G312) past it. Fixed: a deflate stream behind a gzip header is
   an sdist's, refused (G312) wherever zlib fails on it, and both findings say when the error is one Info-ZIP's
   ``unzip`` and GNU gzip read on. A length code 286 and a distance code 30, which no inflater reads, are refused
   alike (G309, G312).

uv 0.13.9 is run where it is on PATH (not in CI): it installs the wheels and builds the sdists of class 1 (``uv pip
install --no-build-isolation``, offline) as the others do, and refuses every stream of class 2.

Left open: the free bits of a deflate stream's coding within G311's margin (which codes a writer picks, bits after
the last block), as before.
"""

from __future__ import annotations

import gzip
import heapq
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, install_wheel, raw_zip, wheel_members
from pip._internal.models.scheme import Scheme
from pip._internal.operations.install.wheel import install_wheel as pip_install_wheel
from test_gate_hostile import built, judge, refused_with

from gate.checks import GateError

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

# -- a raw deflate writer (RFC 1951), one block at a time --------------------------------------------------------------

LENGTH_BASE = (3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195)
LENGTH_BASE += (227,)
LENGTH_EXTRA = (0,) * 8 + (1,) * 4 + (2,) * 4 + (3,) * 4 + (4,) * 4 + (5,) * 4
DISTANCE_BASE = (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073)
DISTANCE_BASE += (4097, 6145, 8193, 12289, 16385, 24577)
DISTANCE_EXTRA = (0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13)
CODE_LENGTH_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
END = 256
Token = tuple[int, int]  # (byte, 0) a literal, (length, distance) a match


class Bits:
    """Bits packed as deflate packs them: values from their least significant bit, Huffman codes from their most."""

    def __init__(self) -> None:
        self.value = 0
        self.count = 0
        self.out = bytearray()

    def put(self, value: int, n: int) -> None:
        self.value |= value << self.count
        self.count += n
        while self.count >= 8:
            self.out.append(self.value & 0xFF)
            self.value >>= 8
            self.count -= 8

    def code(self, code: int, n: int) -> None:
        self.put(int(format(code, f"0{n}b")[::-1], 2), n)

    def align(self) -> None:
        self.put(0, -self.count % 8)

    def bytes(self) -> bytes:
        return bytes(self.out) + (bytes([self.value]) if self.count else b"")


def canonical(lengths: list[int]) -> list[int]:
    """The canonical Huffman codes of ``lengths`` (RFC 1951 3.2.2)."""
    count = [0] * 16
    for n in lengths:
        count[n] += 1
    count[0] = 0
    following, code = [0] * 16, 0
    for bits in range(1, 16):
        code = (code + count[bits - 1]) << 1
        following[bits] = code
    codes = [0] * len(lengths)
    for symbol, n in enumerate(lengths):
        if n:
            codes[symbol], following[n] = following[n], following[n] + 1
    return codes


def huffman(freqs: list[int], limit: int) -> list[int]:
    """Complete code lengths for the symbols used, at most ``limit`` bits (balanced where Huffman's is deeper)."""
    used = [s for s, f in enumerate(freqs) if f]
    lengths = [0] * len(freqs)
    if len(used) == 1:
        lengths[used[0]] = 1
        return lengths
    heap = [(freqs[s], s, (s,)) for s in used]
    heapq.heapify(heap)
    order = len(freqs)
    while len(heap) > 1:
        f1, _, a = heapq.heappop(heap)
        f2, _, b = heapq.heappop(heap)
        for s in a + b:
            lengths[s] += 1
        heapq.heappush(heap, (f1 + f2, order, a + b))
        order += 1
    if max(lengths) <= limit:
        return lengths
    depth = (len(used) - 1).bit_length()
    shallow = (1 << depth) - len(used)
    return [0 if not f else depth - 1 if used.index(s) < shallow else depth for s, f in enumerate(freqs)]


def tokens(
    data: bytes, start: int = 0, stop: int | None = None, *, matches: bool = True, distance: int | None = None
) -> list[Token]:
    """Greedy LZ77 of ``data[start:stop]``, matches reaching back into all of ``data`` before (only at ``distance``
    where given)."""
    stop = len(data) if stop is None else stop
    seen: dict[bytes, list[int]] = {}
    for k in range(max(0, start - 32768), start):
        seen.setdefault(data[k : k + 3], []).append(k)
    out: list[Token] = []
    i = start
    while i < stop:
        best = (0, 0)
        if matches and i + 3 <= stop:
            candidates = [i - distance] if distance else seen.get(data[i : i + 3], [])[-48:]
            for j in reversed(candidates):
                if j < 0 or i - j > 32768:
                    continue
                n = 0
                while n < 258 and i + n < stop and data[j + n] == data[i + n]:
                    n += 1
                if n > best[0]:
                    best = (n, i - j)
        step = best[0] if best[0] >= 3 else 1
        for k in range(i, i + step):
            seen.setdefault(data[k : k + 3], []).append(k)
        out.append(best if step > 1 else (data[i], 0))
        i += step
    return out


def length_symbol(length: int, long_258: bool) -> tuple[int, int, int]:
    """(symbol, extra bits, their value) for a match length; 258 as code 284 plus 31 when ``long_258``."""
    if length == 258:
        return (284, 5, 31) if long_258 else (285, 0, 0)
    k = max(k for k, base in enumerate(LENGTH_BASE) if base <= length)
    return 257 + k, LENGTH_EXTRA[k], length - LENGTH_BASE[k]


def distance_symbol(distance: int) -> tuple[int, int, int]:
    k = max(k for k, base in enumerate(DISTANCE_BASE) if base <= distance)
    return k, DISTANCE_EXTRA[k], distance - DISTANCE_BASE[k]


def write_tokens(
    bits: Bits, toks: list[Token], lit: list[int], dist: list[int], long_258: bool = False, end: bool = True
) -> None:
    lit_codes, dist_codes = canonical(lit), canonical(dist)
    for length, distance in toks:
        if not distance:
            bits.code(lit_codes[length], lit[length])
            continue
        symbol, extra, value = length_symbol(length, long_258)
        bits.code(lit_codes[symbol], lit[symbol])
        bits.put(value, extra)
        symbol, extra, value = distance_symbol(distance)
        bits.code(dist_codes[symbol], dist[symbol])
        bits.put(value, extra)
    if end:
        bits.code(lit_codes[END], lit[END])


FIXED_LIT = [8] * 144 + [9] * 112 + [7] * 24 + [8] * 8
FIXED_DIST = [5] * 30


def fixed_block(bits: Bits, toks: list[Token], final: bool, long_258: bool = False) -> None:
    bits.put(final, 1)
    bits.put(1, 2)
    write_tokens(bits, toks, FIXED_LIT, FIXED_DIST, long_258)


def dynamic_block(
    bits: Bits,
    toks: list[Token],
    final: bool,
    *,
    dist: list[int] | None = None,
    cross: bool = False,
    repeat_first: bool = False,
) -> None:
    """A block of codes made for ``toks``; ``dist`` the distance code lengths as given; ``cross`` one repeat code (18)
    for a run of zero lengths from the literal code lengths into the distance ones; ``repeat_first`` the first three
    code lengths (zeros) sent as a repeat of the previous one (16), where there is none."""
    lit_freq, dist_freq = [0] * 286, [0] * 30
    for length, distance in toks:
        if distance:
            lit_freq[length_symbol(length, False)[0]] += 1
            dist_freq[distance_symbol(distance)[0]] += 1
        else:
            lit_freq[length] += 1
    lit_freq[END] += 1
    lit = huffman(lit_freq, 15)
    dist = dist if dist is not None else huffman(dist_freq, 15) if any(dist_freq) else [0]
    n_lit = 286 if cross else max(257, max(s for s, n in enumerate(lit) if n) + 1)
    n_dist = max(1, max((s for s, n in enumerate(dist) if n), default=0) + 1)
    lengths = lit[:n_lit] + dist[:n_dist] + [0] * (n_dist - len(dist[:n_dist]))
    sent: list[tuple[int, int, int]] = []  # (code length symbol, extra bits, value)
    i = 0
    if repeat_first:
        assert lengths[:3] == [0, 0, 0]
        sent.append((16, 2, 0))
        i = 3
    while i < len(lengths):
        run = next((j for j in range(i, len(lengths)) if lengths[j]), len(lengths)) - i
        if cross and i < n_lit < i + run and run >= 11:
            sent.append((18, 7, min(run, 138) - 11))
            i += min(run, 138)
            cross = False  # sent once
            continue
        sent.append((lengths[i], 0, 0))
        i += 1
    assert not cross, "no run of zero lengths crosses into the distance code lengths"
    cl_freq = [0] * 19
    for symbol, _, _ in sent:
        cl_freq[symbol] += 1
    cl = huffman(cl_freq, 7)
    cl_sent = [cl[s] for s in CODE_LENGTH_ORDER]
    n_cl = max(4, max(k for k, n in enumerate(cl_sent) if n) + 1)
    bits.put(final, 1)
    bits.put(2, 2)
    bits.put(n_lit - 257, 5)
    bits.put(n_dist - 1, 5)
    bits.put(n_cl - 4, 4)
    for n in cl_sent[:n_cl]:
        bits.put(n, 3)
    cl_codes = canonical(cl)
    for symbol, extra, value in sent:
        bits.code(cl_codes[symbol], cl[symbol])
        bits.put(value, extra)
    write_tokens(bits, toks, lit[:n_lit], lengths[n_lit:])


def stored_block(bits: Bits, data: bytes, final: bool) -> None:
    bits.put(final, 1)
    bits.put(0, 2)
    bits.align()
    bits.put(len(data), 16)
    bits.put(len(data) ^ 0xFFFF, 16)
    for byte in data:
        bits.put(byte, 8)


def then_the_rest(bits: Bits, data: bytes, start: int) -> bytes:
    """The blocks written so far, an empty stored block to the byte (as zlib's sync flush writes it), then zlib's own
    stream of ``data[start:]``."""
    stored_block(bits, b"", False)
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return bits.bytes() + packer.compress(data[start:]) + packer.flush()


def inflate(stream: bytes) -> bytes:
    out = zlib.decompressobj(-zlib.MAX_WBITS)
    data = out.decompress(stream)
    assert out.eof and not out.unused_data
    return data


# -- 1. codings at RFC 1951's edges that zlib reads --------------------------------------------------------------------

MEMBER = "neurobrix/cli.py"
LONG_MATCHES = "neurobrix/_schemas/tracked_format.py"  # repeats of 258 bytes and more


def _one_distance(data: bytes) -> bytes:
    bits = Bits()
    dynamic_block(bits, tokens(data, 0, 2048, distance=1), False, dist=[1])
    dynamic_block(bits, tokens(data, 2048), True)
    return bits.bytes()


def _no_distance(data: bytes) -> bytes:
    bits = Bits()
    dynamic_block(bits, tokens(data, 0, 1024, matches=False), False)
    dynamic_block(bits, tokens(data, 1024), True)
    return bits.bytes()


def _end_code_alone(data: bytes) -> bytes:
    bits = Bits()
    dynamic_block(bits, [], False)
    dynamic_block(bits, tokens(data), True)
    return bits.bytes()


def _cross(data: bytes, stop: int | None = None) -> bytes:
    """One block over ``data[:stop]`` (all of it by default) whose code lengths send one run of zeros across the two
    sets: matches kept only where distance >= 5 and length <= 34, so distance codes 0-3 and lengths 273-285 go
    unused; then the rest as zlib writes it."""
    bits = Bits()
    flat: list[Token] = []
    i = 0
    for length, distance in tokens(data, 0, stop):
        if distance and (distance < 5 or length > 34):
            flat.extend((b, 0) for b in data[i : i + length])
        else:
            flat.append((length, distance))
        i += length if distance else 1
    dynamic_block(bits, flat, stop is None, cross=True)
    return bits.bytes() if stop is None else then_the_rest(bits, data, stop)


def _fixed(data: bytes) -> bytes:
    bits = Bits()
    fixed_block(bits, tokens(data), True)
    return bits.bytes()


def _long_258(data: bytes) -> bytes:
    toks = tokens(data)
    assert any(length == 258 for length, distance in toks if distance)
    bits = Bits()
    fixed_block(bits, toks, True, long_258=True)
    return bits.bytes()


def _mixed(data: bytes) -> bytes:
    bits = Bits()
    stored_block(bits, data[:100], False)
    fixed_block(bits, tokens(data, 100, 1000), False)
    dynamic_block(bits, tokens(data, 1000), True)
    return bits.bytes()


WHOLE_WINDOW = "neurobrix/_schemas/proofs_format.py"  # over 32 KiB, with repeats exactly 32768 bytes apart


def _whole_window(data: bytes) -> bytes:
    bits = Bits()
    dynamic_block(bits, tokens(data, 0, 1 << 15), False)
    toks = tokens(data, 1 << 15, (1 << 15) + 4096, distance=1 << 15)
    assert any(distance == 1 << 15 for _, distance in toks)
    dynamic_block(bits, toks, False)
    return then_the_rest(bits, data, (1 << 15) + 4096)


CODINGS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "a block of fixed Huffman codes": (MEMBER, _fixed),
    "length 258 as code 284 with every extra bit set": (LONG_MATCHES, _long_258),
    "a distance tree of one code of one bit": (MEMBER, _one_distance),
    "a block with no distance code": (MEMBER, _no_distance),
    "a repeat of zero lengths across the two code length sets": (MEMBER, _cross),
    "a block holding its end code alone": (MEMBER, _end_code_alone),
    "stored, fixed and dynamic blocks in one stream": (MEMBER, _mixed),
    "matches reaching back the whole window, 32768 bytes": (WHOLE_WINDOW, _whole_window),
}


def _coded_wheel(built: Built, folder: Path, member: str, stream: bytes) -> Path:
    members = wheel_members(built.wheel)
    coded = next(m for m in members if m.name == member.encode())
    coded.compressed = stream
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / built.wheel.name
    path.write_bytes(raw_zip(members))
    return path


def _pip_install(wheel: Path, root: Path) -> Path:
    """``wheel`` installed by pip 23.2's own ``install_wheel`` into ``root/site`` (as round 30 runs it)."""
    scheme = Scheme(
        platlib=str(root / "site"),
        purelib=str(root / "site"),
        headers=str(root / "include"),
        scripts=str(root / "bin"),
        data=str(root),
    )
    pip_install_wheel("neurobrix", str(wheel), scheme, "neurobrix", pycompile=False, warn_script_location=False)
    return root / "site"


def _uv_install(dist: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """``uv pip install`` of a wheel, or of an sdist built by this interpreter's hatchling, offline."""
    uv = shutil.which("uv")
    assert uv is not None
    command = [uv, "pip", "install", "--no-deps", "--offline", "--no-cache", "--no-build-isolation", "--link-mode"]
    command += ["copy", "--python", sys.executable, "--target", str(target), str(dist)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})


def _unzip(wheel: Path, into: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["unzip", "-q", "-o", str(wheel), "-d", str(into)], capture_output=True, timeout=60)


@pytest.mark.parametrize("coding", list(CODINGS))
def test_a_coding_zlib_reads_at_the_edges_passes_and_every_installer_reads_it_alike(
    built: Built, tmp_path: Path, coding: str
) -> None:
    member, coder = CODINGS[coding]
    repository = (REPO / member).read_bytes()
    stream = coder(repository)
    assert inflate(stream) == repository
    wheel = _coded_wheel(built, tmp_path / "dist", member, stream)
    report = judge(wheel)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    with zipfile.ZipFile(wheel) as z:  # pip and installer read members through zipfile
        assert z.read(member) == repository
    assert (_pip_install(wheel, tmp_path / "pip") / member).read_bytes() == repository
    assert (install_wheel(wheel, tmp_path / "installer") / member).read_bytes() == repository
    unzipped = _unzip(wheel, tmp_path / "unzip")  # Info-ZIP's own inflater
    assert unzipped.returncode == 0, unzipped.stderr
    assert (tmp_path / "unzip" / member).read_bytes() == repository
    if shutil.which("uv"):  # uv's Rust inflater (uv 0.13.9 in this round)
        result = _uv_install(wheel, tmp_path / "uv")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "uv" / member).read_bytes() == repository


# -- 2. streams zlib refuses and an older inflater reads on -----------------------------------------------------------

WINDOW_FROM = "neurobrix/schema.py"  # over 32 KiB, just before stack.py in the wheel: unzip's window holds it
PAST_THE_START = "neurobrix/stack.py"


def _past_the_start(built: Built) -> bytes:
    """``stack.py``'s stream whose opening bytes are a match reaching past the member's own start into the 64 KiB
    window ``unzip`` keeps from the member before (``schema.py``'s bytes), then the rest as zlib writes it."""
    names = [m.name.decode() for m in wheel_members(built.wheel)]
    assert names[names.index(PAST_THE_START) - 1] == WINDOW_FROM
    before, data = (REPO / WINDOW_FROM).read_bytes(), (REPO / PAST_THE_START).read_bytes()
    window = bytearray(1 << 16)  # unzip's window after inflating ``before`` from its first byte
    for at in range(0, len(before), 1 << 16):
        piece = before[at : at + (1 << 16)]
        window[: len(piece)] = piece
    reach = bytes(window[1 << 15 :])  # what a distance of 1 to 32768 reaches from the member's first byte
    n = 3
    while n < 258 and reach.find(data[: n + 1]) >= 0:
        n += 1
    at = (1 << 15) + reach.find(data[:n])
    bits = Bits()
    fixed_block(bits, [(n, (1 << 16) - at)], False)
    return then_the_rest(bits, data, n)


def _repeat_first(data: bytes, stop: int) -> bytes:
    """A first block over ``data[:stop]`` whose code lengths open on a repeat of the previous one (there is none),
    then the rest as zlib writes it."""
    bits = Bits()
    dynamic_block(bits, tokens(data, 0, stop), False, repeat_first=True)
    return then_the_rest(bits, data, stop)


def _open_fixed_block(bits: Bits, literals: bytes) -> None:
    """A fixed block's header and ``literals``, its end code not yet written."""
    bits.put(0, 1)
    bits.put(1, 2)
    write_tokens(bits, [(b, 0) for b in literals], FIXED_LIT, FIXED_DIST, end=False)


def _invalid_length(data: bytes) -> bytes:
    bits = Bits()
    _open_fixed_block(bits, data[:1])
    bits.code(0b11000110, 8)  # literal/length code 286 (fixed codes 280-287 are 11000000-11000111): no length has it
    return then_the_rest(bits, data, 1)


def _invalid_distance(data: bytes) -> bytes:
    bits = Bits()
    _open_fixed_block(bits, data[:8])
    bits.code(0b0000001, 7)  # length 3 (code 257), then
    bits.code(30, 5)  # distance code 30, which no distance has
    return then_the_rest(bits, data, 11)


def test_a_distance_past_the_members_start_is_refused_though_unzip_installs_the_repositorys_file(
    built: Built, tmp_path: Path
) -> None:
    wheel = _coded_wheel(built, tmp_path / "dist", PAST_THE_START, _past_the_start(built))
    finding = refused_with(judge(wheel), "G309", PAST_THE_START, built.wheel.name)
    assert "too far back" in finding.message and "unzip" in finding.message
    unzipped = _unzip(wheel, tmp_path / "unzip")  # extracting the whole wheel, as a user or distlib's unpacking does
    assert unzipped.returncode == 0, unzipped.stderr
    assert (tmp_path / "unzip" / PAST_THE_START).read_bytes() == (REPO / PAST_THE_START).read_bytes()
    with zipfile.ZipFile(wheel) as z, pytest.raises(zlib.error, match="too far back"):
        z.read(PAST_THE_START)
    if shutil.which("uv"):
        assert _uv_install(wheel, tmp_path / "uv").returncode != 0


REFUSED_CODINGS: dict[str, tuple[Callable[[bytes], bytes], str, bool]] = {  # coder, zlib's error, unzip reads it
    "a code length repeat with none before it": (lambda data: _repeat_first(data, 2048), "bit length repeat", True),
    "a length code 286": (_invalid_length, "invalid literal/length code", False),
    "a distance code 30": (_invalid_distance, "invalid distance code", False),
}


@pytest.mark.parametrize("coding", list(REFUSED_CODINGS))
def test_a_coding_zlib_refuses_is_refused_whoever_reads_it(built: Built, tmp_path: Path, coding: str) -> None:
    coder, error, unzip_reads = REFUSED_CODINGS[coding]
    repository = (REPO / MEMBER).read_bytes()
    wheel = _coded_wheel(built, tmp_path / "dist", MEMBER, coder(repository))
    finding = refused_with(judge(wheel), "G309", MEMBER, built.wheel.name)
    assert error in finding.message
    assert ("unzip" in finding.message) == unzip_reads
    with zipfile.ZipFile(wheel) as z, pytest.raises(zlib.error, match=error):
        z.read(MEMBER)
    read = subprocess.run(["unzip", "-p", str(wheel), MEMBER], capture_output=True, timeout=60)
    assert (read.returncode == 0 and read.stdout == repository) == unzip_reads, read.stderr
    if shutil.which("uv"):
        assert _uv_install(wheel, tmp_path / "uv").returncode != 0


# -- the same, in the sdist's gzip stream ------------------------------------------------------------------------------

PREFIX = 16384  # the tar's first bytes, coded by hand; zlib writes the rest


def _gzip_of(built: Built, stream: bytes, tar: bytes) -> bytes:
    header = built.sdist.read_bytes()[:10]  # the project's own header: no file name, its time, XFL and OS
    assert header[3] == 0
    return header + stream + struct.pack("<2L", zlib.crc32(tar), len(tar) & 0xFFFFFFFF)


def _tar(built: Built) -> bytes:
    return gzip.decompress(built.sdist.read_bytes())


def _sdist(built: Built, folder: Path, stream: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / built.sdist.name
    path.write_bytes(_gzip_of(built, stream, _tar(built)))
    return path


def _sdist_fixed_258(tar: bytes) -> bytes:
    bits = Bits()
    toks = tokens(tar, 0, PREFIX)
    assert any(length == 258 for length, distance in toks if distance)
    fixed_block(bits, toks, False, long_258=True)
    return then_the_rest(bits, tar, PREFIX)


def _sdist_one_distance(tar: bytes) -> bytes:
    bits = Bits()
    dynamic_block(bits, tokens(tar, 0, PREFIX, distance=1), False, dist=[1])
    return then_the_rest(bits, tar, PREFIX)


def _sdist_past_the_start(tar: bytes) -> bytes:
    """A run of zeros in the tar's first header sent as a match reaching past the start: GNU gzip copies it from the
    zeros of its window, so the stream is the project's tar to it."""
    at, n = tar.find(bytes(40), 1), 40
    bits = Bits()
    fixed_block(bits, tokens(tar, 0, at), False)
    fixed_block(bits, [(n, at + n)], False)  # from the window's last n bytes, never written yet
    return then_the_rest(bits, tar, at + n)


def _sdist_repeat_first(tar: bytes) -> bytes:
    stop = tar.index(b"/") + 1  # the top folder's name: no byte 0, 1 or 2, whose code lengths the repeat sends
    return _repeat_first(tar, stop)


def _sdist_end_code_alone(tar: bytes) -> bytes:
    bits = Bits()
    dynamic_block(bits, [], False)
    return then_the_rest(bits, tar, 0)


SDIST_CODINGS: dict[str, Callable[[bytes], bytes]] = {
    "length 258 as code 284 with every extra bit set": _sdist_fixed_258,
    "a distance tree of one code of one bit": _sdist_one_distance,
    "a repeat of zero lengths across the two code length sets": lambda tar: _cross(tar, PREFIX),
    "a block holding its end code alone": _sdist_end_code_alone,
}


@pytest.mark.parametrize("coding", list(SDIST_CODINGS))
def test_an_sdist_stream_zlib_reads_at_the_edges_passes_and_gnu_gzip_reads_it_alike(
    built: Built, tmp_path: Path, coding: str
) -> None:
    tar = _tar(built)
    stream = SDIST_CODINGS[coding](tar)
    assert inflate(stream) == tar
    sdist = _sdist(built, tmp_path, stream)
    report = judge(sdist)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    gunzipped = subprocess.run(["gzip", "-dc", str(sdist)], capture_output=True, timeout=60)  # GNU gzip's inflater
    assert gunzipped.returncode == 0 and gunzipped.stdout == tar, gunzipped.stderr
    with tarfile.open(sdist) as read, tarfile.open(built.sdist) as project:  # pip's and twine's reader
        assert [(m.name, m.size) for m in read.getmembers()] == [(m.name, m.size) for m in project.getmembers()]
    if shutil.which("uv"):  # uv unpacks it with its own inflater and builds it
        result = _uv_install(sdist, tmp_path / "uv")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "uv" / MEMBER).read_bytes() == (REPO / MEMBER).read_bytes()


SDIST_REFUSED: dict[str, tuple[Callable[[bytes], bytes], str, bool]] = {  # coder, zlib's error, GNU gzip reads it
    "a distance past the start": (_sdist_past_the_start, "too far back", True),
    "a code length repeat with none before it": (_sdist_repeat_first, "bit length repeat", True),
    "a length code 286": (_invalid_length, "invalid literal/length code", False),
}


@pytest.mark.parametrize("coding", list(SDIST_REFUSED))
def test_an_sdist_stream_zlib_refuses_is_a_refused_sdist_not_no_gzip_stream(
    built: Built, tmp_path: Path, coding: str
) -> None:
    """The gate answered "not a gzip stream, so not an sdist" (exit 2) for each: zlib failed within the first MiB it
    inflated. GNU gzip, and GNU tar with it, unpack the first two as the project's sdist, file for file."""
    coder, error, gnu_reads = SDIST_REFUSED[coding]
    tar = _tar(built)
    sdist = _sdist(built, tmp_path / "dist", coder(tar))
    try:
        report = judge(sdist)
    except GateError as exc:
        pytest.fail(f"not judged: {exc}")
    finding = refused_with(report, "G312", None, built.sdist.name)
    assert error in finding.message
    assert ("GNU gzip" in finding.message) == gnu_reads
    with pytest.raises(tarfile.ReadError, match=error):
        tarfile.open(sdist).getmembers()
    gunzipped = subprocess.run(["gzip", "-dc", str(sdist)], capture_output=True, timeout=60)
    assert (gunzipped.returncode == 0 and gunzipped.stdout == tar) == gnu_reads, gunzipped.stderr
    if shutil.which("uv"):
        assert _uv_install(sdist, tmp_path / "uv").returncode != 0
    if gnu_reads:
        ours, theirs = tmp_path / "gnu", tmp_path / "project"
        ours.mkdir(), theirs.mkdir()
        for archive, into in ((sdist, ours), (built.sdist, theirs)):
            subprocess.run(["tar", "-xzf", str(archive), "-C", str(into)], check=True, timeout=60)
        assert subprocess.run(["diff", "-r", str(ours), str(theirs)], capture_output=True).returncode == 0


def test_a_file_that_is_no_gzip_stream_stays_unjudged(built: Built, tmp_path: Path) -> None:
    """The fix's edge: a stream zlib fails on before any gzip header (no magic, or a method other than deflate) is no
    sdist to any unpacker, and stays "not a gzip stream" (exit 2)."""
    sdist = tmp_path / built.sdist.name
    for header in (b"\x1f\x8c\x08", b"\x1f\x8b\x07"):
        sdist.write_bytes(header + built.sdist.read_bytes()[3:])
        with pytest.raises(GateError, match="not a gzip stream"):
            judge(sdist)
