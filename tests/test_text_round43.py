"""The forty-third round of text parity: the "Left open" items of text rounds 1-42 re-tested on main, and a
differential fuzz of `neurobrix run`'s printed text against transformers 5.25's greedy ``generate`` (handed the
tokenizer's attention mask) and ``decode(skip_special_tokens=True)`` with those items drawn together.

Drawn (outside the repository, logs under /tmp/text43/; docs/text-rounds.md has the counts): tiny random Llama,
Mistral and Qwen2 checkpoints (round 39's weights and builder, three shapes, logits spread 2 to 8) over the
sentencepiece, metaspace, byte-level and WordPiece fixture tokenizers (and Qwen2's rebuild of each), prompts of one
to thirteen pieces among special tokens' text ("<s>", "</s>", "<unk>", "<|eot_id|>", "[SEP]"...), emoji, CJK, "ẞ",
"𝔘", tabs, newlines, "\\r\\n" and runs of spaces; one in eight a prompt of 1,200 to 5,000 tokens (most in two prefill
passes at the shipped chunk of 2,048, the remainder first); tokenizer_config.json's clean_up_tokenization_spaces,
spaces_between_special_tokens, add_bos_token and add_eos_token drawn; generation_config.json's pad_token_id one of the
prompt's ids in three cases of ten, its eos the tokenizer's in three of ten; 2 to 23 new tokens; PyTorch's kernels
(fp32) and, for short cases, the Triton interpreter; each run streamed and not.

Found: no difference in the printed text. The open items that change it are the engine's documented choices, or
reach no `run`: a pad id in the prompt is attended, as transformers' generate does when handed the tokenizer's mask
(with a note; called without one, transformers masks it and printed other text in 76 of the 80 drawn cases that held
one); padded batches are `generate_batch`'s (a library call; `run` takes one prompt); a prompt encoding to the start
token alone and a count reaching past the context stay refused. The item the brief named first, a pad_token_id
written as a list (planted round 44's survivor t02, ``pad_id`` taking a list's first id), reaches no text:
transformers 5.25 fails on a list in either file before it generates (GenerationConfig.validate compares it with 0;
config.json's strict validation types it an int), and `run` refuses both at load, so the note that reads ``pad_id``
never sees one: t02 is an equivalent mutant.

Pinned: those refusals (transformers shown to fail on each), and the drawn cases that reach furthest, each compared
with transformers here, streamed and not: special tokens' text across the prompt with byte-fallback runs in the
output under each tokenizer kind and Qwen2's rebuild, the clean-up applied (WordPiece) and asked for where ignored
(BPE), a special token made between others (sequence_bias), an eos id reached inside a run of byte tokens, a pad id in
the prompt (noted, attended), a 2,700-token prompt in two prefill passes, one case on the Triton interpreter. The
fixture tokenizers retrain to other vocabularies from run to run, so a case meeting a near tie takes the next seed
(round 39's rule; a fixed seed failed one run in three). The tests fail with each of these plants (docs/text-rounds.md
lists them). Eight more drawn cases on the interpreter with prompts of 2,404 to 3,689 tokens (two prefill passes,
2 to 6 new tokens) printed transformers' text; at about a minute a run they stay out of this file. Left open: as
above."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its weights and checkpoint builder)

SMALL = {"hidden_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}
DEEP = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1}
NEVER = 99999  # an eos id no token has


def checkpoint(
    folder: Path,
    kind: str,
    family: str,
    shape: dict[str, Any],
    *,
    seed: int,
    spread: float = 4.0,
    tokenizer_config: dict[str, Any] | None = None,
    generation: dict[str, Any] | None = None,
) -> None:
    """A tiny random ``family`` checkpoint over the fixture tokenizer ``kind`` (round 39's builder), its
    tokenizer_config.json updated by ``tokenizer_config`` (None removes a key) and generation_config.json
    ``generation`` (default: an eos id no token has)."""
    r39.build(folder, family, shape, {}, 8, seed=seed, tokenizer=kind, spread=spread)
    data = json.loads((folder / "tokenizer_config.json").read_text())
    data.update(tokenizer_config or {})
    (folder / "tokenizer_config.json").write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    (folder / "generation_config.json").write_text(json.dumps(generation or {"eos_token_id": NEVER}))


def theirs(folder: Path, prompt: str, new: int) -> tuple[list[int], str] | None:
    """transformers' greedy generate in float32, handed the tokenizer's attention mask, and the text of the new ids
    as ``decode(skip_special_tokens=True)`` gives it; None at a near tie (round 39's margin), where either id may be
    picked."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).float().eval()
    inputs = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(
            **inputs, do_sample=False, max_new_tokens=new, output_scores=True, return_dict_in_generate=True
        )
    for scores in out.scores:
        top = torch.topk(scores[0].double(), 2).values
        if float(top[0] - top[1]) <= r39.MARGIN * max(1.0, abs(float(top[0]))):
            return None
    got = out.sequences[0, inputs["input_ids"].shape[1] :].tolist()
    return got, tok.decode(got, skip_special_tokens=True)


def ours(folder: Path, prompt: str, new: int, *, stream: bool, backend: str = "torch") -> tuple[list[int], str, list]:
    """`neurobrix import`, then `run --no-chat --max-tokens NEW` (streamed or not): the new ids, the printed text
    and the notes. A refusal fails the test with its one line."""
    from neurobrix import run, store

    home = folder.parent / "home"
    saved = {name: os.environ.get(name) for name in ("NEUROBRIX_HOME", "NEUROBRIX_TABLES")}
    os.environ["NEUROBRIX_HOME"] = str(home)
    os.environ.pop("NEUROBRIX_TABLES", None)  # the shipped tables
    seen: dict[str, list[int]] = {}
    text: list[str] = []
    notes: list[str] = []
    real = run.generate

    def generate(*args, **kwargs):
        seen["ids"], stats = real(*args, **kwargs)
        return seen["ids"], stats

    run.generate = generate
    try:
        shutil.rmtree(home / "models" / folder.name, ignore_errors=True)
        store.import_model(str(folder), progress=False)
        options = run.RunOptions(
            model=folder.name, prompt=prompt, max_tokens=new, backend=backend, chat=False, stream=stream
        )
        run.run(options, write=text.append, notice=notes.append)
    finally:
        run.generate = real
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return seen["ids"], "".join(text).removesuffix("\n"), notes


def refusal(folder: Path, prompt: str, new: int) -> str:
    """The one line with which `run` refuses the folder (the test fails where it prints text)."""
    from neurobrix.errors import UsageError

    try:
        got = ours(folder, prompt, new, stream=False)
    except UsageError as refused:
        message = str(refused)
        assert message and "\n" not in message, message
        return message
    raise AssertionError(f"run printed text where transformers fails: {got[1]!r}")


# --- a pad_token_id written as a list: transformers fails before it generates, `run` refuses ---------------------

LISTS = {"one id": lambda ids: [ids[3]], "two ids of the prompt": lambda ids: [ids[3], ids[5]], "none": lambda _: [7]}


@pytest.mark.parametrize("where", ["generation_config.json", "config.json"])
@pytest.mark.parametrize("name", LISTS)
def test_a_list_pad_token_id_is_refused_as_transformers_fails(tmp_path, where, name):
    """transformers 5.25's GenerationConfig.validate compares pad_token_id with 0 (a list raises TypeError in
    from_pretrained), and its strict PreTrainedConfig types config.json's an int: neither generates, masked or not.
    `run` refuses both in one line naming the field, so no run reaches the note about a pad id in the prompt with a
    list (planted round 44's t02 is equivalent)."""
    folder = tmp_path / "m"
    checkpoint(folder, "bytelevel", "llama", SMALL, seed=5)
    prompt = "the model runs fast never guess a setting"
    ids = transformers.AutoTokenizer.from_pretrained(folder)(prompt)["input_ids"]
    pad = LISTS[name](ids)
    if where == "config.json":
        (folder / "generation_config.json").unlink()
        data = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**data, "pad_token_id": pad, "eos_token_id": NEVER}))
    else:
        (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": NEVER, "pad_token_id": pad}))
    with pytest.raises(Exception, match="pad_token_id|not supported between"):
        transformers.AutoModelForCausalLM.from_pretrained(folder)
    assert "pad_token_id" in refusal(folder, prompt, 4)


# --- the drawn cases that reach furthest ----------------------------------------------------------------------------

# name: tokenizer kind, family, shape, seed, spread, tokenizer_config.json changes, generation_config.json, prompt, new
CASES: dict[str, tuple] = {
    "special tokens' text across a sentencepiece prompt, byte runs out, clean-up asked for (BPE: ignored)": (
        "sentencepiece",
        "mistral",
        SMALL,
        11,
        4.0,
        {"clean_up_tokenization_spaces": True},
        None,
        "x<unk>ẞ  runs 🙂<unk> model café <unk> runs<s>",
        12,
    ),
    "Qwen2's rebuild of a sentencepiece vocabulary (byte tokens printed as their names), start and end text": (
        "sentencepiece",
        "qwen2",
        SMALL,
        12,
        8.0,
        {"clean_up_tokenization_spaces": True},
        None,
        "\n\n? 🙂\n\n?<|start_header_id|>\n\n café <s>the,\n\n\n",
        11,
    ),
    "metaspace, the prompt all special tokens' text, a two-layer GQA model": (
        "metaspace",
        "llama",
        DEEP,
        13,
        4.0,
        {"clean_up_tokenization_spaces": True},
        None,
        " hello<unk></s> model<|begin_of_text|><s>\n\n hello",
        14,
    ),
    "byte-level, a pad id of the prompt (noted, attended as with the tokenizer's mask)": (
        "bytelevel",
        "llama",
        SMALL,
        14,
        2.0,
        {},
        {"eos_token_id": NEVER, "pad_token_id": "<the prompt's 3rd id>"},
        "</s>  hello\t 中文 naïve<|eot_id|> it's",
        10,
    ),
    "WordPiece with its clean-up applied, [SEP] and [UNK] text in the prompt": (
        "wordpiece",
        "llama",
        SMALL,
        17,
        4.0,
        {"clean_up_tokenization_spaces": True},
        None,
        "don't [SEP] it's , the model [UNK] . hello world ! we're",
        14,
    ),
    "special tokens in the output (sequence_bias raising </s>, which no eos id names), metaspace, streamed around": (
        "metaspace",
        "mistral",
        SMALL,
        18,
        4.0,
        {"spaces_between_special_tokens": False},
        {"eos_token_id": NEVER, "sequence_bias": [[["<the id of </s>>"], 5.0]]},
        " it's</s>  fast model 🙂\n\n fast",
        16,
    ),
}


SEEDS = 6  # the fixture tokenizers are trained anew each time (their vocabulary can differ): a near tie takes the next


def _resolved(value: Any, prompt_ids: list[int], tok: Any) -> Any:
    if value == "<the prompt's 3rd id>":
        return prompt_ids[2]
    if value == "<the id of </s>>":
        return tok.convert_tokens_to_ids("</s>")
    if isinstance(value, list):
        return [_resolved(v, prompt_ids, tok) for v in value]
    return value


def settled(
    tmp_path: Path, case: tuple, *, new: int | None = None, check=None
) -> tuple[Path, str, int, tuple[list[int], str]]:
    """The drawn ``case`` (a CASES entry) built at its seed, or at the next where transformers' run meets a near tie
    (or ``check``, given its ids and the tokenizer, says they reach nothing): (folder, prompt, new tokens,
    transformers' ids and text)."""
    kind, family, shape, seed, spread, tokenizer_config, generation, prompt, case_new = case
    new = case_new if new is None else new
    folder = tmp_path / "m"
    for at in range(seed, seed + SEEDS):
        shutil.rmtree(folder, ignore_errors=True)
        checkpoint(folder, kind, family, shape, seed=at, spread=spread, tokenizer_config=tokenizer_config)
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        if generation is not None:
            ids = tok(prompt)["input_ids"]
            written = {key: _resolved(value, ids, tok) for key, value in generation.items()}
            (folder / "generation_config.json").write_text(json.dumps(written))
        want = theirs(folder, prompt, new)
        if want is not None and (check is None or check(want[0], tok)):
            return folder, prompt, new, want
    raise AssertionError(f"{prompt[:40]!r}: a near tie (or nothing reached) at each of {SEEDS} seeds")


@pytest.mark.parametrize("name", CASES)
def test_drawn_cases_print_transformers_text(tmp_path, name):
    special = "sequence_bias" in (CASES[name][6] or {})

    def reaches(ids: list[int], tok: Any) -> bool:  # the special token made between others
        return not special or tok.convert_tokens_to_ids("</s>") in ids[1:-1]

    folder, prompt, new, want = settled(tmp_path, CASES[name], check=reaches)
    pad = json.loads((folder / "generation_config.json").read_text()).get("pad_token_id")
    for stream in (False, True):
        ids, text, notes = ours(folder, prompt, new, stream=stream)
        assert (ids, text) == want, (stream, notes)
        assert any("pad_token_id" in note for note in notes) == (pad is not None)


def test_an_eos_id_inside_a_run_of_byte_tokens_ends_the_text_there(tmp_path):
    """The model's own greedy ids first (no eos), then generation_config.json's eos set to a byte-fallback token it
    makes after another byte token: the text ends there as transformers' does (the eos id dropped, the byte run
    before it decoded whole), streamed and not."""

    def byte_after_byte(ids: list[int], tok: Any) -> bool:
        spelt = tok.convert_ids_to_tokens(ids)
        return any(
            spelt[i].startswith("<0x") and spelt[i - 1].startswith("<0x") and ids[i] not in ids[:i]
            for i in range(2, len(ids))
        )

    name = "special tokens' text across a sentencepiece prompt, byte runs out, clean-up asked for (BPE: ignored)"
    folder, prompt, new, (free, _) = settled(tmp_path, CASES[name], check=byte_after_byte)
    spelt = transformers.AutoTokenizer.from_pretrained(folder).convert_ids_to_tokens(free)
    at = next(
        i
        for i in range(2, len(free))
        if spelt[i].startswith("<0x") and spelt[i - 1].startswith("<0x") and free[i] not in free[:i]
    )
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [NEVER, free[at]]}))
    want = theirs(folder, prompt, new)
    assert want is not None and want[0] == free[: at + 1]
    for stream in (False, True):
        assert ours(folder, prompt, new, stream=stream)[:2] == want


CHUNKED = "the model runs fast never guess a setting café".split()


def test_a_prompt_in_two_prefill_passes_at_the_shipped_chunk(tmp_path):
    """A 2,700-token prompt: the run prefills its remainder first, then 2,048 tokens over the cache (the shipped
    chunk), where transformers runs one forward; the text is the same."""
    from neurobrix.model import chunk_length, prefill_chunks

    prompt = " ".join(CHUNKED[(i * 7) % len(CHUNKED)] for i in range(1500)) + " <s> 🙂 don't</s> the model"
    case = ("metaspace", "mistral", {**SMALL, "max_position_embeddings": 4096}, 16, 4.0, {}, None, prompt, 12)
    folder, prompt, new, want = settled(tmp_path, case)
    ids = transformers.AutoTokenizer.from_pretrained(folder)(prompt)["input_ids"]
    assert len(prefill_chunks(len(ids), chunk_length(1))) == 2, len(ids)
    for stream in (False, True):
        assert ours(folder, prompt, new, stream=stream)[:2] == want


def test_the_interpreter_prints_the_same_text(tmp_path):
    """One drawn case on the Triton interpreter's kernels (fp32), streamed."""
    name = "metaspace, the prompt all special tokens' text, a two-layer GQA model"
    folder, prompt, new, want = settled(tmp_path, CASES[name], new=6)
    assert ours(folder, prompt, new, stream=True, backend="triton")[:2] == want
