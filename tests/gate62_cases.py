"""Gate round 62's RECORD spellings: each a rewrite of the hash field of one row (the package file ``TARGET``) or of
every row of a wheel's RECORD, the rows' paths and sizes true, so that the only question is how the hash is spelt.

``CASES`` maps a name to ``(scope, spell)``: ``spell(data)`` gives the hash field for a file of bytes ``data``;
``scope`` is ``"one"`` (``TARGET``'s row alone) or ``"all"`` (every hashed row). ``record_bytes`` writes a RECORD from
(path, bytes) pairs as a wheel writer does (csv, LF, RECORD's own row last and empty), ``expected_code`` the code a
spelling calls for, read off pip's own list of the hashes it trusts (``STRONG_HASHES``: a row under any other name,
or a name spelt otherwise, is G206) and base64's one canonical form of the digest (any other string is G203), and
``readings`` what the readers that check a RECORD make of a row: ``installer``'s record validation (which Poetry and
``python -m installer`` run) and a decoder of the digest.
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import io
from collections.abc import Callable, Iterable

from pip._internal.utils.hashes import STRONG_HASHES

TARGET = "neurobrix/cli.py"


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _canonical(name: str, data: bytes) -> str:
    return f"{name}={_b64(hashlib.new(name, data).digest())}"


def _named(name: str) -> Callable[[bytes], str]:
    return lambda data: _canonical(name, data)


def _spelt(shown: str, name: str) -> Callable[[bytes], str]:
    """The true digest of ``name`` under the algorithm written ``shown``."""
    return lambda data: f"{shown}={_b64(hashlib.new(name, data).digest())}"


def _non_canonical(data: bytes) -> str:
    """sha256's 43 characters carry 258 bits for 256: the last character's two low bits are free, and a decoder
    reads the same digest whatever they are (RFC 4648 lets a decoder refuse them; Python's does not)."""
    text = _b64(hashlib.sha256(data).digest())
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(text[-1])
    return f"sha256={text[:-1]}{alphabet[last ^ 0b01]}"


def _standard_alphabet(name: str) -> Callable[[bytes], str]:
    return lambda data: f"{name}={base64.b64encode(hashlib.new(name, data).digest()).rstrip(b'=').decode()}"


def _padded(name: str) -> Callable[[bytes], str]:
    return lambda data: f"{name}={base64.urlsafe_b64encode(hashlib.new(name, data).digest()).decode()}"


def _shake(data: bytes) -> str:
    return f"shake_256={_b64(hashlib.shake_256(data).digest(32))}"


CASES: dict[str, tuple[str, Callable[[bytes], str]]] = {
    # pass controls: the hashes pip trusts, as a writer spells them (round 58 installed sha384 and sha512 whole)
    "sha384 every row": ("all", _named("sha384")),
    "sha512 one row": ("one", _named("sha512")),
    # algorithms hashlib and installer's validation take, which pip's hash checks do not trust
    "md5 every row": ("all", _named("md5")),
    "sha1 one row": ("one", _named("sha1")),
    "sha224 one row": ("one", _named("sha224")),
    "sha512_224 one row": ("one", _named("sha512_224")),
    "sha512_256 one row": ("one", _named("sha512_256")),
    "sha3_384 one row": ("one", _named("sha3_384")),
    "blake2s one row": ("one", _named("blake2s")),
    "shake_256 one row": ("one", _shake),
    # the trusted algorithms spelt otherwise: OpenSSL's names take any case, so hashlib.new and installer read them
    "SHA384 in upper case": ("all", _spelt("SHA384", "sha384")),
    "Sha512 in mixed case": ("one", _spelt("Sha512", "sha512")),
    "sha-384 with a hyphen": ("one", _spelt("sha-384", "sha384")),
    "sha256 with a space before =": ("one", _spelt("sha256 ", "sha256")),
    "none as the algorithm": ("one", lambda data: "none="),
    "sha256 with an empty digest": ("one", lambda data: "sha256="),
    # the digest spelt otherwise: one digest to a decoder, another string to installer's comparison
    "sha256 last character's free bits set": ("one", _non_canonical),
    "sha512 padded with ==": ("one", _padded("sha512")),
    "sha384 in the standard alphabet": ("all", _standard_alphabet("sha384")),
    "sha512 in hex": ("one", lambda data: f"sha512={hashlib.sha512(data).hexdigest()}"),
    "sha256 digest with a trailing space": ("one", lambda data: _canonical("sha256", data) + " "),
    "sha256 digest with a leading space": ("one", lambda data: _canonical("sha256", data).replace("=", "= ", 1)),
    "sha256 with == before the digest": ("one", lambda data: _canonical("sha256", data).replace("=", "==", 1)),
    "sha384 digest under sha512's name": ("one", _spelt("sha512", "sha384")),
    "sha256 digest cut to 32 characters": ("one", lambda data: _canonical("sha256", data)[: len("sha256=") + 32]),
}


def record_bytes(rows: Iterable[tuple[str, bytes]], record: str, case: str | None) -> bytes:
    """RECORD for ``rows`` (path, bytes), RECORD's own row last, every hash sha256 but those ``case`` spells."""
    scope, spell = CASES[case] if case is not None else ("none", _named("sha256"))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for path, data in rows:
        hashed = spell(data) if scope == "all" or (scope == "one" and path == TARGET) else _canonical("sha256", data)
        writer.writerow([path, hashed, len(data)])
    writer.writerow([record, "", ""])
    return out.getvalue().encode()


def expected_code(case: str, data: bytes) -> str | None:
    """The code a row spelt by ``case`` for bytes ``data`` calls for: None where it reads alike to every reader (a
    hash pip trusts, spelt as pip names it, its digest base64's one form), G206 where the name is no such hash, G203
    where the digest is no such form."""
    name, _, digest = CASES[case][1](data).partition("=")
    if name not in STRONG_HASHES or not digest:
        return "G206"
    return None if digest == _b64(hashlib.new(name, data).digest()) else "G203"


def readings(case: str, data: bytes) -> dict[str, object]:
    """What the readers that check a RECORD make of ``TARGET``'s row spelt by ``case``: ``installer``'s (its
    ``RecordEntry``, which every install parses, refusing a name not in ``hashlib.algorithms_available``, then its
    validation: ``hashlib.new`` of the name, the digest compared as a string) and a base64 decoder (urlsafe, padding
    added) against the digest of the algorithm named, where hashlib knows it."""
    from installer.records import InvalidRecordEntry, RecordEntry

    field = CASES[case][1](data)
    out: dict[str, object] = {}
    try:
        out["installer"] = RecordEntry.from_elements(TARGET, field, str(len(data))).validate(data)
    except InvalidRecordEntry as exc:
        out["installer"] = f"refused: {'; '.join(exc.issues)}"
    except (ValueError, TypeError) as exc:
        out["installer"] = f"refused: {type(exc).__name__}"
    name, _, digest = field.partition("=")
    try:
        true = hashlib.new(name, data).digest()
    except (ValueError, TypeError):
        out["decoded"] = "no such hash"
        return out
    try:
        out["decoded"] = base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)) == true
    except (binascii.Error, ValueError):
        out["decoded"] = "not base64"
    return out
