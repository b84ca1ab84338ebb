"""Round 27 of planted bugs: the code of strict round 31 (the fast path's layout check `_record_layout` and
`neurobrix.errors.printable` where errors, `list`, `doctor` and import apply it), text round 28 (stop strings
transformers' generate refuses, tokens spelt from the vocabulary), kernel-mutant round 4 (`bounds.attention_one_key`,
the one-key pairs of the attention judges, `reference.rope_frequencies`' rotary_dim, `check.switch_problems`) and gate
round 31 (the .dist-info message of `gate/layout.py`). The plants and the driver: tests/planted27_plants.py,
tests/planted27_driver.py (round 24's driver on this round's plants). Each test here fails with the plant named in its
docstring and passes on the clean code.

Outcomes (60 plants): 30 caught by the tests before this round (a01, a06, a09, a10, a12, a21, a24, a27, a28, e11-e13,
e18, e21, e22, s02, s04, s06-s10, k03, k05-k07, k11, g01-g03), 30 survived and are caught here (a03-a05, a11, a13-a16,
a19, a22, a23, a25; e01-e03, e06, e08, e09, e14, e17, e20; s01, s03; k01, k04, k08, k10, k13, k14, k16), none
equivalent. Planted round 25's plants re-anchored on `_record_layout` (tests/planted25_plants.py): t01 and t15 are
caught by round 25's tests, t09 is equivalent as before (a 15-digit digest never equals a row's), t11 survives them and
is caught here; t12-t14 are retired (the line scan they planted in is gone). Since walk-through 32's follow-up (the
fast path compares the lists of digests, `carried == own`, which None never equals) a27 is retired: no guard is left
to remove.
"""

from __future__ import annotations

import codecs
import itertools
import json
import os
import shutil
import unicodedata
from pathlib import Path

import pytest
import torch
from conftest import REPO, retrack
from store_fixtures import config_dict, make_checkpoint

from neurobrix import cli, tables
from neurobrix.errors import TablesError, printable
from neurobrix.store import MANIFEST

CLASS, KERNEL = "interpreter", "rms_norm"
OTHER = "{torch: 2.13.0+cpu, triton: 3.0.0}"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    tables.clear_cache()
    return root


def _write(root: Path, text: str) -> None:
    tables.proofs_path(root, CLASS, KERNEL).write_text(text, encoding="utf-8", newline="")
    retrack(root)
    tables.clear_cache()


def _refusals(root: Path) -> tuple[bool, bool]:
    """Whether `tables verify` (the record parsed in full) and the runtime (the index loaded) refuse the record."""
    verify = any(p.path == f"{CLASS}/{KERNEL}" for p in tables.verify_all(tables.load(root)))
    tables.clear_cache()
    try:
        tables.load(root).index(CLASS, KERNEL)
        run = False
    except TablesError:
        run = True
    tables.clear_cache()
    return verify, run


def _line(text: str, key: str) -> str:
    """The provenance's line of ``key``, its line feed included."""
    start = text.index(f"\n  {key}: ") + 1
    return text[start : text.index("\n", start) + 1]


def _records(text: str) -> dict[str, str]:
    """Records `tables verify` refuses that the fast path's layout check let through with a plant (its id first)."""
    head = text[: text.index("\nentries:\n")]
    start = "\n- domain:\n"
    second = text.index(start, text.index(start) + 1)
    digest = text[text.index("\n    entry: ") : text.index("\n", text.index("\n    entry: ") + 1)]
    device = head[head.index("\n  device:\n") + 1 : head.index("\n  torch: ") + 1]
    return {
        "a03 a key after the last line feed": f"{text}provenance: {OTHER}",
        "a04 a form feed's line after entries:": text.replace("\nentries:\n", "\nentries:\n\x0c\n", 1),
        "a05 a line two spaces in before the first entry": text.replace("\nentries:\n", "\nentries:\n  notes: x\n"),
        "a11 another format": text.replace("\nformat: 3\n", "\nformat: 2\n", 1),
        "a13 another class named": text.replace(f"\nclass: {CLASS}\n", "\nclass: nvidia-h200\n", 1),
        "a14 a device given as text": text.replace(device, "  device: Triton interpreter (CPU)\n", 1),
        "a15 a provenance without its command": text.replace(_line(text, "command"), "", 1),
        "a15 a provenance without its git commit": text.replace(_line(text, "git_commit"), "", 1),
        "a16 a blank command": text.replace(_line(text, "command"), "  command: ' '\n", 1),
        "a22 a digest line going on after its digest": text.replace(digest, f"{digest}0", 1),
        "a25 a digest with a closing quote alone": text.replace(digest, f"{digest}'", 1),
        "a23 the second entry's first line going on after its key": text[:second]
        + "\n- domain:x\n"
        + text[second + len(start) :],
        "t11 the provenance named twice, whole, in the header": text.replace(
            "\nentries:\n", "\n" + head[head.index("\nprovenance:\n") + 1 :] + "\nentries:\n", 1
        ),
        "a19 an entry's first line a top-level key": text[:second] + "\nprovenance:\n" + text[second + len(start) :],
    }


def test_the_runtime_refuses_what_tables_verify_refuses_in_the_header_and_at_the_end(tmp_path):
    """Each record is refused by `tables verify`; the runtime must not read it on its fast path. Caught: a03 (a
    record not ending in a line feed scanned: its last line, a second `provenance:`, was the scan's end), a04 (the
    `entries:` line read with `[ \t]*` widened to any space, which passes a line of a form feed YAML refuses), a05 (no
    `- domain:` required right after `entries:`), a11 (the format not compared), a13 (the class not compared), a14
    (the device not required a mapping), a15 (the provenance's texts but torch, triton and date not required), a16
    (a blank text taken for one), a19 (only the first of the scan's entry starts compared: an entry's first line
    replaced by a second `provenance:` left its digest where the scan read one), a22 (a digest line read up to its
    16th digit only), a23 (an entry's first line read up to its colon only), a25 (a digest's quotes not required
    to pair); and planted round 25's t11 as re-anchored (the header read by a loader that keeps the last of a key
    named twice: a provenance given twice whole, the same both times, was read)."""
    root = _copy(tmp_path)
    text = tables.proofs_path(root, CLASS, KERNEL).read_text(encoding="utf-8")
    assert _refusals(root) == (False, False)
    wrong = {}
    for name, edited in _records(text).items():
        assert edited != text, name
        _write(root, edited)
        if _refusals(root) != (True, True):
            wrong[name] = _refusals(root)
    assert not wrong, wrong  # name: (tables verify refused, the runtime refused)


# ------------------------------------------------------------------------------------- printable
def _obeyed(c: str) -> bool:
    """Whether a terminal obeys ``c`` rather than printing it, by Unicode's own tables: a control character but tab
    (line feed included: an error is one line), a line or paragraph separator, a bidirectional embedding, override,
    isolate or mark, or a lone surrogate (which a UTF-8 output cannot write at all)."""
    category = unicodedata.category(c)
    return (
        (category == "Cc" and c != "\t")
        or category in ("Zl", "Zp", "Cs")
        or unicodedata.bidirectional(c) in ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI")
        or unicodedata.name(c, "") in ("LEFT-TO-RIGHT MARK", "RIGHT-TO-LEFT MARK", "ARABIC LETTER MARK")
    )


def test_printable_escapes_exactly_what_a_terminal_obeys():
    """Every character of the Basic Multilingual Plane: those a terminal obeys are written as their escape (which
    reads back as the character), the others are kept. Caught: e01 (NUL kept), e02 (line feed kept: a message of two
    lines), e03 (DEL kept), e06 (the pop directional isolate U+2069 kept), e08 (the left-to-right and right-to-left
    marks kept), e09 (lone surrogates kept: printing them raised UnicodeEncodeError), e11 (the escape written by the
    ASCII codec's backslashreplace, which leaves every ASCII control character as it is)."""
    wrong = []
    for point in range(0x10000):
        c = chr(point)
        shown = printable(f"a{c}b")
        if _obeyed(c):
            ok = shown.isascii() and shown.isprintable() and codecs.decode(shown, "unicode_escape") == f"a{c}b"
        else:
            ok = shown == f"a{c}b"
        if not ok:
            wrong.append(f"U+{point:04X}")
    assert not wrong, wrong
    assert printable("a\tb") == "a\tb"


ESC = "\x1b]52;c;cm0gLXJmIH4=\x07\r\x1b[2K"  # writes the terminal's clipboard, then rewrites the line


def test_list_prints_a_manifest_and_a_store_folder_as_text_in_its_columns(tmp_path, monkeypatch, capsys):
    """A stored model whose folder (renamed in the store) and manifest (revision, import date) hold ESC and CR:
    `list` prints each escaped, its columns aligned on the names as printed. Caught: e14 (the revision printed raw),
    e17 (the name column as wide as the raw names: the escaped name pushed the row's columns right of the
    header's)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    source = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(source)]) == 0
    stored = tmp_path / "home" / "models" / "tiny"
    manifest = json.loads((stored / MANIFEST).read_text(encoding="utf-8"))
    # the manifest names the folder it is renamed to (strict round 43: a folder holding another name's manifest is
    # damaged, and this test is about how a stored model's own fields are printed)
    manifest.update(revision=f"v{ESC}", commit=None, name=f"t{ESC}")
    (stored / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    stored.rename(stored.with_name(f"t{ESC}"))
    capsys.readouterr()
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert not [c for c in out if _obeyed(c) and c != "\n"], out
    header, row = out.splitlines()[:2]
    assert row.startswith(printable(f"t{ESC}") + "  ") and printable(f"v{ESC}") in row, out
    assert row.index(printable(f"v{ESC}")) == header.index("REVISION"), out


def test_a_path_that_is_no_utf8_is_named_with_its_bytes(tmp_path, monkeypatch, capsys):
    """The refusal of a checkpoint folder named b"tiny\\xff" names the byte, as the folder's listing would. Caught:
    e20 (the bytes decoded with "replace": "tiny\\ufffd", which names no byte and no folder on disk)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    made = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    folder = made.rename(made.with_name(os.fsdecode(b"tiny\xff")))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "/src/tiny\\xff: the path is not UTF-8 text" in err, err


# ------------------------------------------------------------------------------------- stop strings
def test_a_token_ends_a_stop_string_where_stop_string_criteria_says_it_does():
    """`_can_end` against StopStringCriteria's own end overlaps, for every token and string of up to four of "a",
    "b", "c" (and the empty string), as text and as bytes. Caught: s01 (the empty string ended by a token of one
    character), s02 and s04 (the overlap off by one), s03 (only the first place the string's last character takes
    in the token looked at)."""
    stopping = pytest.importorskip("transformers.generation.stopping_criteria")
    from neurobrix.tokenizer import _can_end

    words = ["".join(w) for n in range(1, 5) for w in itertools.product("abc", repeat=n)]
    for spell in (str, str.encode):
        tokens, strings = [spell(w) for w in words], [spell(""), *(spell(w) for w in words)]
        _, ends = stopping.StopStringCriteria._stop_string_get_matching_positions(
            tokens, list(range(len(tokens))), strings
        )
        wrong = [(t, s) for s in strings for i, t in enumerate(tokens) if _can_end(t, s) != (i in ends[s])]
        assert not wrong, wrong[:10]


# ------------------------------------------------------------------------------------- kmut4's judges
def _one_key_calls(monkeypatch, kernel: str, shape: dict, config: dict, seed: int) -> list[int]:
    """The rescalings each one-key bound of the judge of ``kernel`` was asked for (the kernel not launched: the
    bound does not depend on the outputs)."""
    from conformance import bounds, harness

    calls = []
    real = bounds.attention_one_key

    def spy(v, dtype, rescalings):
        calls.append(rescalings)
        return real(v, dtype, rescalings)

    monkeypatch.setattr(bounds, "attention_one_key", spy)
    case = harness.build(kernel, "fp32", shape, harness.Values("fp32", "cpu", seed))
    harness.judge(case, (torch.zeros_like(case.args["q"]),), config)
    return calls


@pytest.mark.parametrize("S, block_m, block_n", [(5, 16, 16), (40, 64, 16), (33, 32, 16), (16, 16, 16)])
def test_the_first_querys_bound_counts_the_key_blocks_its_program_passes(monkeypatch, S, block_m, block_n):
    """The prefill kernel's first program passes the key blocks from 0 up to min(BLOCK_M, S) (its loops over
    `range(0, whole)` and `range(whole, end)`), each a rescale of the first query's sums. Caught: k04 (the blocks
    counted rounding down: none for S = 5 under 16-key blocks)."""
    config = {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": 4}
    calls = _one_key_calls(monkeypatch, "attention_prefill", {"S": S, "D": 16, "G": 1}, config, 1)
    assert calls == [len(range(0, min(block_m, S), block_n))]


def test_a_sequence_of_one_positions_bound_counts_its_key_block(monkeypatch):
    """A decode sequence of length 1: its first split passes one key block (`range(start, end, BLOCK_N)` with start
    0, end 1). Caught: k08 (no rescale counted)."""
    config = {"SPLITS": 2, "BLOCK_N": 16, "num_warps": 4}
    calls = _one_key_calls(monkeypatch, "attention_decode", {"B": 2, "S": 40, "D": 16, "G": 2}, config, 2)
    assert calls == [len(range(0, 1, 16))]


def test_the_one_key_bound_charges_each_rounding_its_derivation_names():
    """`bounds.attention_one_key`'s derivation: the product p v, two roundings per key block passed (the rescale of
    the accumulator and of the sum), the split merge's two products, then the division (SPECIAL) and, below fp32,
    P's rounding (SPECIAL): at least that many unit roundoffs of |v|. Caught: k01 (one rounding a block)."""
    from conformance import bounds

    v = torch.tensor([[1.0, -3.0]], dtype=torch.float64)
    for rescalings in range(6):
        for dtype, specials in ((torch.float32, 1), (torch.float16, 2), (torch.bfloat16, 2)):
            least = (2 * rescalings + 3) * bounds.U32 + specials * bounds.SPECIAL
            got = bounds.attention_one_key(v, dtype, rescalings).div(v.abs())
            assert (got >= least).all(), (rescalings, dtype, got, least)


@pytest.mark.parametrize("rotary_dim", [6, 9, 4])
def test_rope_frequencies_refuses_a_rotary_dim_config_json_never_keeps(rotary_dim):
    """config.json's reading keeps a rotary_dim of head_dim - 1 only. Caught: k10 (any rotary_dim up to head_dim
    taken: 8 dims' table made over 6 or 4)."""
    from conformance import reference

    with pytest.raises(ValueError, match="rotary_dim"):
        reference.rope_frequencies(8, 10000.0, 1, {"rope_type": "linear", "factor": 2.0, "rotary_dim": rotary_dim})
    assert reference.rope_frequencies(8, 10000.0, 1, {"rope_type": "linear", "factor": 2.0, "rotary_dim": 7})


def _split_handing(monkeypatch, change):
    """neurobrix.ops._common.split with its result changed by ``change(pdl, meta, launch)``."""
    import neurobrix.ops._common as common

    real = common.split

    def split(*args):
        meta, launch = real(*args)
        change(args[-1], meta, launch)
        return meta, launch

    monkeypatch.setattr(common, "split", split)


def test_the_pdl_switch_is_checked_both_ways_and_by_the_wait_check(monkeypatch):
    """A split handing PDL=True to a kernel launched without PDL (it waits for nothing: a kernel meant to launch
    early would not), or the switch among the compile options too, is reported, and by `check.wait_problems`, which
    the check runs. Caught: k13 (only pdl=True tried), k14 (the switch among the options not looked for), k16
    (`wait_problems` not running `switch_problems`)."""
    from conformance import check

    assert check.switch_problems() == () and check.wait_problems() == ()
    _split_handing(monkeypatch, lambda pdl, meta, launch: launch.update(PDL=True))
    assert any("split(pdl=False)" in p for p in check.switch_problems())
    monkeypatch.undo()
    _split_handing(monkeypatch, lambda pdl, meta, launch: meta.update(PDL=pdl))
    assert check.switch_problems()
    monkeypatch.undo()
    _split_handing(monkeypatch, lambda pdl, meta, launch: launch.update(PDL=not pdl))
    assert check.wait_problems()
