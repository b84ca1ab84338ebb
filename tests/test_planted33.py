"""Planted-bug round 33: tests for the plants of tests/planted33_plants.py that the existing tests let through, in text
round 32 (``tokenizers_call``, ``_spells_last_apart``, ``Tokenizer.stream_held``), strict round 38
(``plan.entry_problem``: run's preflight, doctor and ``python -m conformance check``), strict round 37's cgroup memory
limit (``memory.cgroup_memory``, ``require_fit_on``, warmup's memory check), gate round 36's G406 (a member twine reads
as the metadata, the sdist's PKG-INFO) and ``schema.row_digests``. Each test fails under the plant(s) its docstring
names (checked: ``python tests/planted33_driver.py COPY OUT --with tests/test_planted33.py ID``, each plant against
this file alone) and passes on the clean code.

Outcomes (50 plants): 18 caught by the tests before the round (the guard catching Exception only or passing panics
through, the tokenizer's load unguarded; check holding entries to config_problem alone; the cgroup's usage read from
its limit file, v1's own page cache for its hierarchy's, the usage file named, a GPU's free and total swapped, the
host's total named as the limit, GB written as GiB; any member ending in /METADATA taken for the .dist-info's; all
seven row_digests plants: every row given the first setting, a bool bound written as Python's True, unsorted setting
keys, a dimension's braces not doubled, an entry's bounds as (hi, lo), class and kernel swapped in the binding, dtypes
sorted); 29 survived and are caught here: k03 k04 k06 k07 k08 k09 k10 k11 k12 k13 k14 k15 k16, e01 e02 e03 e04 e05
e06 e07 e09, m03 m05, w01 w03 w04, g01 g03 g04. Dropped as equivalent (docs/planted-bugs.md says why): m06, m07, w02."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from store_fixtures import config_dict, make_checkpoint
from test_gate_hostile import built
from test_planted32 import SLIM, _main, _streamed, _tokenizer, _write

from neurobrix import memory
from neurobrix.cli import main
from neurobrix.plan import entry_problem
from neurobrix.schema import Domain

GIB = 2**30
__all__ = ["built"]  # the hostile corpus's built wheel and sdist (gate round 36's tests)


class PanicException(BaseException):
    """What pyo3 raises for a Rust panic, by name (``tokenizer._panicked`` tests the name: the class is not
    importable)."""


# --- text round 32: the guard around the library's calls ------------------------------------------------------------


def test_the_guard_raises_the_error_its_caller_names(tmp_path):
    """k03 (the guard raising TokenizerError whatever ``error`` says), k04 (checkpoint's check of tokenizer.json
    guarded without its CheckpointError: the TokenizerError then wrapped by its catch-all, the file named twice and
    "fetch the checkpoint again" advised for a file the library panics on). A panic under ``tokenizers_call(what,
    CheckpointError)`` is a CheckpointError; checkpoint's check of a tokenizer.json the library panics on (an
    unparsable precompiled_charsmap) is refused in the guard's words, naming the file once."""
    from neurobrix.checkpoint import CheckpointError, _check_tokenizer
    from neurobrix.tokenizer import TokenizerError, tokenizers_call

    with pytest.raises(CheckpointError, match="^x: the tokenizers library failed on these files"):
        with tokenizers_call("x", CheckpointError):
            raise PanicException("boom")
    with pytest.raises(TokenizerError, match="^y: the tokenizers library failed"):
        with tokenizers_call("y"):
            raise PanicException("boom")
    from tokenizer_fixtures import save

    folder = save(tmp_path / "m", "sentencepiece")
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    data["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": ""}
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CheckpointError) as refused:
        _check_tokenizer(folder)
    path = str(folder / "tokenizer.json")  # named once, the library's failure said as it is (not "fetch ... again")
    assert str(refused.value).startswith(f"{path}: not a valid tokenizer.json: the tokenizers library failed")
    assert str(refused.value).count(path) == 1 and "fetch the checkpoint again" not in str(refused.value)


def test_stop_strings_the_library_cannot_spell_are_refused_naming_the_settings_file(tmp_path, monkeypatch):
    """k07 (the refusal re-raised without the file it comes from). Stop strings the library panics spelling (a Strip
    step cutting both ends of "▁") are refused naming generation_config.json, as every other stop_strings refusal
    is."""
    from test_text_round32 import _folder, _strip_both_ends

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = _folder(tmp_path, monkeypatch, "sentencepiece", _strip_both_ends, {"stop_strings": ["x"]})
    tok = Tokenizer(folder)
    with pytest.raises(TokenizerError) as refused:
        tok.stop_strings()
    message = str(refused.value)
    assert message.startswith(f"{tok.generation_path}: the tokenizer cannot spell its vocabulary for stop_strings")


def test_stop_strings_of_a_tokenizer_that_panics_encoding_are_refused_in_one_line(tmp_path, monkeypatch):
    """k06 (stop_strings' criteria built outside the guard: only their decoder's calls guarded). StopStringCriteria
    encodes its prefix "abcdef" through the tokenizer, on which a Strip then Prepend normalizer beside an added token
    marked normalized panics ("AddedVocabulary bad split", text round 31's): a TokenizerError naming the settings file,
    not the PanicException."""
    from test_text_round31 import _strip_then_prepend
    from test_text_round32 import _folder

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = _folder(tmp_path, monkeypatch, "sentencepiece", _strip_then_prepend, {"stop_strings": ["x"]})
    tok = Tokenizer(folder)
    with pytest.raises(TokenizerError) as refused:
        tok.stop_strings()
    assert str(refused.value).startswith(f"{tok.generation_path}: the tokenizer cannot spell its vocabulary")


# --- text round 32: which BPEDecoders a stream follows ---------------------------------------------------------------

FUSE, BYTE_LEVEL = {"type": "Fuse"}, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False}


def _bpe(*before: dict, suffix: str) -> dict:
    return {"type": "Sequence", "decoders": [*before, {"type": "BPEDecoder", "suffix": suffix}]}


def _streams_like_the_decode(tok, library, ids: list[list[int]]) -> None:
    for case in ids:
        assert _streamed(tok, case)[1] == tok.decode(case), case


@pytest.mark.parametrize(
    ("kind", "decoder"),
    [
        ("sentencepiece", _bpe(FUSE, suffix="\u2581")),  # "▁th" in the vocabulary: settled once joined
        ("bytelevel", _bpe(BYTE_LEVEL, suffix="e")),  # ByteLevel joins the tokens too
        ("sentencepiece", _bpe(suffix=" ")),  # a suffix of white space no token holds
    ],
)
def test_a_bpe_decoder_of_one_character_after_a_join_or_no_token_holding_it_streams(tmp_path, kind, decoder):
    """k08 (a one-character suffix after a join held), k12 (ByteLevel not taken for a join: its one-character suffix
    held as a rewritten token's), k14 (the vocabulary searched after a join too: "▁th" held a joined "▁"), k16 (the
    suffix stripped: " " read as the empty suffix, held). After a join the BPEDecoder sees one token, the last, and
    drops a one-character suffix wherever it stands: the text of the first tokens is a prefix of the whole. A held
    stream writes nothing until the run ends, which users see (text round 32 keeps such decoders streaming)."""
    tok, library = _tokenizer(tmp_path, kind, decoder)
    assert tok.stream_held is None, decoder
    size = library.get_vocab_size()
    cases = [[(7 * i + j) % size for j in range(1 + i % 6)] for i in range(60)]
    _streams_like_the_decode(tok, library, cases)
    held = [case for case in cases if _streamed(tok, case)[0]]
    assert held, "no text written before the end"


def test_a_bpe_decoder_after_a_step_that_rewrites_tokens_is_held(tmp_path):
    """k09 (a step before the BPEDecoder not counted), k13 (only a Replace counted). CTC's clean-up rewrites its word
    delimiter as " " inside each token (with "'" the delimiter, "'m" becomes " m"), and " " is the suffix: as the last
    token "'m" is "m", before another " m" ("'t" after it: " mt"). No token of the vocabulary holds " ", so only the
    step before tells. (The delimiter is the first character of two tokens of the trained fixture vocabulary.)"""
    from tokenizers import Tokenizer as Library

    from neurobrix.tokenizer import Tokenizer

    _, library = _tokenizer(tmp_path, "sentencepiece", None)
    vocab = library.get_vocab(with_added_tokens=True)
    assert not any(" " in t for t in vocab)
    pairs = {}
    for t in sorted(vocab):
        if len(t) == 2 and t[0] not in "<\u2581" and t[1] not in "<\u2581" and t[0] != t[1]:
            pairs.setdefault(t[0], []).append(t)
    delimiter, tokens = next((c, ts[:2]) for c, ts in sorted(pairs.items()) if len(ts) > 1)
    folder = next(tmp_path.iterdir())
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    ctc = {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": delimiter, "cleanup": True}
    data["decoder"] = _bpe(ctc, suffix=" ")
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    tok, library = Tokenizer(folder), Library.from_file(str(folder / "tokenizer.json"))
    ids = [library.token_to_id(t) for t in tokens]  # (two: CTC merges a token repeated)
    first, second = tokens[0][1], tokens[1][1]
    assert library.decode(ids[:1]) == first and library.decode(ids) == f" {first}{second}", library.decode(ids)
    assert tok.stream_held is not None
    assert _streamed(tok, ids) == ("", tok.decode(ids))


def _with_tokens(folder: Path, vocab: tuple[str, ...] = (), added: tuple[str, ...] = ()):
    """The engine's and the library's tokenizer of ``folder`` with ``vocab`` added to its model's vocabulary and
    ``added`` as added tokens (not special: a decode passes them through the decoder)."""
    from tokenizers import Tokenizer as Library

    from neurobrix.tokenizer import Tokenizer

    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    for token in vocab:
        data["model"]["vocab"][token] = len(data["model"]["vocab"])
    top = max([len(data["model"]["vocab"]) - 1, *(t["id"] for t in data["added_tokens"])])
    for n, token in enumerate(added, start=top + 1):
        flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False}
        data["added_tokens"].append({"id": n, "content": token, **flags})
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return Tokenizer(folder), Library.from_file(str(folder / "tokenizer.json"))


def test_a_suffix_held_by_tokens_only_at_their_end_streams_and_elsewhere_is_held(tmp_path):
    """k10 (the suffix's place measured as one character from the end: "ab</w>" held), k11 (the suffix looked for
    from the token's end: "x</w>y</w>", which holds it there and before, passed), k15 (the added tokens left out of
    the search: an added "p</w>q" passed). A token holding "</w>" at its end alone is spelt "ab " before another token
    and "ab" as the last, a prefix: the stream follows. "x</w>y</w>" is spelt "x y " before another and "xy" as the
    last, no prefix of "x y t": held."""
    tok, _ = _tokenizer(tmp_path, "sentencepiece", _bpe(suffix="</w>"))
    assert tok.stream_held is None  # no token holds "</w>"
    folder = next(tmp_path.iterdir())
    tok, library = _with_tokens(folder, vocab=("ab</w>",))
    ids = [library.token_to_id(t) for t in ("ab</w>", "t", "ab</w>")]
    assert tok.stream_held is None
    early, whole = _streamed(tok, ids)
    assert whole == tok.decode(ids) and early.startswith("ab "), (early, whole)
    for vocab, added in ((("x</w>y</w>",), ()), ((), ("p</w>q",))):
        shutil.rmtree(folder)
        tok, _ = _tokenizer(tmp_path, "sentencepiece", _bpe(suffix="</w>"))
        folder = next(tmp_path.iterdir())
        tok, library = _with_tokens(folder, vocab, added)
        ids = [library.token_to_id((vocab or added)[0]), library.token_to_id("t")]
        assert library.decode(ids[:1]) in ("xy", "pq") and " " in library.decode(ids), library.decode(ids)
        assert tok.stream_held is not None, (vocab, added)
        assert _streamed(tok, ids) == ("", tok.decode(ids))


# --- strict round 38: entry_problem ----------------------------------------------------------------------------------

LINEAR = {"variant": "tiled", "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4}


def _cc(major: int, minor: int):
    return SimpleNamespace(match=SimpleNamespace(compute_capability=(major, minor)))


def test_a_setting_is_held_to_each_dtype_of_its_domain():
    """e02 (only the domain's first dtype tried). Linear's shared memory grows with the element size: 4 stages of
    64 x 64 x 64 tiles need 73,728 bytes at fp16, 147,456 at fp32, past the 101,376 of compute capability 8.6."""
    domain = Domain(("fp16", "fp32"), (("M", 1, 4), ("N", 1, None), ("K", 1, None)))
    config = {**LINEAR, "num_stages": 4}
    assert entry_problem("linear", config, Domain(("fp16",), domain.ranges), _cc(8, 6)) is None
    problem = entry_problem("linear", config, domain, _cc(8, 6))
    assert problem is not None and "147456 bytes of shared memory" in problem and "fp32" in problem, problem


def test_a_setting_is_held_to_the_class_it_runs_on():
    """e04 (the class left out of the smallest call's limit: every GPU's largest shared memory used). 147,456 bytes
    fit compute capability 9.0's 232,448 and not 8.6's 101,376."""
    domain = Domain(("fp32",), (("M", 1, 4), ("N", 1, None), ("K", 1, None)))
    config = {**LINEAR, "num_stages": 4}
    assert entry_problem("linear", config, domain, _cc(9, 0)) is None
    assert "more than a block's on compute capability 8.6" in (entry_problem("linear", config, domain, _cc(8, 6)) or "")


def test_a_setting_whose_tiles_no_call_of_its_domain_makes_is_refused():
    """e03 (the shapes' tiles left out). rms_norm's BLOCK_M of 64 is within every limit alone, but the kernel's row
    block for N = 32,768 makes a 64 x 32,768 tile, past Triton's largest tensor: a domain starting at N = 32,768 runs
    no call (run's preflight refuses it, exit 3)."""
    config = {"BLOCK_M": 64, "num_warps": 4}
    problem = entry_problem("rms_norm", config, Domain(("fp16",), (("M", 1, None), ("N", 32768, None))))
    assert problem is not None and "at the smallest call of its domain" in problem, problem
    assert entry_problem("rms_norm", config, Domain(("fp16",), (("M", 1, None), ("N", 1, None)))) is None


def test_a_setting_is_judged_at_its_domains_smallest_call_not_its_largest():
    """e05 (the domain's upper end taken where it has one). rms_norm's BLOCK_M 64 runs N = 1,024 (a 64 x 1,024 tile)
    but not N = 65,536: a domain [1,024, 65,536] is runnable, its large calls left to run's own check."""
    config = {"BLOCK_M": 64, "num_warps": 4}
    assert entry_problem("rms_norm", config, Domain(("fp16",), (("M", 1, 8), ("N", 1024, 65536)))) is None


def test_a_setting_no_kernel_takes_is_an_entry_problem():
    """e01 (config_problem left out of entry_problem: what check applies). A parameter no linear variant has is
    refused before any call is sized."""
    domain = Domain(("fp16",), (("M", 1, 4), ("N", 1, None), ("K", 1, None)))
    problem = entry_problem("linear", {**LINEAR, "num_stages": 2, "BLOCK_Q": 16}, domain)
    assert problem is not None and "BLOCK_Q" in problem, problem


def _indexes_with_last_entry(kernel: str, **changed):
    """The shipped interpreter class's indexes, the last entry of ``kernel`` given a setting changed so."""
    from conftest import REPO

    from neurobrix import tables

    shipped = tables.load(REPO / "tables")
    indexes = {k: shipped.index("interpreter", k) for k in shipped.kernels("interpreter")}
    real = indexes[kernel]
    last = len(real.rows) - 1
    assert last > 0

    class LastChanged:
        def __getattr__(self, name):
            return getattr(real, name)

        def entry(self, i):
            entry = real.entry(i)
            return dataclasses.replace(entry, config={**entry.config, **changed}) if i == last else entry

    indexes[kernel] = LastChanged()
    return indexes, shipped.classes["interpreter"]


def test_doctor_holds_every_entry_the_last_included():
    """e07 (doctor's walk stopping one entry short). Linear's last interpreter entry given num_stages 10**6 is
    refused by doctor, as run refuses it."""
    from neurobrix import doctor

    indexes, klass = _indexes_with_last_entry("linear", num_stages=10**6)
    problem = doctor._unrunnable(indexes, klass)
    assert problem is not None and "entry 3" in problem and "bytes of shared memory" in problem, problem


def test_doctor_holds_each_entry_to_its_own_class():
    """e06 (doctor judging the smallest call without the class: the most shared memory any GPU has). The shipped
    interpreter settings, held to compute capability 7.5's 65,536 bytes, are refused there at num_stages 4 of fp16
    64 x 64 x 64 tiles (73,728 bytes) and pass the largest GPU's."""
    from neurobrix import doctor

    indexes, _ = _indexes_with_last_entry("linear", num_stages=4)
    assert doctor._unrunnable(indexes, None) is None
    problem = doctor._unrunnable(indexes, _cc(7, 5))
    assert problem is not None and "compute capability 7.5" in problem, problem


def test_check_draws_no_example_for_a_setting_run_refuses():
    """e09 (the refused entry's result not returned: its examples drawn on the interpreter, which ignores
    num_stages). No example is drawn, as the failure says."""
    from conformance.check import check_entry
    from neurobrix.schema import Setting

    domain = Domain(("fp16",), (("M", 1, 4), ("N", 1, None), ("K", 1, None)))
    result = check_entry("linear", Setting(domain, {**LINEAR, "num_stages": 10**6}), "fp16", 2, "ci")
    assert not result.passed and result.examples == 0, result
    assert "so no example is drawn" in (result.failure or "")


# --- strict round 37: the cgroup's limit, the memory check ----------------------------------------------------------


def test_a_cgroup_v1_limit_counts_the_page_cache_of_its_whole_hierarchy(tmp_path):
    """m02 (v1's own cache read, not its hierarchy's "total_" one). v1's memory.usage_in_bytes counts the cgroup and
    its children, and so does total_inactive_file; inactive_file is the cgroup's own pages alone."""
    _write(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/job\n",
            "cg/memory/job/memory.limit_in_bytes": f"{4 * GIB}\n",
            "cg/memory/job/memory.usage_in_bytes": f"{3 * GIB}\n",
            "cg/memory/job/memory.stat": f"inactive_file {GIB // 4}\ntotal_inactive_file {2 * GIB}\n",
        },
    )
    found = memory.cgroup_memory(str(tmp_path / "proc"), str(tmp_path / "cg"))
    assert found is not None and found[:2] == (3 * GIB, 4 * GIB), found


def test_a_limit_at_the_root_binds_a_process_in_a_cgroup_below_it(tmp_path):
    """m05 (each level read one deeper: the process's own twice, the root never). A process in "/job/step" under a
    limit set at the namespace's root alone is bound by that root's memory.max."""
    _write(
        tmp_path,
        {
            "proc/self/cgroup": "0::/job/step\n",
            "cg/memory.max": f"{2 * GIB}\n",
            "cg/memory.current": f"{GIB}\n",
            "cg/job/memory.max": "max\n",
            "cg/job/memory.current": f"{GIB // 2}\n",
            "cg/job/step/memory.max": "max\n",
            "cg/job/step/memory.current": f"{GIB // 4}\n",
        },
    )
    found = memory.cgroup_memory(str(tmp_path / "proc"), str(tmp_path / "cg"))
    assert found == (GIB, 2 * GIB, str(tmp_path / "cg" / "memory.max")), found


def test_a_malformed_stat_counts_no_page_cache(tmp_path):
    """m03 (the cache read before a malformed line kept). memory.stat that cannot be read whole counts no page cache
    as left: half a stat is not the kernel's figure."""
    _write(
        tmp_path,
        {
            "proc/self/cgroup": "0::/\n",
            "cg/memory.max": f"{4 * GIB}\n",
            "cg/memory.current": f"{3 * GIB}\n",
            "cg/memory.stat": f"active_file {GIB}\ninactive_file many\n",
        },
    )
    assert memory.cgroup_memory(str(tmp_path / "proc"), str(tmp_path / "cg"))[:2] == (GIB, 4 * GIB)


def test_the_memory_checks_figures_are_gib():
    """m10 (GiB written of bytes / 10**9). 1 GiB free is "1.00 GiB", 2**33 bytes "8.00 GiB"."""
    from neurobrix.config import ModelConfig

    cfg = ModelConfig.from_hf(SLIM)
    with pytest.raises(memory.DeviceMemoryError) as refused:
        memory.require_fit(cfg, 4, 1, 1, 2**28, GIB, 8 * GIB)
    assert "but 1.00 GiB of 8.00 GiB is free" in str(refused.value), refused.value


def test_the_warmups_memory_check_is_on_the_model_it_builds(tmp_path, monkeypatch, capsys):
    """w01 (the whole model checked: warmup builds LAYERS layers of it), w03 (4 bytes an element whatever the
    dtype). The check is run's on what warmup builds: its first layers, in the warmup's dtype."""
    import neurobrix.warmup as warmup_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    deep = {**SLIM, "num_hidden_layers": 7}
    assert main(["import", str(make_checkpoint(tmp_path / "deep", config=config_dict(**deep)))]) == 0
    checked = []

    def spy(device, cfg, itemsize, *rest):
        checked.append((cfg.num_layers, itemsize))
        raise memory.DeviceMemoryError("stop here")

    monkeypatch.setattr(memory, "require_fit_on", spy)
    code, err = _main(capsys, "warmup", "--model", "deep", "--dtype", "fp16", "--max-prompt", "8", "--max-tokens", "4")
    assert code == 5 and checked == [(warmup_module.LAYERS, 2)], (checked, err)


# --- gate round 36: G406, a member twine reads as the metadata --------------------------------------------------------


def test_every_member_twine_reads_before_the_dist_infos_metadata_is_named(built, tmp_path, monkeypatch):
    """g01 (the first such member named, the others not). Two tracked files twine takes before the .dist-info's
    METADATA: each is refused by its name (fixing one still leaves the other to be uploaded)."""
    from gate_fixtures import RawMember, wheel_members, with_true_record
    from test_gate_hostile import judge, write_wheel
    from test_gate_round36 import _planted_metadata, _tracking

    data = _planted_metadata(built)
    planted = ["neurobrix/A_METADATA", "neurobrix/METADATA"]
    members = [*wheel_members(built.wheel), *(RawMember(name.encode(), data) for name in planted)]
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    _tracking(monkeypatch, dict.fromkeys(planted, data))
    named = {f.path for f in judge(wheel).findings if f.code == "G406"}
    assert named == set(planted), named


def test_twines_findings_point_at_the_dist_infos_metadata_beside_another_member_so_named(built, tmp_path):
    """g04 (any member whose name ends in METADATA taken: two found, the findings pointing at none). twine's findings
    on a wheel with a tracked ``neurobrix/METADATA`` point at the .dist-info's METADATA."""
    from gate_fixtures import RawMember, wheel_members, with_true_record
    from test_gate_hostile import write_wheel

    from gate import checker
    from gate.archive import WheelArchive
    from gate.checks import Limits

    members = [*wheel_members(built.wheel), RawMember(b"neurobrix/METADATA", b"Metadata-Version: 2.4\n")]
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    assert checker._metadata_path(WheelArchive(wheel, Limits())) == f"{built.dist_info}/METADATA"


def test_a_pkg_info_below_the_sdists_root_is_judged_as_any_file(built, tmp_path):
    """g03 (every member named PKG-INFO passed as the backend's). Only the root's PKG-INFO is written by the build
    backend; ``neurobrix/PKG-INFO``, which git does not track, is G509 (a file nothing vouches for)."""
    from gate_fixtures import rewrite_sdist
    from test_gate_hostile import judge, refused_with

    sdist = rewrite_sdist(built.sdist, tmp_path, add={"neurobrix/PKG-INFO": b"Metadata-Version: 2.4\n"})
    refused_with(judge(sdist), "G509", f"{built.root}/neurobrix/PKG-INFO")


def test_the_warmups_memory_check_counts_the_longest_prompt_where_the_context_clips_its_caches(
    tmp_path, monkeypatch, capsys
):
    """w04 (each cache's first prompt counted). With a context of 64, `--max-prompt 40 --max-tokens 40` fills every
    cache the 40-token prompt goes into with shorter prompts first (their windows reach the context too): the check
    must still count the 40 tokens, with the 64-position cache."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    short = {**SLIM, "max_position_embeddings": 64}
    assert main(["import", str(make_checkpoint(tmp_path / "short", config=config_dict(**short)))]) == 0
    checked = []

    def spy(device, cfg, itemsize, batch, prompt, capacity, *rest):
        checked.append((prompt, capacity))
        raise memory.DeviceMemoryError("stop here")

    monkeypatch.setattr(memory, "require_fit_on", spy)
    code, err = _main(capsys, "warmup", "--model", "short", "--max-prompt", "40", "--max-tokens", "40")
    assert code == 5 and checked == [(40, 64)], (checked, err)
