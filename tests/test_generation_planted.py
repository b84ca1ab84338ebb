"""Generation's edges that planted bugs in the token masks (``neurobrix.generate.Processors``), the decode loops
and their statistics went through: each test here failed with one such bug and passes without it (which bug: its
docstring). The truth for a mask is transformers' own logits processor on the same scores and the same ids."""

from __future__ import annotations

import pytest
import torch

from neurobrix import stack
from neurobrix.generate import Constraints, Processors, Sampling, generate_batch

transformers = pytest.importorskip("transformers")
lp = transformers.generation.logits_process

VOCAB = 12
STEPS = 5


def their_processors(c: Constraints, prompts: list[list[int]], max_new: int, eos: list[int]):
    """transformers' processors for ``c``, in the order its generate builds them (repetition penalty 1)."""
    prompt_len = len(prompts[0])
    found = []
    if c.encoder_repetition_penalty != 1:
        found.append(lp.EncoderRepetitionPenaltyLogitsProcessor(c.encoder_repetition_penalty, torch.tensor(prompts)))
    if c.no_repeat_ngram_size:
        found.append(lp.NoRepeatNGramLogitsProcessor(c.no_repeat_ngram_size))
    if c.bad_words_ids:
        found.append(lp.NoBadWordsLogitsProcessor([list(w) for w in c.bad_words_ids], eos))
    if c.min_length:
        found.append(lp.MinLengthLogitsProcessor(c.min_length, eos))
    if c.min_new_tokens:
        found.append(lp.MinNewTokensLengthLogitsProcessor(prompt_len, c.min_new_tokens, eos))
    if c.forced_bos_token_id is not None:
        found.append(lp.ForcedBOSTokenLogitsProcessor(c.forced_bos_token_id))
    if c.forced_eos_token_id:
        found.append(lp.ForcedEOSTokenLogitsProcessor(prompt_len + max_new, list(c.forced_eos_token_id)))
    if c.suppress_tokens:
        found.append(lp.SuppressTokensLogitsProcessor(list(c.suppress_tokens)))
    if c.begin_suppress_tokens:  # generate's own begin index: one later after a one-token prompt it forces a start of
        begin = prompt_len if (prompt_len > 1 or c.forced_bos_token_id is None) else prompt_len + 1
        found.append(lp.SuppressTokensAtBeginLogitsProcessor(list(c.begin_suppress_tokens), begin))
    return lp.LogitsProcessorList(found)


def masks_step_by_step(c: Constraints, prompts: list[list[int]], picks: list[list[int]], eos: list[int]):
    """(ours, theirs) scores at each step of a batch generating ``picks`` (per step, a token per row), on random
    scores of both signs."""
    gen = torch.Generator().manual_seed(7)
    ours = Processors(c, prompts, len(picks), set(eos))
    theirs = their_processors(c, prompts, len(picks), eos)
    ids = torch.tensor(prompts)
    for step in picks:
        scores = torch.randn((len(prompts), VOCAB), generator=gen) * 3
        yield ours(ours.before_penalty(scores.clone())), theirs(ids, scores.clone())
        ours.push(torch.tensor(step))
        ids = torch.cat([ids, torch.tensor(step)[:, None]], dim=1)


# Two rows whose histories differ, so that a mask meant for one row is wrong on the other: the first row's prompt
# starts the pattern a setting looks for (a repeated n-gram, a bad word's prefix), the second's does not.
CASES = {
    # G02 (a history of exactly n tokens has one n-gram, bans nothing with `length > n`), G05 (another row's ban)
    "ngram-2-at-its-first-n-gram": (Constraints(no_repeat_ngram_size=2), [[5, 5], [3, 4]], [[5, 1], [4, 3]], [11]),
    "ngram-3": (Constraints(no_repeat_ngram_size=3), [[1, 2, 3], [4, 4, 4]], [[1, 5], [2, 4], [3, 4]], [11]),
    # G06 (a word one longer than the history), G09 (a bad word's ban on every row), G07 (a lone eos id banned)
    "bad-word-as-long-as-the-prompt-plus-one": (
        Constraints(bad_words_ids=((6, 7, 8), (2, 9), (11,))),
        [[6, 7], [7, 6]],
        [[2, 6], [9, 7], [6, 8], [7, 2]],
        [11],
    ),
    # G10, G11 (the boundary of min_length / min_new_tokens), G12 (each eos id, not the first only)
    "min-length-across-its-edge": (Constraints(min_length=5), [[1, 2, 3], [4, 5, 6]], [[1, 1]] * STEPS, [10, 11]),
    "min-new-tokens-across-its-edge": (Constraints(min_new_tokens=2), [[1, 2, 3], [4, 5, 6]], [[1, 1]] * 5, [10, 11]),
    # G42: an eos id below the vocabulary (-1, as some config.json files write "none") masks nothing, as
    # transformers' processor passes over it (taken as an index it masked the last token)
    "min-new-tokens-with-a-negative-eos-id": (
        Constraints(min_new_tokens=2),
        [[1, 2, 3], [4, 5, 6]],
        [[1, 1]] * 3,
        [-1],
    ),
    # G13 (a start forced after a prompt longer than one token)
    "forced-bos-after-a-long-prompt": (Constraints(forced_bos_token_id=4), [[1, 2, 3], [4, 5, 6]], [[1, 1]] * 3, [11]),
    "forced-bos-after-one-token": (
        Constraints(forced_bos_token_id=4, begin_suppress_tokens=(2, 3)),
        [[1], [9]],
        [[4, 4], [1, 1], [1, 1]],
        [11],
    ),
    # G14, G15, G43 (the step forced), G16 (every forced eos id, not the first only), G44 (suppressing one of them
    # after forcing leaves the other)
    "forced-eos-two-ids": (
        Constraints(forced_eos_token_id=(10, 7), suppress_tokens=(10,)),
        [[1, 2, 3], [4, 5, 6]],
        [[1, 1]] * STEPS,
        [11],
    ),
    # G17, G18 (the step the begin suppression applies at)
    "begin-suppress": (Constraints(begin_suppress_tokens=(2, 3)), [[1, 2, 3], [4, 5, 6]], [[1, 1]] * 3, [11]),
    # G19 (the sign for negative scores), G20 (tokens generated since the prompt raised too)
    "encoder-repetition-penalty-over-the-prompt-only": (
        Constraints(encoder_repetition_penalty=2.5),
        [[1, 2, 3], [4, 5, 1]],
        [[7, 8], [9, 7], [8, 9]],
        [11],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_mask_is_transformers_processor_on_each_row_and_step(case):
    """Over a batch of two sequences whose histories differ and several steps, ``Processors`` gives exactly the
    scores transformers' processors give on the same scores and ids. Bugs caught (planted): a no-repeat n-gram
    check starting one step late (a history of exactly n tokens), a ban written to the first row whatever the row
    (n-grams, bad words), a bad word one longer than the history passed over, min_length and min_new_tokens one
    step long, their mask on the first eos id only, a forced start after any prompt, the forced end one step
    early or late or on its first id only, the begin suppression one step late or blind to a forced start, the
    encoder repetition penalty's sign swapped or applied to generated tokens, each row's pick pushed to the first
    row's history."""
    constraints, prompts, picks, eos = CASES[case]
    steps = list(masks_step_by_step(constraints, prompts, picks, eos))
    for n, (ours, theirs) in enumerate(steps):
        assert torch.equal(ours, theirs), (case, n, ours, theirs)


def tiny_batch(batch: int, capacity: int):
    """A one-layer model on zero weights and PyTorch's kernels, on the CPU: every logit 0, so greedy picks the
    lowest token no mask removes."""
    from test_runtime_planted import TINY

    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH
    from neurobrix.warmup import scratch_weights

    return Transformer(
        TINY, scratch_weights(TINY, torch.float32, torch.device("cpu")), TORCH, batch=batch, capacity=capacity
    )


def test_a_finished_sequence_gets_no_more_tokens_while_the_batch_goes_on():
    """With no_repeat_ngram_size 1 each row greedily takes the lowest token its own history does not hold
    (transformers' NoRepeatNGramLogitsProcessor on all-zero scores): the row that reaches the eos id first stops
    there, its later steps handed to ``on_step`` as None, while the other row goes on. Bugs caught (planted): the
    finished row's tokens still streamed; every row pushed the first row's pick."""
    prompts = [[0, 1], [2, 3]]
    eos, steps = {2}, 4
    rule = lp.NoRepeatNGramLogitsProcessor(1)
    ids, want = torch.tensor(prompts), [[], []]
    for _ in range(steps):
        pick = rule(ids, torch.zeros((2, 32))).argmax(dim=-1)
        for row in range(2):
            if not (want[row] and want[row][-1] in eos):
                want[row].append(int(pick[row]))
        ids = torch.cat([ids, pick[:, None]], dim=1)
    assert want[0] == [2] and len(want[1]) == steps  # the first row ends at once, the second does not
    streamed: list[list[int | None]] = []
    outs, stats = generate_batch(
        tiny_batch(2, 8),
        prompts,
        steps,
        Sampling(),
        eos,
        on_step=streamed.append,
        constraints=Constraints(no_repeat_ngram_size=1),
    )
    assert outs == want
    assert [s[0] for s in streamed] == [2, None, None, None] and [s[1] for s in streamed] == want[1]
    assert stats.prompt_tokens == 4 and stats.generated_tokens == 1 + steps


@pytest.mark.parametrize("device_pick", [True, False])
def test_one_new_token_has_no_decode_rate(device_pick):
    """The first token of each sequence comes from the prefill: with one new token nothing was decoded and the
    statistics line's decode rate is 0, whatever the batch (a count of decoded tokens that took the first tokens
    in gave a rate); the prompt tokens are every row's."""
    outs, stats = generate_batch(tiny_batch(2, 4), [[1, 2], [3, 4]], 1, Sampling(), set(), device_pick=device_pick)
    assert outs == [[0], [0]]
    assert stats.decode_tokens_per_s == 0.0 and stats.generated_tokens == 2 and stats.prompt_tokens == 4


def test_a_seed_torch_cannot_take_and_a_penalty_of_zero_are_usage_errors():
    """--seed takes what torch.Generator.manual_seed takes, [0, 2**64), and --repetition-penalty what transformers'
    RepetitionPenaltyLogitsProcessor takes, above 0 (bounds made inclusive let 2**64 reach torch's own error and a
    penalty of 0 divide by zero); --top-p is [0, 1] as transformers' TopPLogitsWarper takes it (0 keeps the most
    likely token)."""
    from neurobrix.errors import UsageError

    torch.Generator().manual_seed(2**64 - 1)
    with pytest.raises((ValueError, RuntimeError)):
        torch.Generator().manual_seed(2**64)
    with pytest.raises(ValueError):
        lp.RepetitionPenaltyLogitsProcessor(0.0)
    Sampling(temperature=1.0, top_p=1.0, seed=2**64 - 1, repetition_penalty=1e-3).validate()
    for refused in (Sampling(seed=2**64), Sampling(repetition_penalty=0.0), Sampling(top_p=-0.1)):
        with pytest.raises(UsageError):
            refused.validate()


# --- the compiler stack's re-proof ----------------------------------------------------------------------------


@pytest.fixture
def reproved(tmp_path, monkeypatch):
    """Interpreter-class tables certified with another Triton, re-proved on this machine's stack: (tables folder,
    re-proof file)."""
    from kernel_tables import STACK, write_tables
    from test_stack import _other_minor, _reproof

    from neurobrix import tables

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    root = write_tables(tmp_path / "tables", torch=STACK["torch"], triton=_other_minor(STACK["triton"]))
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    _reproof("interpreter", stack.running_stack())
    stack.require_certified_stack("interpreter")  # admitted by the re-proof
    return root, tmp_path / "home" / "reproofs" / "interpreter.json"


def test_a_reproof_admits_only_the_triton_it_was_made_with(reproved):
    """A re-proof holds for exactly the torch and the Triton of its check (neurobrix.stack): another Triton, with
    the same torch, is not admitted (a comparison of the torch versions alone admitted it)."""
    from test_stack import _other_patch

    here = stack.running_stack()
    found = stack.verdict("interpreter", running=stack.Stack(here.torch, _other_patch(here.triton)))
    assert not found.ok and "was made on" in str(found.problem)


def test_a_reproof_goes_stale_when_a_table_goes_away(reproved):
    """A kernel table removed since the re-proof is a change of the tables it covered, as one added or altered
    (a comparison over today's files only passed over it)."""
    from conftest import retrack

    from neurobrix import tables
    from neurobrix.errors import CompilerStackError

    root, _ = reproved
    for name in ("silu_mul.json", "silu_mul.proofs.yaml"):
        (root / "interpreter" / name).unlink()
    retrack(root)
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=r"stale: the tables changed since \(interpreter/silu_mul"):
        stack.require_certified_stack("interpreter")


def test_a_reproof_of_another_class_is_not_this_classs(reproved):
    """A re-proof file naming another class (copied from another machine's store, say) proves nothing about this
    class's tables, even with their hashes: refused as not this class's (the class field went unread)."""
    import json

    from neurobrix.errors import CompilerStackError

    _, path = reproved
    path.write_text(json.dumps({**json.loads(path.read_text()), "class": "nvidia-h200"}))
    with pytest.raises(CompilerStackError, match="not a re-proof of this class"):
        stack.require_certified_stack("interpreter")


def test_a_classs_hashes_are_its_folders_files_only():
    """The files a re-proof covers are those under the class's folder: a class whose id begins another's
    (nvidia-h200, nvidia-h200-nvl) does not take in the other's files (a prefix test without the slash did, so a
    change to one class made the other's re-proof stale)."""
    from pathlib import Path

    from neurobrix import tables
    from neurobrix.schema import TrackedFile

    paths = ["nvidia-h200/class.yaml", "nvidia-h200/linear.json", "nvidia-h200-nvl/class.yaml"]
    tracked = tuple(TrackedFile(p, f"{tables.WHEEL_DIR}/{p}", "0" * 64, 1) for p in paths)
    loaded = tables.Tables(tables.TablesLocation(Path("/nowhere"), "given"), tracked, {}, {})
    assert set(stack.class_hashes("nvidia-h200", loaded)) == set(paths[:2])


def test_torch_versions_without_a_major_minor_are_never_the_same_stack():
    """The rule is torch's major.minor: a version naming none (a local build called "nightly") matches nothing,
    not even another such version (two unreadable versions compared equal as None)."""
    assert not stack.compatible(stack.Stack("nightly", "3.6.0"), stack.Stack("custom", "3.6.0"))
    assert stack.compatible(stack.Stack("2.11.0+cu130", "3.6.0"), stack.Stack("2.11.1", "3.6.0"))


@pytest.mark.parametrize("rule", ["pow3", "exactly", "pow2<=16", ""])
def test_a_rule_that_is_none_of_the_three_buckets_nothing(rule):
    """buckets' rules are exact, pow2 and pow2>=F: any other is refused where a value is bucketed, not read as one
    domain per value (an unknown rule taken as exact would look a value up where no certified domain was cut)."""
    from neurobrix.buckets import bucket_of, valid_rule

    assert not valid_rule(rule)
    with pytest.raises(ValueError, match="unknown bucket rule"):
        bucket_of(rule, 5)


# --- the memory check -----------------------------------------------------------------------------------------


def llama_8b():
    from conformance.catalogue import load

    return load()[0]["meta-llama/Llama-3.1-8B-Instruct"]


def test_the_longest_context_named_is_the_one_require_fit_admits():
    """The longest context the refusal names is the largest that ``require_fit`` itself admits: free memory equal
    to a context's whole need admits that context (a search comparing with < named one less), and with room for
    everything it is the model's context (a search ending one short never named it)."""
    from neurobrix import memory

    cfg, n = llama_8b(), 1000
    free = memory.plan(cfg, 2, 1, n, n).total
    memory.require_fit(cfg, 2, 1, n, n, free=free)
    assert memory.longest_context(cfg, 2, 1, free) == n
    assert memory.longest_context(cfg, 2, 1, 2**50) == cfg.max_positions


def test_working_memory_holds_a_chunks_mlp_and_float32_logits():
    """A prefill pass holds the fused gate/up projection's output [tokens, 2 I] and its activated half [tokens, I]
    at once (neurobrix.model: silu_mul of the fused linear), and sampling takes the logits as float32 whatever the
    run's dtype (``sample``'s ``logits.float()``): the working memory counted covers both (counting the q/k/v
    width in place of the wider gate/up one, or the logits in the run's dtype, fell short)."""
    import dataclasses

    from neurobrix import memory
    from neurobrix.model import chunk_length

    cfg, itemsize = llama_8b(), 2
    tokens = chunk_length(1)
    assert 2 * cfg.intermediate_size > cfg.qkv_size
    assert memory.activation_bytes(cfg, itemsize, 1, 10**5) >= tokens * 3 * cfg.intermediate_size * itemsize
    wider = dataclasses.replace(cfg, vocab_size=cfg.vocab_size + 1000)
    grown = memory.activation_bytes(wider, itemsize, 1, 16) - memory.activation_bytes(cfg, itemsize, 1, 16)
    assert grown == 1000 * memory.LOGIT_BYTES >= 1000 * 4  # 64 B a logit since strict round 52 (the sampler's copies)


# --- the tracked-file check at load ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["a file without a suffix", "a dangling symlink", "a symlink to a folder"])
def test_an_untracked_entry_of_any_kind_is_refused(fixture_tables, tmp_path, kind):
    """Nothing under the tables folder but what TRACKED.yaml lists (neurobrix.tables): an untracked file without a
    suffix, a symlink to nothing and a symlink to a folder are refused like an untracked .json (the scan for
    untracked files looked at names with a suffix only; a test of "is a file" passed over the symlinks)."""
    from neurobrix import tables
    from neurobrix.errors import TablesError

    where = fixture_tables / "interpreter" / "extra"
    if kind == "a file without a suffix":
        where.write_text("{}")
    elif kind == "a dangling symlink":
        where.symlink_to(tmp_path / "nowhere")
    else:
        (tmp_path / "folder").mkdir()
        where.symlink_to(tmp_path / "folder")
    tables.clear_cache()
    with pytest.raises(TablesError, match=r"interpreter/extra: present but not in the tracked list"):
        tables.load()


def test_a_proofs_file_altered_after_the_folder_check_is_refused(fixture_tables):
    """An audit record is read after load() verified every hash, as an index is: the bytes parsed are hashed again,
    so a record changed in between is refused rather than shown (its digest went unpassed to the read)."""
    from neurobrix import tables
    from neurobrix.errors import TablesError

    loaded = tables.load()
    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    path.write_text(path.read_text() + "# changed\n")
    with pytest.raises(TablesError, match=r"demo.proofs.yaml: changed while the tables were being loaded"):
        loaded.proofs("interpreter", "demo")


def test_a_class_yaml_altered_during_the_load_is_refused(fixture_tables, monkeypatch):
    """class.yaml is parsed after the folder check: bytes changed between the two are refused, not parsed (the
    class file was read without its tracked digest)."""
    from neurobrix import tables
    from neurobrix.errors import TablesError

    checked = tables.check_files

    def check_then_alter(root, tracked):
        problems = checked(root, tracked)
        path = root / "interpreter" / "class.yaml"
        path.write_text(path.read_text() + "# changed\n")
        return problems

    monkeypatch.setattr(tables, "check_files", check_then_alter)
    tables.clear_cache()
    with pytest.raises(TablesError, match=r"class.yaml: changed while the tables were being loaded"):
        tables.load()


def test_a_length_segment_ends_where_an_entry_ends(tmp_path):
    """``length_segments`` cuts where an entry's domain ends even when no entry starts there (M certified up to
    100 inside the bucket 65-128): within each segment every length finds the same entry or none, as the plan's
    own lookup finds it (a cut at entry starts only merged 65-100 with 101-128, so warmup judged 101 by 65)."""
    from kernel_tables import CONFIGS, write_kernel, write_tables

    from neurobrix import tables
    from neurobrix.plan import length_segments

    root = write_tables(tmp_path / "t")
    write_kernel(root, "linear", [({"M": [1, 1]}, CONFIGS["linear"][0][1]), ({"M": [2, 100]}, CONFIGS["linear"][1][1])])
    loaded = tables.load(root)
    index = loaded.index("interpreter", "linear")
    segments = length_segments(loaded, "interpreter", 1, 127)
    assert segments[0][0] == 1 and segments[-1][1] == 127
    for lo, hi in segments:
        ends = [index.lookup("fp32", (m, 8, 4)) for m in (lo, hi)]
        assert (ends[0] is None) == (ends[1] is None) and (ends[0] is None or ends[0].config == ends[1].config)


# --- run's options ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", [1.0, 1.2])
def test_a_repetition_penalty_given_on_the_command_line_wins_over_the_models(given):
    """--repetition-penalty overrides generation_config.json's (the README: "--repetition-penalty 1 turns it off"):
    the model's applies only where none was given (taking the model's whenever it had one ignored the user's)."""
    from neurobrix.run import model_sampling

    class ModelSays:
        repetition_penalty = 1.3
        generation_file = "generation_config.json"
        generation: dict = {}  # (the settings model_sampling reads renormalize_logits from for greedy runs)

        def unapplied_generation_settings(self):
            return []

        def sampling_settings(self):
            return []

    notes: list[str] = []
    assert model_sampling(Sampling(repetition_penalty=given), ModelSays(), notes.append).penalty == given
    assert notes == []
    assert model_sampling(Sampling(), ModelSays(), notes.append).penalty == 1.3 and len(notes) == 1


def test_the_default_new_tokens_under_a_sliding_window_fill_it_exactly():
    """With a sliding window W smaller than the context, a run may fill W + 1 tokens in all (the last new token is
    never fed): the default new tokens reaching past that are refused naming exactly the --max-tokens that
    ``generate_batch`` accepts, and one more it refuses (a span of W cut every such run one token short). (Before
    round 21 the default was cut there; transformers' generate runs on past the window, so it is refused now.)"""
    import dataclasses
    import re

    from test_runtime_planted import TINY

    from neurobrix.errors import UsageError
    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH
    from neurobrix.run import new_token_limit
    from neurobrix.warmup import scratch_weights

    class NoLimit:
        generation_file = "generation_config.json"

        def max_new_tokens(self, prompt_len):
            return None

    window, prompt = 12, [1, 2, 3]
    cfg = dataclasses.replace(TINY, sliding_window=window)
    with pytest.raises(UsageError, match="sliding attention window") as refused:
        new_token_limit(cfg, NoLimit(), len(prompt), None, lambda note: None)
    new = int(re.search(r"give --max-tokens (\d+) or fewer", str(refused.value)).group(1))
    assert new_token_limit(cfg, NoLimit(), len(prompt), new, lambda note: None) == new
    model = Transformer(cfg, scratch_weights(cfg, torch.float32, torch.device("cpu")), TORCH, batch=1, capacity=32)
    generate_batch(model, [prompt], new, Sampling(), set())
    with pytest.raises(UsageError, match="sliding attention window"):
        generate_batch(model, [prompt], new + 1, Sampling(), set())


def test_the_kv_cache_counted_is_the_one_the_model_builds():
    """The memory check's KV cache is the bytes of the caches the model allocates, every sequence of the batch
    included (a count without the batch admitted batches that did not fit)."""
    from test_runtime_planted import TINY

    from neurobrix import memory
    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH
    from neurobrix.warmup import scratch_weights

    model = Transformer(TINY, scratch_weights(TINY, torch.float32, torch.device("cpu")), TORCH, batch=3, capacity=8)
    built = sum(t.numel() * t.element_size() for t in [*model.cache.k, *model.cache.v])
    assert memory.kv_bytes(TINY, 4, 3, 8) == built


def test_zero_new_tokens_is_a_usage_error_before_anything_is_read(monkeypatch):
    """--max-tokens 0 is refused at once (a generation always makes its first token from the prefill, so 0 would
    silently make one), before the store is looked at."""
    from neurobrix import store
    from neurobrix.errors import UsageError
    from neurobrix.run import RunOptions, run

    monkeypatch.setattr(store, "resolve", lambda name: pytest.fail("the store was looked at"))
    with pytest.raises(UsageError, match="--max-tokens must be >= 1, got 0"):
        run(RunOptions(model="m", prompt="hi", max_tokens=0))


def test_run_hands_generate_the_models_token_masks(tmp_path, monkeypatch):
    """The token masks generation_config.json sets (here no_repeat_ngram_size and suppress_tokens, as transformers'
    GenerationConfig reads them) reach ``generate`` from `run` (a run handing it none generated text transformers'
    generate does not), and so does --repetition-penalty (the CLI dropped it). The generation is replaced: what is
    under test is what `run` passes."""
    import json

    from store_fixtures import make_checkpoint
    from test_loading_planted import _word_level_tokenizer

    from neurobrix import store
    from neurobrix.cli import main
    from neurobrix.generate import Stats

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "masked", use_transformers=False)
    _word_level_tokenizer(folder, clean_up=False)
    path = folder / "generation_config.json"
    generation = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**generation, "no_repeat_ngram_size": 2, "suppress_tokens": [4, 5]}))
    store.import_model(str(folder), progress=False)
    seen = {}

    def fake_generate(model, prompt, max_new_tokens, sampling, eos, on_token=None, use_graph=False, constraints=None):
        seen["constraints"], seen["penalty"] = constraints, sampling.penalty
        return [], Stats(len(prompt), 0, 0.0, 0.0)

    monkeypatch.setattr("neurobrix.run.load_model", lambda *args, **kwargs: None)
    monkeypatch.setattr("neurobrix.run.generate", fake_generate)
    assert (
        main(["run", "--model", "masked", "--prompt", "hello world", "--no-chat", "--repetition-penalty", "1.5"]) == 0
    )
    assert seen["penalty"] == 1.5
    theirs = transformers.GenerationConfig.from_pretrained(folder)
    got = seen["constraints"]
    assert got is not None and got.active
    assert (got.no_repeat_ngram_size, list(got.suppress_tokens)) == (
        theirs.no_repeat_ngram_size,
        theirs.suppress_tokens,
    )


def test_the_models_max_new_tokens_is_the_default_limit():
    """Without --max-tokens a run makes at most what generation_config.json's max_new_tokens says, as transformers'
    generate does (a limit that ignored the model's setting generated the default 256), with a note naming it."""
    from test_runtime_planted import TINY

    from neurobrix.run import DEFAULT_MAX_TOKENS, new_token_limit

    class Says7:
        def max_new_tokens(self, prompt_len):
            return 7, "generation_config.json's max_new_tokens is 7"

    notes: list[str] = []
    assert new_token_limit(TINY, Says7(), 3, None, notes.append) == 7 != DEFAULT_MAX_TOKENS
    assert notes and "max_new_tokens is 7" in notes[0]
    assert new_token_limit(TINY, Says7(), 3, 20, notes.append) == 20  # --max-tokens overrides it
