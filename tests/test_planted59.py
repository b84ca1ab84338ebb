"""Planted-bug round 57 (docs/planted-bugs.md): cases for the plants of tests/planted59_plants.py that the tests
guarding their code let through, in what strictness round 57, text round 47 and walk-through round 40 landed.

Each case fails with its plant in place (checked with tests/planted59_driver.py, this file alone) and passes on the
clean code. No GPU, no subprocess: the interpreter class's shipped tables copied and edited, nvidia-h200's class file
edited beside one of its records, transformers' own processors and its processor list as the reference.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest import REPO, retrack
from test_walk40 import narrow_kernel  # noqa: F401  (the fixture: a function of silu_mul's module the lint refuses)

from conformance import certify, mutants, track
from neurobrix import generate, gpu, tables
from neurobrix.errors import TablesError, UsageError

CLASS = "interpreter"
RECORD = f"{CLASS}/rms_norm.proofs.yaml"


def _copy(tmp_path: Path, class_id: str = CLASS) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / class_id, root / class_id)
    return root


def _listed_by_hand(root: Path, listed: list[tables.VerifiedRecord]) -> None:
    """TRACKED.yaml written as `track` writes it, but with ``listed`` as its verified records (a hand's list)."""
    (root / tables.TRACKED_NAME).write_text(tables.render_tracked(tables.scan(root), listed), encoding="utf-8")


# ------------------------------------------------------------------ the verified list


def test_a_listed_record_is_still_bound_to_its_index(tmp_path):
    """v03: the list spares a record its form check, never its binding: an index whose setting no proof covers
    (BLOCK_M 64 made 32), listed by hand beside its record with both hashes as they now are, is refused by run as
    the unlisted folder is, one line naming the kernel's entry its record does not prove."""
    root = _copy(tmp_path)
    index = tables.index_path(root, CLASS, "rms_norm")
    text = index.read_text(encoding="utf-8")
    assert text.count('"BLOCK_M": 64') == 1
    index.write_text(text.replace('"BLOCK_M": 64', '"BLOCK_M": 32'), encoding="utf-8")
    retrack(root)
    tables.clear_cache()
    with pytest.raises(TablesError) as unlisted:
        tables.load(root).index(CLASS, "rms_norm")
    sha = {f.path: f.sha256 for f in tables.scan(root)}
    _listed_by_hand(root, [tables.VerifiedRecord(RECORD, sha[RECORD], sha[f"{CLASS}/rms_norm.json"])])
    assert RECORD in {v.path for v in tables.read_verified(root)}
    tables.clear_cache()
    with pytest.raises(TablesError) as listed:
        tables.load(root).index(CLASS, "rms_norm")
    assert str(listed.value) == str(unlisted.value) and "\n" not in str(listed.value)


def test_a_record_verified_under_one_class_file_is_verified_again_under_another(tmp_path):
    """v05: the process's memo of verified records holds the class's class.yaml too: nvidia-h200's greedy_pick record
    verified, then the class's multiprocessor count edited (its proofs now of another GPU's), is refused the second
    time in the same process, as a fresh process refuses it."""
    class_id = "nvidia-h200"
    root = _copy(tmp_path, class_id)
    record = f"{class_id}/greedy_pick.proofs.yaml"
    verified, refused = tables.verified_records(root, tables.scan(root), {record})
    assert [v.path for v in verified] == [record] and refused == []
    path = root / class_id / tables.CLASS_NAME
    text = path.read_text(encoding="utf-8")
    assert text.count("multiprocessor_count: 132\n") == 1
    path.write_text(text.replace("multiprocessor_count: 132\n", "multiprocessor_count: 114\n"), encoding="utf-8")
    verified, refused = tables.verified_records(root, tables.scan(root), {record})
    assert verified == [] and [p.path for p in refused] == [record]
    assert "records a device that is not of class nvidia-h200" in refused[0].message


def test_track_check_holds_a_listed_record_to_its_hashes(tmp_path):
    """v07: `track --check` names a verified line whose index hash is not the index's (a hand's edit: run then reads
    the record in full, but the list claims what track never verified), not only a record track refuses."""
    root = _copy(tmp_path)
    track.write(root)
    assert track.out_of_sync(root) == []
    listed = list(tables.read_verified(root))
    listed[0] = tables.VerifiedRecord(listed[0].path, listed[0].sha256, listed[0].sha256)
    _listed_by_hand(root, listed)
    (problem,) = track.out_of_sync(root)
    assert f"lists {listed[0].path} as verified, which `track` does not verify now" in problem


# ------------------------------------------------------------------ generation settings, against transformers


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from neurobrix import tiny

    return tiny.make(tmp_path_factory.mktemp("planted59") / "tiny")


def _transformers_builds(field: str, value) -> bool:
    """Whether transformers' generate builds the processor of ``field`` (LogitNormalization, or
    InfNanRemoveLogitsProcessor) for a generation config setting it to ``value``."""
    transformers = pytest.importorskip("transformers")
    from transformers.generation.utils import GenerationMixin

    class Model:  # what _get_logits_processor reads of the model for these settings
        _merge_criteria_processor_list = GenerationMixin._merge_criteria_processor_list

    built = GenerationMixin._get_logits_processor(
        Model(),
        transformers.GenerationConfig(**{field: value}),
        input_ids_seq_length=3,
        encoder_input_ids=torch.tensor([[1, 2, 3]]),
        device="cpu",
        model_kwargs={},
    )
    name = {"renormalize_logits": "LogitNormalization", "remove_invalid_values": "InfNanRemoveLogitsProcessor"}
    return [type(p).__name__ for p in built] == [name[field]]


@pytest.mark.parametrize("value", [True, 1, "true", 1.0])
def test_renormalize_and_remove_invalid_values_are_on_where_transformers_builds_them(tiny_folder, tmp_path, value):
    """g01, g08: greedy runs take renormalize_logits, and the token masks remove_invalid_values, exactly where
    transformers' generate builds their processors (``is True``): written 1, 1.0 or "true", neither is on."""
    from neurobrix.run import model_sampling
    from neurobrix.tokenizer import Tokenizer

    folder = tmp_path / "tiny"
    shutil.copytree(tiny_folder, folder)
    fields = {"renormalize_logits": value, "remove_invalid_values": value}
    (folder / "generation_config.json").write_text(json.dumps(fields), encoding="utf-8")
    tokenizer = Tokenizer(folder)
    sampling = model_sampling(generate.Sampling(), tokenizer, lambda line: None)
    assert (sampling.renormalize_logits is True) == _transformers_builds("renormalize_logits", value)
    masks = tokenizer.constraints(1000, 3)
    assert ("remove_invalid_values" in masks) == _transformers_builds("remove_invalid_values", value)


def test_the_greedy_pick_under_renormalize_logits_is_taken_from_float32(tmp_path):
    """g02: a model's bf16 logits (a GPU run without token masks reaches the pick in the model's dtype), under
    renormalize_logits, are picked from their float32 log-softmax, as transformers' generate casts them to float32
    before LogitNormalization: 1,000 scores of 0 and one of 2^-7 pick the larger one (in bf16 their log-softmaxes
    round together, near -6.9, and the first is picked)."""
    from transformers.generation.logits_process import LogitNormalization

    logits = torch.zeros((1, 1000), dtype=torch.bfloat16)
    logits[0, 500] = 2.0**-7
    theirs = LogitNormalization()(None, logits.float()).argmax(dim=-1)
    ours = generate.sample(logits, generate.Sampling(renormalize_logits=True), None)
    assert ours.tolist() == theirs.tolist() == [500]


@pytest.mark.parametrize(
    ("prompt", "tokens", "bad", "min_length"),
    [
        ([5], [3, 8, 4], [[5, 7]], 3),  # a word whose prefix is the one-token prompt; eos masked for two steps
        ([4, 3], [5, 6], [[3, 7]], 0),  # a two-token word completed at the first step
        ([4, 2], [5, 6], [[2, 9], [2]], 0),  # a word starting with the eos id (kept), and the eos id alone (dropped)
    ],
)
def test_bad_words_and_min_length_mask_what_transformers_processors_mask(prompt, tokens, bad, min_length):
    """g03, g04, g05, g06: each step's scores after bad_words_ids and min_length, the engine's processors against
    transformers' NoBadWordsLogitsProcessor and MinLengthLogitsProcessor on the same history (eos 2, vocab 12)."""
    from transformers.generation.logits_process import MinLengthLogitsProcessor, NoBadWordsLogitsProcessor

    eos, vocab = 2, 12
    words = tuple(tuple(w) for w in bad if not (len(w) == 1 and w[0] == eos))  # as Tokenizer.constraints drops it
    ours = generate.Processors(
        generate.Constraints(bad_words_ids=words, min_length=min_length), [prompt], len(tokens) + 1, {eos}
    )
    theirs = [NoBadWordsLogitsProcessor(bad, eos_token_id=[eos]), MinLengthLogitsProcessor(min_length, [eos])]
    history = list(prompt)
    generator = torch.Generator().manual_seed(59)
    for token in [*tokens, None]:
        scores = torch.randn((1, vocab), generator=generator)
        expected = scores.clone()
        for processor in theirs:
            expected = processor(torch.tensor([history]), expected)
        got = ours(scores)
        assert torch.equal(got, expected), (history, got, expected)
        if token is not None:
            ours.push(torch.tensor([token]))
            history.append(token)


# ------------------------------------------------------------------ the lint before certify's and mutants' work


def test_certify_refuses_when_any_kernel_fails_the_lint_naming_that_one(narrow_kernel, tmp_path, monkeypatch):  # noqa: F811
    """w01, w02: certify of two kernels, one of which the lint refuses (silu_mul, with a function whose row index
    stays int32), is refused before any work, naming that kernel alone with its sentence (rms_norm passes)."""
    root = _copy(tmp_path)

    def past_the_lint(*args, **kwargs):
        raise AssertionError("certify went past the lint")

    monkeypatch.setattr(certify, "_unwritable", past_the_lint)
    with pytest.raises(certify.LintFailed) as refused:
        certify.certify(CLASS, root, ["rms_norm", "silu_mul"], ["fp32"], False, 1, "ci", None, "certify")
    said = str(refused.value)
    assert said.startswith("the launch lint refuses the source of silu_mul (") and f"silu_mul: {narrow_kernel}" in said
    assert "rms_norm" not in said


def test_mutants_refuse_when_any_kernels_clean_source_fails_the_lint(narrow_kernel, monkeypatch):  # noqa: F811
    """w03: mutants of two kernels, one of which the lint refuses unplanted, are refused (every check of that one
    would count as caught), though the other passes."""
    chosen = [next(m for m in mutants.MUTANTS if m.kernel == k) for k in ("rms_norm", "silu_mul")]
    caught = mutants.Outcome(caught=True, how="error", entry="", id="x", kernel="silu_mul", bug="", seconds=0.0)
    monkeypatch.setattr(mutants, "run_one", lambda *args, **kwargs: caught)
    with pytest.raises(UsageError, match="the launch lint refuses the unpatched source of silu_mul,") as refused:
        mutants.run(chosen)
    assert narrow_kernel in str(refused.value) and "rms_norm" not in str(refused.value)


# ------------------------------------------------------------------ the order of run's and warmup's refusals


@pytest.fixture
def no_gpu(tmp_path, monkeypatch):
    """A CPU without the interpreter, an empty store, the checkout's tables (nothing cached from another test)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    gpu.device_facts.cache_clear()
    monkeypatch.setattr(gpu, "device_facts", gpu.device_facts.__wrapped__)
    tables._locate.cache_clear()
    tables.clear_cache()
    yield
    tables._locate.cache_clear()
    tables.clear_cache()


def _refused(capsys, *args: str) -> tuple[int, str]:
    from neurobrix.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(list(args))
    return int(done.value.code), capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "warmup"])
def test_damaged_tables_are_refused_before_the_model(no_gpu, command, tmp_path, monkeypatch, capsys):
    """r01: a NEUROBRIX_TABLES folder that is there but edited since its list was written (an index's bytes) is
    refused (exit 3) before a model not stored is named (exit 2): the tables are verified first, not only found."""
    root = _copy(tmp_path)
    retrack(root)
    index = tables.index_path(root, CLASS, "rms_norm")
    index.write_text(index.read_text(encoding="utf-8") + " ", encoding="utf-8")
    monkeypatch.setenv("NEUROBRIX_TABLES", str(root))
    code, err = _refused(capsys, command, "--model", "nope", *(["--prompt", "hi"] if command == "run" else []))
    assert code == 3 and "rms_norm.json" in err and "no model" not in err, err


def test_warmup_names_a_model_not_stored_before_the_device(no_gpu, capsys):
    """r03: `warmup --model nope` on a CPU names the model (exit 2), as run does, not "no GPU found" (exit 5); a
    stored model's device is refused after."""
    code, err = _refused(capsys, "warmup", "--model", "nope")
    assert code == 2 and "no model 'nope'" in err.splitlines()[0], err
