"""`neurobrix run`: resolve a stored model, preflight every kernel call, load, generate, report.

Order matters for the promises: the device and its class are settled, the class's settings are
checked to have been proven with this machine's torch and Triton (:mod:`neurobrix.stack`), and every
kernel call the generation will make is resolved to its certified setting, all *before* a single weight is
read. The text printed, streamed or not, is exactly transformers' decode of the generated ids.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .config import ModelConfig
from .dtypes import NAMES as DTYPES
from .dtypes import torch_dtype
from .errors import UsageError, counted, expect, expect_hooks
from .generate import Constraints, Sampling, Stats, decay_failure, generate
from .model import Transformer, UnreadableWeightsError, load_safetensors, weights_from_files
from .ops import BACKENDS, TORCH, Ops
from .plan import generation_calls, resolve
from .tables import load as load_tables
from .tokenizer import SAMPLING_FIELDS, Tokenizer, sampled_sequences

# transformers' generate where nothing sets a length: GenerationConfig's default max_length of 20, which its
# _prepare_generated_length reads as 20 new tokens after the prompt (cut at max_position_embeddings)
DEFAULT_MAX_TOKENS = 20


@dataclass(frozen=True)
class RunOptions:
    model: str
    prompt: str
    max_tokens: int | None = None  # None: the model's, else DEFAULT_MAX_TOKENS or what its context leaves (a notice)
    sampling: Sampling = Sampling()
    backend: str = "triton"
    dtype: str | None = None  # default: bf16 on a GPU, fp32 on the CPU
    chat: bool = True
    stream: bool = True
    system: str | None = None  # a system message before the prompt, through the chat template


def check_options(opts: RunOptions) -> None:
    """Refuse (UsageError naming the field) RunOptions of another type than the CLI gives them."""
    if not isinstance(opts, RunOptions):
        raise UsageError(f"run takes a neurobrix.run.RunOptions, got {type(opts).__name__}")
    for name in ("model", "prompt", "backend"):
        expect(f"RunOptions.{name}", getattr(opts, name), "a string")
    expect("RunOptions.dtype", opts.dtype, "a string", optional=True)
    expect("RunOptions.system", opts.system, "a string", optional=True)
    expect("RunOptions.max_tokens", opts.max_tokens, "an integer", optional=True)
    expect("RunOptions.chat", opts.chat, "true or false")
    expect("RunOptions.stream", opts.stream, "true or false")
    if not isinstance(opts.sampling, Sampling):
        raise UsageError(f"RunOptions.sampling must be a neurobrix.generate.Sampling, got {opts.sampling!r}")


def _device_and_class(backend: str) -> tuple[torch.device, str | None]:
    """(device, certified class id) for the triton backend; (device, None) for torch."""
    from .gpu import detect_class, interpreter_enabled

    if backend == "triton":
        gpu_class = detect_class()  # NoGPUError / UncertifiedGPUError, naming --backend torch
        return torch.device("cpu" if interpreter_enabled() else "cuda"), gpu_class.id
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu"), None


def _refuse_interpreter_bf16(class_id: str | None, dtype: str) -> None:
    """bf16 on the interpreter class cannot be certified, so no certify command could fix it: say so, and
    which dtypes the class does run. Refused whatever the class's tables hold: a bf16 entry there (a table certified
    by hand, or on the interpreter's broken bf16) ran the Triton interpreter's bf16, which computes on bit patterns."""
    if class_id != "interpreter" or dtype != "bf16":
        return
    loaded = load_tables()
    dtypes = sorted(
        {d for k in loaded.kernels(class_id) for e in loaded.index(class_id, k).entries for d in e.domain.dtypes}
        - {"bf16"}
    )
    raise UsageError(
        "--dtype bf16 cannot run on the interpreter class: the Triton interpreter computes bf16 wrongly (an "
        "upstream bug), so no bf16 setting can be certified on it. The interpreter class is certified for "
        f"{', '.join(dtypes) or 'no dtype yet'}: use {' or '.join(f'--dtype {d}' for d in dtypes) or 'a GPU'}; "
        "bf16 runs on a GPU whose class is certified for it"
    )


def settle_device(backend: str, dtype: str | None) -> tuple[torch.device, str | None, str]:
    """(device, certified class id or None, dtype) for a run, each refused with its reason: no usable
    device, an unknown backend or dtype, bf16 on the interpreter class."""
    device, class_id = _device_and_class(backend)
    dtype = dtype if dtype is not None else ("bf16" if device.type == "cuda" else "fp32")  # "" is no dtype
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    _refuse_interpreter_bf16(class_id, dtype)
    return device, class_id, dtype


def certified_ops(
    cfg: ModelConfig, class_id: str, dtype: str, batch: int, prompt_len: int, capacity: int, certify_hint: str = ""
) -> Ops:
    """The Triton ops for generating ``batch`` sequences of ``prompt_len`` tokens into caches of
    ``capacity``: every call of that generation resolved to its certified setting (MissingEntryError
    listing all that have none)."""
    calls = generation_calls(cfg, batch, prompt_len, capacity, dtype)
    return resolve(calls, load_tables(), class_id, certify_hint).ops()


def load_model(stored, backend: str, dtype: str | None, prompt_len: int, capacity: int, batch: int = 1) -> Transformer:
    """Settle the device and class, check the class's compiler stack and the memory the generation needs, resolve
    every kernel call of this generation to its certified setting (the plan), then load the weights."""
    from .stack import require_certified_stack
    from .store import StoredModel

    if not isinstance(stored, StoredModel):  # a name or None failed in an AttributeError
        raise UsageError(
            f"load_model takes a stored model (neurobrix.store.resolve(name)), got {type(stored).__name__}"
        )
    device, class_id, dtype = settle_device(backend, dtype)
    cfg = stored.config()
    if class_id is not None:
        require_certified_stack(class_id)  # settings proven with another torch/Triton are not run
    from .memory import require_fit_on

    # weights, KV cache and working memory against what the GPU has free, or on the CPU (the interpreter class, the
    # torch backend without a GPU) what the host and the process's cgroup leave: refused before a weight is read, and
    # before the preflight, whose shapes-only tensors of a cache past 2**63 bytes torch cannot even describe; a tied
    # config's weight files are named first (their headers, no tensor): a head of its own beside the embedding is kept
    # too (weight_bytes)
    names: set[str] = set()
    if cfg.tie_word_embeddings:
        try:
            load_safetensors([str(p) for p in stored.weight_files()], names, cfg)
        except UnreadableWeightsError as exc:
            from .store import damaged

            raise damaged(stored, [str(exc)]) from exc
    require_fit_on(device, cfg, torch_dtype(dtype).itemsize, batch, prompt_len, capacity, names=names)
    if class_id is not None:
        # the run's model and lengths, so that certify covers exactly this run; the interpreter class covers
        # every shape in one domain per kernel, and its certify takes no such choice
        hint = (
            ""
            if class_id == "interpreter"
            else (
                f" --config {stored.path / 'config.json'} --limit prefill_batch={batch}:{batch}"
                f" --limit decode_batch={batch}:{batch} --limit prompt={prompt_len}:{prompt_len}"
                f" --limit capacity={capacity}:{capacity} --limit cache_tokens={batch * capacity}"
            )
        )
        ops = certified_ops(cfg, class_id, dtype, batch, prompt_len, capacity, hint)
    else:
        ops = TORCH
    try:
        weights = weights_from_files(cfg, [str(p) for p in stored.weight_files()], torch_dtype(dtype), device)
    except UnreadableWeightsError as exc:  # bytes altered after the import checked them (same size)
        from .store import damaged

        raise damaged(stored, [str(exc)]) from exc
    stored.require_unchanged()  # every file read (config.json, the tokenizer's, the weights) as it was checked
    return Transformer(cfg, weights, ops, batch=batch, capacity=capacity)


def model_sampling(sampling: Sampling, tokenizer: Tokenizer, notice: Callable[[str], Any]) -> Sampling:
    """``sampling`` with the model's generation_config.json repetition penalty where the user gave none (as
    transformers' generate applies it, greedy decoding included); a note for it, and for each setting of that
    file which would change transformers' text and which NeuroBrix does not apply."""
    if sampling.repetition_penalty is None and tokenizer.repetition_penalty is not None:
        sampling = dataclasses.replace(sampling, repetition_penalty=tokenizer.repetition_penalty)
        if sampling.penalty != 1:
            notice(
                f"note: repetition penalty {sampling.penalty:g} from the model's {tokenizer.generation_file} "
                "(--repetition-penalty 1 turns it off)"
            )
    assisted = tokenizer.assisted() if sampling.temperature > 0 else []
    if assisted:
        raise UsageError(
            f"the model's {tokenizer.generation_file} sets {', '.join(assisted)}: transformers' generate then samples "
            "by assisted generation, whose draws differ from token-by-token sampling, which NeuroBrix does not run; "
            "decode greedily (--temperature 0: the same text as transformers') or remove the setting"
        )
    if sampling.temperature > 0:
        # sampling: the model's filters (top-k, top-p where the user gave none; min_p, typical_p...) as generate applies
        # them, top-k 50 where the model sets none (transformers' default)
        # (the run's own values replace the model's unread, as generate(top_k=...) replaces them before its warpers)
        given = [k for k in SAMPLING_FIELDS if getattr(sampling, k) is not None]
        taken = {k: v for k, v in tokenizer.sampling_limits(given).items() if getattr(sampling, k) is None}
        if taken:
            sampling = dataclasses.replace(sampling, **taken)
            default = "top_k" in taken and tokenizer.generation.get("top_k") is None
            shown = [k if v is True else f"{k} {v:g}" for k, v in taken.items() if not (k == "top_k" and default)]
            source = [f"{', '.join(shown)} from the model's {tokenizer.generation_file}"] if shown else []
            if default:
                source.insert(0, f"top_k {taken['top_k']} (transformers' default: the model sets none)")
            flags = [f"--{k.replace('_', '-')}" for k in ("top_k", "top_p") if k in taken]
            verb = "override them" if len(flags) > 1 else "overrides it"
            said = f" ({' and '.join(flags)} {verb})" if flags else ""
            notice(f"note: sampling with {', '.join(source)}{said}")
        sequences = sampled_sequences(tokenizer.generation)
        if sequences is None:
            raise UsageError(
                f"the model's {tokenizer.generation_file} sets num_return_sequences "
                f"{tokenizer.generation['num_return_sequences']!r}: transformers' sampling generate repeats the prompt "
                "that many times and fails on a count that is no whole number; remove the setting"
            )
        if sequences > 1:
            # generate draws every sequence's token in one multinomial call per step: the first sequence's draws are
            # those of that call, which the engine makes over as many copies of its probabilities
            sampling = dataclasses.replace(sampling, sequences=sequences)
            notice(
                f"note: the model's {tokenizer.generation_file} sets num_return_sequences {sequences}: transformers' "
                f"generate draws {sequences} sequences from the seed, each step's tokens in one draw; this run "
                "prints the first of them"
            )
    elif sampling.renormalize_logits is None and tokenizer.generation.get("renormalize_logits") is True:
        # transformers' greedy generate applies LogitNormalization too (after every processor): the argmax of the
        # log-softmax, token 0 where a score is +inf (an infinite sequence_bias, a decay past float32's range)
        sampling = dataclasses.replace(sampling, renormalize_logits=True)
    sampled = tokenizer.sampling_settings()
    if sampled and sampling.temperature == 0:  # transformers' plain generate() samples; run decodes greedily
        asked = tokenizer.generation.get("temperature")
        how = (
            f"--temperature {asked:g} samples as it asks"
            if isinstance(asked, (int, float)) and not isinstance(asked, bool) and 0 < asked < float("inf")
            else "--temperature T samples"
        )
        notice(
            f"note: the model's {tokenizer.generation_file} sets {', '.join(sampled)}: transformers' generate samples "
            f"by default; this run decodes greedily ({how})"
        )
    unapplied = tokenizer.unapplied_generation_settings()
    if sampling.sequences > 1:  # applied: the first sequence, drawn as generate draws it
        unapplied = [u for u in unapplied if not u.startswith("num_return_sequences=")]
    if unapplied:
        notice(
            f"note: the model's {tokenizer.generation_file} sets {', '.join(unapplied)}, which NeuroBrix does not "
            "apply: its text may differ from transformers'"
        )
    return sampling


def sequences_settled(
    tokenizer: Tokenizer,
    sequences: int,
    cfg: ModelConfig,
    eos: set[int],
    stops: bool,
    failing: int | None,
    constraints: Constraints,
) -> None:
    """Refuse (naming num_return_sequences) a sampled run of several sequences whose first one's text depends on
    where the others end, which the engine, generating the first alone, cannot tell: transformers' generate writes
    its pad id after a sequence that has ended while others run (its text then holds the pad where decode keeps it,
    and its model reads it, failing on an id past the embeddings); without an eos id it pads nothing, and a sequence
    that met a stop string goes on being drawn; and a processor failing at a length (the forced eos, the decay)
    fails the whole generate once any sequence gets there."""
    said = f"the model's {tokenizer.generation_file} sets num_return_sequences {sequences}: transformers' generate"
    hint = "NeuroBrix generates the first sequence alone; decode greedily (--temperature 0) or remove the setting"
    if failing is not None or constraints.forced_eos_fails:
        field = "exponential_decay_length_penalty" if failing is not None else "forced_eos_token_id"
        raise UsageError(
            f"{said} fails once any of its sequences reaches the token where the model's {field} cannot be "
            f"computed, whether the first has ended or not; {hint}"
        )
    criteria = tokenizer.generation.get("eos_token_id") is not None  # its EosTokenCriteria, which pads
    ends = stops or any(0 <= i < cfg.vocab_size for i in eos)
    if not criteria and stops:
        raise UsageError(
            f"{said} goes on drawing a sequence that has met a stop string while the others run (with no "
            f"eos_token_id it pads none), so that the first one's text depends on where the others end; {hint}"
        )
    if not criteria or not ends:
        return
    pad = tokenizer.pad_id if tokenizer.pad_id is not None else tokenizer.first_eos(cfg.eos_token_ids)
    if pad is None or not 0 <= pad < cfg.vocab_size:
        raise UsageError(
            f"{said} writes pad id {pad} after a sequence that ends while others run, and its model fails on that "
            f"id, past its {cfg.vocab_size} embeddings (config.json's vocab_size); {hint}"
        )
    if not tokenizer.drops(pad):
        raise UsageError(
            f"{said} writes pad id {pad} after a sequence that ends while others run, which its decode prints (the "
            f"tokenizer keeps that token), so that the first one's text depends on where the others end; {hint}"
        )


def new_token_limit(
    cfg: ModelConfig, tokenizer: Tokenizer, prompt_len: int, asked: int | None, notice: Callable[[str], Any]
) -> int:
    """The most new tokens a run generates: ``asked`` (--max-tokens), else generation_config.json's max_new_tokens,
    or its max_length less the prompt, as transformers' generate takes them, else DEFAULT_MAX_TOKENS (transformers'
    20 new tokens), with a note. The default reaching past what the model's context leaves after the prompt is cut to
    that, with a note, as generate cuts it at max_position_embeddings; asked for, or set by the model (transformers'
    generate would run on past the context), it is refused. A model with a sliding attention window (which the engine
    does not apply) keeps the whole generation within it, so that every query sees all positions, as transformers'
    model does there; a count reaching past the window, where transformers' generate runs on, is refused. A prompt
    that leaves no room for one new token is refused as such, before any count is read or noted."""
    span, what = cfg.max_positions, f"the model's context of {counted(cfg.max_positions, 'token')}"
    window = cfg.sliding_window
    window_bound = window is not None and window + 1 < span
    if window_bound:  # the last new token is never fed: W + 1 tokens in all
        span = window + 1
        what = (
            f"the model's sliding attention window of {counted(window, 'token')} (config.json's sliding_window: "
            "NeuroBrix attends over whole sequences, so a generation stays within it)"
        )
    if prompt_len >= span:  # no room for one new token whatever --max-tokens says: no note of a count to make
        raise UsageError(
            f"the prompt ({counted(prompt_len, 'token')}) plus one new token exceeds {what}; shorten the prompt to "
            f"at most {counted(span - 1, 'token')}"
        )
    max_tokens = asked
    if max_tokens is None:
        from_model = tokenizer.max_new_tokens(prompt_len)
        if from_model is not None:
            max_tokens, source = from_model
        else:
            max_tokens = DEFAULT_MAX_TOKENS
            source = (
                f"transformers' generate makes {DEFAULT_MAX_TOKENS} new tokens where the model's "
                f"{tokenizer.generation_file} sets no max_new_tokens or max_length"
            )
        # transformers' generate cuts its own default at the model's context, and runs on past a window (or past the
        # context, a count the model sets): a cut there is other text
        if 1 <= span - prompt_len < max_tokens and (from_model is not None or window_bound):
            whose = "the model's " if from_model is not None else ""
            raise UsageError(
                f"{whose}{source}, which reaches past {what} after the {prompt_len}-token prompt (where "
                f"transformers' generate runs on); give --max-tokens {span - prompt_len} or fewer"
            )
        if 1 <= span - prompt_len < max_tokens:
            max_tokens = span - prompt_len
            notice(
                f"note: generating at most {counted(max_tokens, 'token')}: {what} leaves that many after the "
                f"{prompt_len}-token prompt ({source}, up to the context)"
            )
        else:
            notice(f"note: generating at most {counted(max_tokens, 'token')}: {source} (--max-tokens overrides it)")
    if prompt_len + max(max_tokens, 1) > span:
        said = f"--max-tokens {max_tokens}" if asked is not None else "one new token"
        raise UsageError(
            f"the prompt ({counted(prompt_len, 'token')}) plus {said} exceeds {what}; shorten the prompt or lower "
            f"--max-tokens to at most {span - prompt_len}"
        )
    return max_tokens


def run(
    opts: RunOptions, write: Callable[[str], Any] | None = None, notice: Callable[[str], Any] | None = None
) -> Stats:
    """Generate for ``opts``: the text goes to ``write`` (as it comes, unless ``opts.stream`` is off), notes
    for the user to ``notice`` (default: stderr). Returns the statistics."""
    from . import store

    expect_hooks("run", write=write, notice=notice)
    write = write if write is not None else sys.stdout.write
    notice = notice if notice is not None else (lambda message: print(message, file=sys.stderr))
    check_options(opts)
    opts.sampling.validate()
    if opts.max_tokens is not None and opts.max_tokens < 1:
        raise UsageError(f"--max-tokens must be >= 1, got {opts.max_tokens}")
    # what the user named comes first, the machine after: the folders the variables name, the model in the store (not
    # stored, not imported, damaged), the prompt against its tokenizer, then the device, backend and dtype; a device
    # refused before any note about the run (a model not stored on a CPU was "no GPU found", and after
    # TRITON_INTERPRET=1 not stored)
    if opts.backend == "triton":  # the tables (the folder NEUROBRIX_TABLES names, or the installed package's), as the
        load_tables()  # store's home is: damaged or edited tables are refused (exit 3) before the model is looked for
    stored = store.resolve(opts.model)
    cfg = stored.config()
    # a sampled run is transformers' generate(do_sample=True, top_k=..., top_p=...), the run's own --top-k / --top-p
    # replacing the model's before generate reads them; such a generate never compares top_k or penalty_alpha to
    # choose contrastive search, so neither is checked as the files load then. A greedy run reads no --top-k and is
    # held to the file as it is, generate(do_sample=False) comparing both (a sampling file: round 35's note)
    sampled = opts.sampling
    given = {k: getattr(sampled, k) for k in SAMPLING_FIELDS if getattr(sampled, k) is not None}
    tokenizer = stored.tokenizer({**given, "do_sample": True} if sampled.temperature > 0 else None)
    if opts.system is not None and not (opts.chat and tokenizer.has_chat_template()):
        # a system message exists only in a chat; transformers' apply_chat_template refuses a model without a template
        raise UsageError(
            "--system is a system message, which only the model's chat template can place; "
            + ("drop --no-chat" if not opts.chat else "this model has no chat template (leave --system out)")
        )
    prompt = tokenizer.encode_prompt(opts.prompt, chat=opts.chat, system=opts.system)
    # text the vocabulary encodes to no tokens (spaces under WordPiece, "🙂" under some byte-less vocabularies) is
    # refused as an empty prompt is, but named as what it is
    no_tokens = f"the prompt's {len(opts.prompt)} characters encode to no tokens of this model's vocabulary"
    if not prompt:  # (text that encodes to nothing is named as such unless a chat template rendered it)
        templated = opts.chat and tokenizer.chat_template is not None
        what = no_tokens if opts.prompt and not templated else "the prompt is empty after tokenization"
        hint = (  # --no-chat changes nothing for a model without a chat template
            "give some text, or drop --no-chat (or give it, where the model's chat template renders no text)"
            if tokenizer.chat_template is not None
            else "give some text"
        )
        raise UsageError(f"{what} (transformers' generate fails on no ids); {hint}")
    if not (opts.chat and tokenizer.chat_template is not None) and not tokenizer.encode_text(opts.prompt):
        raise UsageError(
            f"{no_tokens if opts.prompt else 'the prompt is empty'}: without a chat template the model would run on "
            "its start token alone; give some text with --prompt or --prompt-file"
        )
    # what the model's files and the count ask of the run, all named, before the machine (walk-through round 44: without
    # a GPU, a count past the context, or an end-of-text id that is no id, was "no GPU found"); the notes they make
    # wait for their place after the device's own
    eos = tokenizer.eos_ids(cfg.eos_token_ids)  # refused before any note about the run
    held: list[str] = []
    sampling = model_sampling(opts.sampling, tokenizer, held.append)
    # the model's token masks (no_repeat_ngram_size, suppress_tokens...), applied as transformers' generate applies them
    masks = tokenizer.constraints(cfg.vocab_size, len(prompt))
    # the model's stop_strings, which transformers' generate stops at when handed the tokenizer (the string kept)
    stops = tokenizer.stop_strings()
    max_tokens = new_token_limit(cfg, tokenizer, len(prompt), opts.max_tokens, held.append)
    settle_device(opts.backend, opts.dtype)  # the machine: a device, backend or dtype refused before any note
    if opts.sampling.temperature == 0:  # a sampling option without a temperature changes nothing: say so
        given = opts.sampling.top_k, opts.sampling.top_p, opts.sampling.seed
        unused = [flag for flag, value in zip(("--top-k", "--top-p", "--seed"), given) if value is not None]
        if unused:
            notice(
                f"note: {', '.join(unused)} only {'apply' if len(unused) > 1 else 'applies'} when sampling "
                "(--temperature above 0); greedy decoding is used"
            )
    if opts.chat and tokenizer.chat_template is None:  # transformers' apply_chat_template would refuse: say so
        named = ", ".join(sorted(tokenizer.chat_templates))
        what = f"model's chat templates ({named}) include no default one" if named else "model has no chat template"
        notice(f"note: this {what}; the prompt is used as is (as with --no-chat)")
    pad = tokenizer.pad_id
    if pad is not None and pad not in eos and pad in prompt:
        # transformers' generate given no attention_mask infers one that masks the pad id out of the prompt (unless it
        # is an eos id); its pipeline and generate(**tokenizer(prompt)) hand it the tokenizer's, which masks nothing
        notice(
            f"note: the prompt holds the model's pad_token_id {pad} ({tokenizer.generation_file}): this run attends to "
            "it, as transformers' generate does when handed the tokenizer's attention_mask (its pipeline does); "
            "generate called without one masks it out, which gives other text"
        )
    for line in held:  # the model's sampling settings', then the count's
        notice(line)
    if opts.max_tokens is None and not tokenizer.whole_max_length():
        # a model's own limit of 12.5 tokens: transformers' forced eos waits for a length of max_length - 1, never met
        masks.pop("forced_eos_token_id", None)
        masks.pop("forced_eos_fails", None)
    constraints = Constraints(**masks)
    stream_text = opts.stream
    failing = decay_failure(constraints, len(prompt), max_tokens, sorted(eos), cfg.vocab_size)
    if sampling.sequences > 1:
        sequences_settled(tokenizer, sampling.sequences, cfg, eos, stops is not None, failing, constraints)
    if failing is not None and stream_text:
        # transformers' generate fails at that token unless an eos id ends the text first, and then prints nothing:
        # the text is written once the run has ended without reaching it (the run is refused there otherwise)
        stream_text = False
        notice(
            f"note: the model's exponential_decay_length_penalty cannot be computed from new token {failing} on "
            "(transformers' generate fails there); the text is printed once the run ends before it"
        )
    if constraints.forced_eos_fails and stream_text:
        # transformers' processor fails at the last new token the length allows, unless the text ends before
        stream_text = False
        notice(
            f"note: the model's forced_eos_token_id cannot be forced at new token {max_tokens}, the last "
            "(transformers' generate fails there); the text is printed once the run ends before it"
        )
    if stream_text and tokenizer.stream_held is not None:
        notice(f"note: {tokenizer.stream_held}; the text is printed once the run ends")
    capacity = len(prompt) + max_tokens
    loading = time.perf_counter()  # lean: user statistics (the run's own line, never used to pick settings)
    model = load_model(stored, opts.backend, opts.dtype, prompt_len=len(prompt), capacity=capacity)
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()  # the weights' copies have landed: loading ends here, not in the prefill
    loaded = time.perf_counter()  # lean: user statistics

    stream = tokenizer.stream()  # what it writes, joined, is the decode of every new token

    def on_token(token: int) -> None:
        text = stream.push(token)
        if text:
            write(text)
            sys.stdout.flush()

    out, stats = generate(
        model,
        prompt,
        max_tokens,
        sampling,
        eos,
        on_token if stream_text else None,
        use_graph=True,
        constraints=constraints,
        **({"stop": stops} if stops is not None else {}),
    )
    write(stream.finish() if stream_text else tokenizer.decode(out))
    write("\n")
    return dataclasses.replace(stats, load_s=loaded - loading)
