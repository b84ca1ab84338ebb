"""Round 56 of planted bugs: what rounds kmut17 and text 46 added (conformance/offsets.py's allowances, their bounds and
the lint's reading of ``tl.where``, tuples, helpers' returns and shifts, certify's plan; ``hub.exactly``; the
tokenizer's parse of tokenizer.json and its dropout refusal). The plants and the driver: tests/planted58_plants.py,
tests/planted58_driver.py (round 26's ``run_round``). Each test here fails with the plants named in its docstring
and passes on the clean code; the bounds are read on domains and candidate spaces written for them, the lint on a
module written for it, the tokenizer's checks against the tokenizers library itself.

Outcomes: docs/planted-bugs.md, round 56.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from conformance import catalogue, certify, offsets
from neurobrix.errors import UsageError

LIMIT = offsets.LIMIT


class _Space:
    """An op's candidate space reduced to the settings given (what ``bounds`` reads of an OpSpec)."""

    def __init__(self, *settings: dict):
        self.settings = list(settings)

    def candidates(self, domain, fast):
        return self.settings


def _refused(problems: list[str]) -> set[tuple[str, str]]:
    """(function, operand) of each allowance ``bound_problems`` refuses past 2^31."""
    found = set()
    for problem in problems:
        where, _, rest = problem.partition(" keeps ")
        found.add((where.rpartition(".")[2], rest.partition(" in int32")[0]))
    return found


def test_a_domain_without_a_top_counts_as_2_31():
    """b01: an unbounded dimension (hi None, as the interpreter's domains are) read at its low end: a rotary domain
    of any number of heads, whose offset H x D the lint allows, passed as 128 elements."""
    domains = {"rotary": [("rotary", (("H", 1, None), ("D", 64, 128)))]}
    assert offsets.bounds(domains, [], {})["rotary.heads"] >= LIMIT
    problems = offsets.bound_problems(domains, [], {}, {"neurobrix.ops.rotary"}, unreached=False)
    expected = {
        (w.rpartition(".")[2], o) for w, names in offsets.NARROW_OFFSETS.items() if ".rotary." in w for o in names
    }
    assert _refused(problems) == expected and expected


def test_decode_split_start_is_counted_in_whole_blocks():
    """b02: the launcher rounds each split's chunk up to whole blocks (``attention_decode``: cdiv(cdiv(S, SPLITS),
    BLOCK_N) x BLOCK_N), so the last split starts past S / SPLITS x (SPLITS - 1); the bound is SPLITS such chunks,
    a multiple of SPLITS x BLOCK_N covering the cache. Without the rounding, 1,000 positions over 16 splits gave
    1,008, not 16 x 64."""
    domains = {"attention_decode": [("d", (("B", 1, 1), ("S", 1, 1000), ("G", 1, 4), ("D", 64, 64)))]}
    for splits, block in ((16, 64), (4, 32), (3, 128)):
        value = offsets.bounds(domains, [], {"attention_decode": _Space({"SPLITS": splits, "BLOCK_N": block})})
        start = value["decode.split_start"]
        assert start % (splits * block) == 0 and start >= 1000, (splits, block, start)
        assert start - splits * block < 1000  # the smallest such: no split of whole blocks more


def test_an_allowance_of_several_bounds_is_held_to_each():
    """p02: gemv's K-slice offset is bound by its K slices and its split rows (SPLIT_K x M); held to the first alone,
    M rows past 2^31 / SPLIT_K passed it. Every allowance naming a quantity past 2^31 is refused."""
    domains = {"linear": [("l", (("M", 1, (1 << 30) + 1), ("N", 1, 1), ("K", 1, 64)))]}
    specs = {"linear": _Space({"variant": "gemv", "SPLIT_K": 2, "BLOCK_K": 16})}
    largest = offsets.bounds(domains, [], specs)
    assert largest["gemv.k_slices"] < LIMIT <= largest["gemv.split_rows"]
    expected = {
        (where.rpartition(".")[2], operand)
        for where, names in offsets.NARROW_OFFSETS.items()
        for operand, allow in names.items()
        if any(largest.get(b, 0) >= LIMIT for b in allow.bound)
    }
    assert ("_linear_gemv_kernel", "pid_k") in expected
    assert _refused(offsets.bound_problems(domains, [], specs, unreached=False)) == expected


def test_certify_bounds_the_model_a_config_names():
    """c01: certify's plan for a model given by --config (``configs``) bounded the catalogue's models instead: a
    model of 16 times Qwen2.5-7B's heads takes flash's positions x qkv stride past 2^31 and was planned."""
    name = "Qwen/Qwen2.5-7B-Instruct"
    cfg = catalogue.load()[0][name]
    wide = dataclasses.replace(cfg, num_heads=cfg.num_heads * 16, num_kv_heads=cfg.num_kv_heads * 16)
    assert certify.plan("h200", ["attention_prefill"], ["bf16"], configs={name: cfg})
    with pytest.raises(UsageError, match=r"_flash_block keeps keys in int32 .* flash.positions reaches"):
        certify.plan("h200", ["attention_prefill"], ["bf16"], configs={"wide": wide})


# a module written for the lint: each line it must name ends with "# narrow: <what it names>"
READING = """
import triton
import triton.language as tl


@triton.jit
def _row(i, w, FIRST: tl.constexpr):
    if FIRST:
        return i
    return w


@triton.jit
def _offs(i, n, FIRST: tl.constexpr):
    if FIRST:
        return i * n  # narrow: i * n
    return i


@triton.jit
def _kernel(x_ptr, y, z, n, stride, FLAG: tl.constexpr):
    i = tl.program_id(0)
    wide = tl.program_id(1).to(tl.int64)
    q = z + n * i  # narrow: n * i
    tl.store(tl.where(FLAG, y, q), 1.0)
    tl.store(x_ptr + tl.where(FLAG, i, stride * i), 1.0)  # narrow: stride * i
    pair = (x_ptr, i * stride)  # narrow: i * stride
    tl.store(pair[0] + pair[-1], 1.0)
    tl.store(x_ptr + _row(i, wide, False) * stride, 1.0)  # narrow: _row(i, wide, False) * stride
    tl.store(x_ptr + _offs(i, n, True), 1.0)
    tl.store(x_ptr + i * 16 + i * 8, 1.0)  # narrow: i * 16
"""


def test_the_lint_follows_every_branch_element_and_return():
    """l01: a pointer chosen by tl.where's second branch (z, through q) not followed; l02: an offset in tl.where's
    second branch not scanned; l03: a tuple's element indexed from the end unresolved (the tuple, a pointer among
    its elements, read as a pointer); l04: a helper's kind read from its first return alone (the walk's first: the
    one at the function's top level, int64 here); l05: only that return scanned (the product in the other unread);
    l06: a literal factor of exactly 2^SCALE (16) not a stride. Not named: a doubling by 8, kmut17's reading."""
    expected = set()
    function = ""
    for line in READING.splitlines():
        if line.startswith("def "):
            function = line[4:].split("(")[0]
        if "# narrow: " in line:
            expected.add((f"synthetic.{function}", line.split("# narrow: ")[1]))
    found = {(where, text) for where, text, _, _ in offsets.findings("synthetic", READING)}
    assert found == expected


# ------------------------------------------------------------------------------------------------- the tokenizer
def _bpe(prefix: str | None, merges: list[str], compact: bool = False, dropout: float | None = None) -> str:
    """A tokenizer.json of a BPE model: the merges' pieces and their products in the vocabulary."""
    vocab: dict[str, int] = {}
    cut = len(prefix.encode("utf-8")) if prefix else 0
    for merge in merges:
        a, b = merge.split(" ")
        for piece in (a, b, a + b.encode("utf-8")[cut:].decode("utf-8")):  # what the library looks the merge up as
            vocab.setdefault(piece, len(vocab))
    model = {
        "type": "BPE",
        "dropout": dropout,
        "unk_token": None,
        "continuing_subword_prefix": prefix,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        "vocab": vocab,
        "merges": merges,
    }
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": model,
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":") if compact else None)


# (prefix, merges): none cuts a character of its second pieces (where the library aborts the process)
PREFIXES = [
    ("##", ["a ##"]),  # the second piece the prefix itself: cut to nothing, which the library takes
    ("##", ["a ##b"]),
    ("##", ["a x"]),  # shorter than the prefix: the library panics
    ("é", ["a x"]),  # one character of two bytes: the library cuts past "x"
    ("é", ["a éb"]),  # two bytes cut off, a whole character
    (None, ["a x"]),
]


@pytest.mark.parametrize("compact", [False, True])
def test_the_prefix_check_refuses_exactly_what_the_library_fails_on(tmp_path, compact):
    """t03: a second piece exactly the prefix's length refused (the library builds it); t04: the prefix's length
    counted in characters (a merge "a x" under "é" passed, and the library panicked); t05: the prefix's key looked
    for as json.dumps spaces it, so a compact file skipped the check. Each file is read by the library first: the
    engine refuses in one line exactly the files the library fails on."""
    from tokenizers import Tokenizer as Library

    from neurobrix.tokenizer import TokenizerError, parse_tokenizer_file

    for i, (prefix, merges) in enumerate(PREFIXES):
        path = tmp_path / f"{i}.json"
        path.write_text(_bpe(prefix, merges, compact), encoding="utf-8")
        try:
            Library.from_file(str(path))
            fails = False
        except BaseException:  # noqa: BLE001 (pyo3's PanicException is a BaseException)
            fails = True
        if fails:
            with pytest.raises(TokenizerError, match="continuing_subword_prefix .* cuts the merge"):
                parse_tokenizer_file(path, None, str(path))
        else:
            parse_tokenizer_file(path, None, str(path))


def test_every_rebuilding_class_parses_without_the_models_options(tmp_path):
    """t06: the parse without the model's vocabulary and merges kept for Llama and Qwen2 alone: CodeLlamaTokenizer's
    and GPT2Tokenizer's files were parsed whole, and a prefix the merges do not bear out refused where
    transformers' class builds its own model and prints text."""
    from neurobrix.tokenizer import CLASS_TOKENS, parse_tokenizer_file

    path = tmp_path / "tokenizer.json"
    path.write_text(_bpe("##", ["a x"]), encoding="utf-8")
    for name in sorted(CLASS_TOKENS):
        tok = parse_tokenizer_file(path, name, str(path))
        assert tok.get_vocab_size() == 0, name


def test_a_dropout_is_refused_exactly_where_transformers_encodes_at_random(tmp_path):
    """t02 (t01 with it): a dropout of 0 refused, though it skips no merge and transformers' tokenizer encodes alike
    at each call. For 0, 0.5 and 1, eight encodings of a long prompt by transformers' tokenizer decide."""
    transformers = pytest.importorskip("transformers")
    from tokenizer_fixtures import CORPUS, save

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = save(tmp_path / "tok", "sentencepiece")
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    assert data["model"]["type"] == "BPE"
    prompt = " ".join(CORPUS * 3)
    random = {}
    for dropout in (0.0, 0.5, 1.0):
        data["model"]["dropout"] = dropout
        (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        theirs = transformers.AutoTokenizer.from_pretrained(folder)
        random[dropout] = len({tuple(theirs(prompt)["input_ids"]) for _ in range(8)}) > 1
        if random[dropout]:
            with pytest.raises(TokenizerError, match=f"dropout {dropout:g} makes"):
                Tokenizer(folder)
        else:
            Tokenizer(folder)
    assert random == {0.0: False, 0.5: True, 1.0: False}  # (each way decided at least once)
