"""Generation: prefill, then one token at a time (replayed as a CUDA graph on a GPU), and sampling.

Small functions in the order they run: ``sample`` picks the next token from logits; ``prefill``
feeds the prompts (on CUDA a one-pass prompt is replayed from a graph captured at its length, see
``PrefillGraphs``); ``Decoder`` owns the decode step (captured once, replayed per token on CUDA);
``generate`` runs the loop, streams text through a callback and returns the statistics line's numbers.
``neurobrix warmup`` drives ``prefill`` and ``Decoder`` too, so that it launches every kernel exactly as
a run does.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from .errors import UsageError, expect, float_sized
from .model import Transformer
from .ops.pick import pick_rows as greedy_pick  # PyTorch's pick (sampling at temperature 0, penalized scores)
from .plan import require_current
from .sampling import Sampling

T = TypeVar("T")


class SamplingError(UsageError):
    """A step's token probabilities are not a distribution (inf or NaN): the sampling settings overflow the logits."""


@dataclass(frozen=True)
class Constraints:
    """The model's generation settings that transformers' generate applies as logits processors masking tokens
    (after the repetition penalty, before sampling's temperature, top-k and top-p), each as its processor computes
    it: no_repeat_ngram_size, encoder_no_repeat_ngram_size (a decoder-only model's encoder input is its prompt: no
    n-gram of the prompt is completed again), bad_words_ids (a single eos id among them is dropped; -inf added to
    the scores, as transformers adds it), min_length and
    min_new_tokens (the eos ids masked while the sequence, or its new part, is shorter; nothing without eos ids; the
    settings' min_length is not passed on where they set min_new_tokens, as transformers' generate replaces it
    then: ``Tokenizer.constraints``), forced_eos_token_id
    (only its ids left at the last token the generation's length allows), forced_bos_token_id (only it left after a
    one-token prompt), suppress_tokens, begin_suppress_tokens (at the first new token, the second after a forced
    start), in transformers' order (the forced tokens before the suppressions); remove_invalid_values (after the
    forced tokens: NaN scores made 0 and infinite ones the largest float32s, so a masked eos id the decay below raises
    is finite); exponential_decay_length_penalty (after those: from ``start`` new tokens on, each eos id's score
    raised by its magnitude times ``factor`` to the power of the new tokens past ``start``, less 1); and, before
    the repetition penalty (``Processors.before_penalty``), sequence_bias (each token's bias added, a token ending a
    longer sequence only where the sequence so far ends with the rest of it), then encoder_repetition_penalty, the
    prompt's tokens' scores raised."""

    no_repeat_ngram_size: int = 0
    encoder_no_repeat_ngram_size: int = 0
    bad_words_ids: tuple[tuple[int, ...], ...] = ()
    min_length: int = 0
    min_new_tokens: int = 0
    forced_eos_token_id: tuple[int, ...] = ()
    # forced_eos_token_id that transformers' processor builds but fails on as it forces (ids past the vocabulary, a
    # boolean mask): what fails, refused (UsageError) at that step only, the last the length allows
    forced_eos_fails: str = ""
    forced_bos_token_id: int | None = None
    encoder_repetition_penalty: float = 1.0
    suppress_tokens: tuple[int, ...] = ()
    begin_suppress_tokens: tuple[int, ...] = ()
    sequence_bias: tuple[tuple[tuple[int, ...], float], ...] = ()  # (token ids, bias) pairs
    exponential_decay_length_penalty: tuple[int | float, int | float] | None = None  # (start, factor)
    remove_invalid_values: bool = False

    def validate(self, vocab: int) -> None:
        """Refuse (UsageError naming the field) values the processors cannot apply, before the model runs: a program
        building Constraints itself handed a string count or an id past the vocabulary to code that failed on it after
        the prefill (TypeError, IndexError, ZeroDivisionError). ``Tokenizer.constraints`` builds them valid: counts
        >= 0, ids within the vocabulary (those transformers ignores already dropped), numbers finite."""

        def refuse(name: str, what: str) -> UsageError:
            return UsageError(f"Constraints.{name} must be {what}, got {getattr(self, name)!r}")

        def is_ids(value: Any, least: int = 0) -> bool:
            return (
                isinstance(value, tuple)
                and len(value) >= least
                and all(type(i) is int and 0 <= i < vocab for i in value)
            )

        def is_number(value: Any) -> bool:
            return float_sized(value) and math.isfinite(value)

        for name in ("no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "min_length", "min_new_tokens"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise refuse(name, "an integer >= 0")
        ids = f"a tuple of token ids (integers in [0, {vocab}))"
        for name in ("forced_eos_token_id", "suppress_tokens", "begin_suppress_tokens"):
            if not is_ids(getattr(self, name)):
                raise refuse(name, ids)
        if not isinstance(self.bad_words_ids, tuple) or not all(is_ids(w, 1) for w in self.bad_words_ids):
            raise refuse("bad_words_ids", "a tuple of non-empty tuples of token ids " + ids.split(" ", 5)[-1])
        bos = self.forced_bos_token_id
        if bos is not None and not (type(bos) is int and 0 <= bos < vocab):
            raise refuse("forced_bos_token_id", f"None or a token id in [0, {vocab})")
        penalty = self.encoder_repetition_penalty
        if not (float_sized(penalty) and penalty > 0):  # infinity too, as transformers' processor takes it
            raise refuse("encoder_repetition_penalty", "a number > 0")
        bias = self.sequence_bias
        if not isinstance(bias, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and is_ids(p[0], 1) and float_sized(p[1]) and p[1] == p[1]
            for p in bias
        ):
            raise refuse("sequence_bias", f"a tuple of (token ids, bias) pairs, ids in [0, {vocab}), a bias not NaN")
        if type(self.forced_eos_fails) is not str:
            raise refuse("forced_eos_fails", "text")
        if type(self.remove_invalid_values) is not bool:
            raise refuse("remove_invalid_values", "true or false")
        decay = self.exponential_decay_length_penalty
        if decay is not None and not (
            isinstance(decay, tuple) and len(decay) == 2 and is_number(decay[0]) and is_number(decay[1])
        ):
            raise refuse("exponential_decay_length_penalty", "None or a (start, factor) pair of numbers")

    @property
    def active(self) -> bool:
        return (
            self.forced_bos_token_id is not None
            or self.encoder_repetition_penalty != 1
            or self.exponential_decay_length_penalty is not None
            or any(
                v
                for k, v in dataclasses.asdict(self).items()
                if k not in ("forced_bos_token_id", "encoder_repetition_penalty", "exponential_decay_length_penalty")
            )
        )


class Processors:
    """``Constraints`` applied to each step's scores over the tokens each sequence holds so far (its prompt, then
    each token picked, added by ``push``)."""

    def __init__(self, constraints: Constraints, prompts: list[list[int]], max_new_tokens: int, eos: set[int]) -> None:
        self.c = constraints
        self.history = [list(p) for p in prompts]
        self.prompt_len = len(prompts[0])
        self.max_length = self.prompt_len + max_new_tokens
        bad = [w for w in constraints.bad_words_ids if not (len(w) == 1 and w[0] in eos)]
        self.bad_words = bad
        self.eos = sorted(eos)
        # encoder_no_repeat_ngram_size: each prompt's n-grams, as the token completing each (n - 1)-token prefix
        n = constraints.encoder_no_repeat_ngram_size
        self.prompt_ngrams: list[dict[tuple[int, ...], list[int]]] = []
        for prompt in prompts:
            ngrams: dict[tuple[int, ...], list[int]] = {}
            for start in range(len(prompt) - n + 1 if n else 0):
                ngrams.setdefault(tuple(prompt[start : start + n - 1]), []).append(prompt[start + n - 1])
            self.prompt_ngrams.append(ngrams)

    def _sequence_bias(self, scores: torch.Tensor) -> torch.Tensor:
        """transformers' SequenceBiasLogitsProcessor: each one-token sequence's bias (the last one given for a
        token), then each longer sequence's bias added to its last token where the sequence so far ends with the
        rest of it, summed in float32 and added to the scores."""
        vocab = scores.shape[-1]
        biases = dict(self.c.sequence_bias)  # a sequence given twice: the last bias, as transformers' dict keeps
        bias = torch.zeros_like(scores)
        single = torch.zeros((vocab,), dtype=torch.float, device=scores.device)
        ones = [(ids[0], b) for ids, b in biases.items() if len(ids) == 1]
        if ones:
            single[[i for i, _ in ones]] = torch.tensor([b for _, b in ones], device=scores.device)
        bias += single
        groups: dict[int, list[tuple[tuple[int, ...], float]]] = {}
        for ids, b in biases.items():
            if len(ids) > 1:
                groups.setdefault(len(ids) - 1, []).append((ids, b))
        for n, group in groups.items():
            if n > len(self.history[0]):
                continue
            last = torch.tensor([ids[-1] for ids, _ in group], device=scores.device)
            values = torch.tensor([b for _, b in group], dtype=torch.float, device=scores.device)
            for row, history in enumerate(self.history):
                match = torch.tensor([list(ids[:-1]) == history[-n:] for ids, _ in group], device=scores.device)
                bias[row].index_add_(0, last, torch.where(match, values, 0.0).to(bias.dtype))
        return scores + bias

    def before_penalty(self, scores: torch.Tensor) -> torch.Tensor:
        """sequence_bias, then encoder_repetition_penalty, which transformers applies before the repetition
        penalty: a decoder-only model's prompt is its encoder input, whose tokens' scores are raised (multiplied by
        the penalty when positive, divided when negative)."""
        if self.c.sequence_bias:
            scores = self._sequence_bias(scores.float())
        if self.c.encoder_repetition_penalty == 1:
            return scores
        scores = scores.float()
        inverse = 1 / self.c.encoder_repetition_penalty
        prompt = torch.tensor([ids[: self.prompt_len] for ids in self.history], device=scores.device)
        score = torch.gather(scores, 1, prompt)
        score = torch.where(score < 0, score * inverse, score / inverse)
        return scores.scatter(1, prompt, score)

    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        c, vocab = self.c, scores.shape[-1]
        scores = scores.float()
        mask = torch.zeros(scores.shape, dtype=torch.bool)
        bad = torch.zeros(scores.shape, dtype=torch.bool)
        length = len(self.history[0])
        for row, ids in enumerate(self.history):
            n = c.no_repeat_ngram_size
            if n and length >= n:
                prefix = ids[length + 1 - n :] if n > 1 else []
                for start in range(length - n + 1):
                    if ids[start : start + n - 1] == prefix and ids[start + n - 1] < vocab:
                        mask[row, ids[start + n - 1]] = True
            n = c.encoder_no_repeat_ngram_size
            if n and self.prompt_ngrams[row]:
                mask[row, self.prompt_ngrams[row].get(tuple(ids[length + 1 - n : length]), [])] = True
            for word in self.bad_words:
                if len(word) - 1 <= length and (len(word) == 1 or ids[length - len(word) + 1 :] == list(word[:-1])):
                    bad[row, word[-1]] = True
        scores = scores.masked_fill(mask.to(scores.device), -math.inf)
        # bad_words_ids: transformers' NoBadWordsLogitsProcessor is a sequence bias of -inf, added to the scores (a
        # score of +inf, an infinite sequence_bias, becomes NaN there, which its argmax picks), not set
        if bad.any():
            scores = scores + torch.zeros_like(scores).masked_fill(bad.to(scores.device), -math.inf)
        eos = [e for e in self.eos if 0 <= e < vocab]  # (transformers' processors pass over ids past the vocabulary)
        if eos and (length < c.min_length or length - self.prompt_len < c.min_new_tokens):
            scores[:, eos] = -math.inf  # (a tensor of this call's own: masked_fill made it)
        # after those, before the suppressions: the forced tokens
        if c.forced_bos_token_id is not None and length == 1:
            scores = torch.full_like(scores, -math.inf)
            scores[:, c.forced_bos_token_id] = 0
        if c.forced_eos_fails and length == self.max_length - 1:
            raise UsageError(
                f"{c.forced_eos_fails} (the model's generation settings), which transformers' processor forces at new "
                f"token {length - self.prompt_len + 1}, the last the length allows, and fails there (its generate "
                "prints no text)"
            )
        if c.forced_eos_token_id and length == self.max_length - 1:
            scores = torch.full_like(scores, -math.inf)
            scores[:, list(c.forced_eos_token_id)] = 0
        if c.remove_invalid_values:  # transformers' InfNanRemoveLogitsProcessor: NaN 0, +-inf the largest float32s
            big = torch.finfo(scores.dtype)
            scores = torch.nan_to_num(scores, nan=0.0, posinf=big.max, neginf=big.min)
        decay = c.exponential_decay_length_penalty
        if decay is not None and self.eos and length > decay[0] + self.prompt_len:
            decay_eos_check(decay, self.eos, vocab, self.prompt_len, length)  # (eos is then all of self.eos)
            # transformers' ExponentialDecayLengthPenalty: |score| times (factor ** steps - 1) added to each eos id's
            # score (none to a score that is not finite)
            penalty = torch.abs(scores[:, eos]) * decay_scale(decay, self.prompt_len, length)
            penalty = penalty.masked_fill(~torch.isfinite(scores[:, eos]), 0.0)
            penalties = torch.zeros_like(scores)
            penalties[:, eos] = penalty
            scores = scores + penalties
        mask = torch.zeros(scores.shape, dtype=torch.bool)
        if c.suppress_tokens:
            mask[:, list(c.suppress_tokens)] = True
        begin = self.prompt_len + (self.prompt_len == 1 and c.forced_bos_token_id is not None)
        if c.begin_suppress_tokens and length == begin:
            mask[:, list(c.begin_suppress_tokens)] = True
        return scores.masked_fill(mask.to(scores.device), -math.inf)

    def push(self, tokens: torch.Tensor) -> None:
        for ids, token in zip(self.history, tokens.tolist()):
            ids.append(token)


def decay_scale(decay: tuple[int | float, int | float], prompt_len: int, length: int) -> int | float:
    """exponential_decay_length_penalty's factor ** (length - (start + prompt length)) - 1 at a sequence ``length``
    past its start, as transformers' processor computes it in Python (the numbers as the settings give them) and
    multiplies float32 scores by it. Where that fails there (a float power past float64's range, an integer too large
    for torch, a negative factor raised to a fraction: a complex number its scores cannot hold), transformers'
    generate stops with an exception and prints no text: refused (UsageError) at that token."""
    start, factor = decay
    power = length - (start + prompt_len)
    try:
        scale = pow(factor, power)
        if not isinstance(scale, complex):
            scale = scale - 1
            if isinstance(scale, int):  # an integer torch may not take as a scalar (a float power raised already)
                torch.zeros(1) * scale
    except (OverflowError, RuntimeError):
        scale = None
    if scale is None or isinstance(scale, complex):
        what = "out of range" if scale is None else "no real number"
        raise UsageError(
            f"exponential_decay_length_penalty [{start!r}, {factor!r}] (the model's generation settings): {factor!r} "
            f"** {power!r} at new token {length - prompt_len + 1} is {what}, on which transformers' processor fails "
            "(its generate prints no text)"
        )
    return scale


def decay_eos_check(
    decay: tuple[int | float, int | float], eos: Sequence[int], vocab: int, prompt_len: int, length: int
) -> None:
    """Refuse (UsageError) a step where the decay applies and an eos id lies outside the vocabulary: transformers'
    ExponentialDecayLengthPenalty.__call__ indexes the scores with every eos id (``scores[:, self.eos_token_id]``),
    an IndexError there, only at the steps where the decay applies, so a run that ends before prints its text."""
    outside = sorted(e for e in eos if not 0 <= e < vocab)
    if outside:
        raise UsageError(
            f"exponential_decay_length_penalty raises eos ids outside the vocabulary of {vocab} ({outside!r}) from "
            f"new token {length - prompt_len + 1} on (the model's generation settings: {list(decay)!r}), where "
            "transformers' processor fails (its generate prints no text)"
        )


def decay_failure(
    constraints: Constraints,
    prompt_len: int,
    max_new_tokens: int,
    eos: Sequence[int] = (),
    vocab: int | None = None,
) -> int | None:
    """The first new token (counted from 1) at which ``decay_scale`` refuses these settings' decay within
    ``max_new_tokens``, or ``decay_eos_check`` refuses the ``eos`` ids for a ``vocab`` (transformers' generate fails
    there unless an eos id ends the text first); None if none."""
    decay = constraints.exponential_decay_length_penalty
    if decay is None:
        return None
    for length in range(prompt_len, prompt_len + max_new_tokens):
        if length > decay[0] + prompt_len:
            try:
                if vocab is not None:
                    decay_eos_check(decay, eos, vocab, prompt_len, length)
                decay_scale(decay, prompt_len, length)
            except UsageError:
                return length - prompt_len + 1
    return None


def penalize(logits: torch.Tensor, seen: torch.Tensor, penalty: float) -> torch.Tensor:
    """Scores [B, vocab] in float32 after transformers' repetition penalty (RepetitionPenaltyLogitsProcessor,
    on float32 logits as its generate makes them): where ``seen`` [B, vocab] marks a token of the sequence, a
    score below 0 times ``penalty``, any other over it."""
    scores = logits.float()
    return torch.where(seen, torch.where(scores < 0, scores * penalty, scores / penalty), scores)


def sample(
    logits: torch.Tensor,
    opts: Sampling,
    generator: torch.Generator | None,
    seen: torch.Tensor | None = None,
    processors: Processors | None = None,
) -> torch.Tensor:
    """Next token per row of logits [B, vocab] -> [B] (int64); ``seen`` [B, vocab] marks each sequence's
    tokens so far for the repetition penalty (needed when ``opts`` has one), and gets the new tokens; ``processors``
    masks tokens after the penalty (transformers' order), and gets the new tokens too."""
    if processors is not None:
        logits = processors.before_penalty(logits)
    if opts.penalty != 1:
        if seen is None:
            raise ValueError("a repetition penalty needs the tokens each sequence holds (seen)")
        logits = penalize(logits, seen, opts.penalty)
    if processors is not None:
        logits = processors(logits)
    if opts.temperature == 0:
        if opts.renormalize_logits:
            # transformers' LogitNormalization, its last processor, greedy or not: the float32 scores' log-softmax,
            # which moves the argmax where a score is +inf (every score NaN then: token 0) or two round together
            logits = logits.float().log_softmax(dim=-1)
        token = greedy_pick(logits)[:, 0]
    else:
        token = _draw(logits, opts, generator)
    if seen is not None:
        seen.scatter_(1, token[:, None], True)
    if processors is not None:
        processors.push(token)
    return token


def _draw(logits: torch.Tensor, opts: Sampling, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row drawn from the scores after transformers' sampling warpers, in generate's order and each
    computed as its warper computes it (so that a seeded draw picks what transformers' picks): temperature, top_h,
    top_k, top_p, min_p, typical_p, epsilon_cutoff, eta_cutoff; then renormalize_logits' log-softmax."""
    scores = logits.float() / opts.temperature
    if opts.top_h is not None:
        scores = _top_h(scores, opts.top_h)
    if opts.top_k:  # 0: no limit, as transformers' generate builds no TopKLogitsWarper then
        kth = torch.topk(scores, min(opts.top_k, scores.shape[-1]))[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, -math.inf)
    if opts.top_p is not None and opts.top_p < 1:
        # transformers' rule: drop the least likely tokens whose cumulated probability stays within 1 - top_p
        sorted_scores, order = torch.sort(scores, descending=False)
        drop = sorted_scores.softmax(dim=-1).cumsum(dim=-1) <= (1 - opts.top_p)
        drop[..., -1:] = False
        scores = scores.masked_fill(drop.scatter(1, order, drop), -math.inf)
    if opts.min_p is not None:
        probs = torch.softmax(scores, dim=-1)
        drop = probs < opts.min_p * probs.amax(dim=-1, keepdim=True)
        drop.scatter_(-1, torch.topk(probs, 1, dim=-1).indices, False)
        scores = scores.masked_fill(drop, -math.inf)
    if opts.typical_p is not None and opts.typical_p < 1:
        normalized = torch.nn.functional.log_softmax(scores, dim=-1)
        entropy = -(normalized * torch.exp(normalized)).nansum(-1, keepdim=True)
        shifted, order = torch.sort(torch.abs(-normalized - entropy), descending=False)
        cumulative = scores.gather(-1, order).softmax(dim=-1).cumsum(dim=-1)
        last = (cumulative < opts.typical_p).sum(dim=1).clamp_(max=shifted.shape[-1] - 1)
        drop = shifted > shifted.gather(1, last.view(-1, 1))
        drop[..., :1] = False
        scores = scores.masked_fill(drop.scatter(1, order, drop), -math.inf)
    for cutoff, eta in ((opts.epsilon_cutoff, False), (opts.eta_cutoff, True)):
        if cutoff is None or not 0 < cutoff < 1:
            continue
        probs = scores.softmax(dim=-1)
        floor: Any = cutoff
        if eta:
            entropy = torch.distributions.Categorical(logits=scores).entropy()
            epsilon = torch.tensor(cutoff, device=scores.device)
            floor = torch.min(epsilon, torch.sqrt(epsilon) * torch.exp(-entropy))[..., None]
        drop = (probs < floor) & (scores < torch.topk(scores, 1)[0][..., -1, None])
        scores = scores.masked_fill(drop, -math.inf)
    if opts.renormalize_logits:
        scores = scores.log_softmax(dim=-1)
    probs = scores.softmax(dim=-1)
    rows = opts.sequences  # transformers' num_return_sequences: each prompt's row repeated, its first row kept
    drawn = probs if rows == 1 else probs.repeat_interleave(rows, dim=0)
    try:  # one draw per row: torch checks the probabilities on the host (no device assert), as transformers' draw
        return torch.multinomial(drawn, 1, generator=generator)[::rows, 0]
    except RuntimeError as exc:
        if "probability tensor contains" not in str(exc):
            raise
        penalty = f" and the repetition penalty {opts.penalty:g}" if opts.penalty != 1 else ""
        raise SamplingError(
            f"cannot sample: the token probabilities hold inf or NaN (the logits scaled by --temperature "
            f"{opts.temperature:g}{penalty} overflow float32, or the model's logits are not finite); raise the "
            "temperature, or decode greedily with --temperature 0"
        ) from None


def _top_h(scores: torch.Tensor, top_h: float) -> torch.Tensor:
    """transformers' TopHLogitsWarper: of the 100 most likely tokens, those in order of probability while their
    cumulated entropy terms stay within top_h times the entropy of those 100 (the first always kept)."""
    top_logits, top_idx = torch.topk(scores, min(100, scores.shape[-1]), dim=-1, largest=True, sorted=True)
    dist = torch.distributions.Categorical(logits=top_logits)
    probs = dist.probs
    tau = (dist.entropy() * top_h).unsqueeze(-1)
    keep = torch.cumsum(-probs * torch.log(probs), dim=-1) <= tau
    keep[:, 0] = True
    mask = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device)
    mask.scatter_(dim=1, index=top_idx, src=keep)
    out = scores.clone()
    out[~mask] = -math.inf
    return out


def prefill(model: Transformer, prompts: list[list[int]], graphs: PrefillGraphs | None = None) -> torch.Tensor:
    """Logits [B, vocab] of each prompt's last token (equal lengths, one per row of the model's batch),
    their k and v written to the cache at positions 0.. of each sequence (in chunks when long:
    ``Transformer.prefill``); replayed from ``graphs`` when it holds this prompt length."""
    tokens = torch.tensor(prompts, dtype=torch.long, device=model.w.embed.device)
    if graphs is not None:
        replayed = graphs.replay(tokens)
        if replayed is not None:
            return replayed
    return model.prefill(tokens)


class PrefillGraphs:
    """A model's one-pass prefills as CUDA graphs, one per prompt length, kept for the model's life.

    Prefilling L tokens eagerly issues every kernel launch from the host one by one (~250 for a
    22-layer model), which for a short prompt takes longer than the GPU work. Captured once at a length
    (``capture``, done with the decode step's capture, before the prompt is timed), each later prefill
    of that length is one replay, so the time to first token follows the GPU. A prompt prefilled in
    chunks (longer than ``model.chunk``) runs eagerly. At most ``KEEP`` lengths are held (each graph
    keeps its activations' memory reserved); the least recently used is dropped first.
    """

    KEEP = 4

    def __init__(self, model: Transformer) -> None:
        self.model = model
        # length -> (graph, its static token input [B, L], its logits output [B, vocab])
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]] = {}

    def _forward(self, tokens: torch.Tensor) -> torch.Tensor:
        B, L = tokens.shape
        positions = self.model.positions[:L][None, :].expand(B, L)
        logits = self.model.forward(tokens, positions, None)
        assert logits is not None
        return logits

    def capture(self, length: int) -> None:
        """Capture the prefill of ``length`` tokens (nothing when held already or prefilled in chunks). A
        warm-up pass on a side stream (kernels loaded, memory allocated) writes placeholder k and v at
        positions 0 .. length - 1, which every prefill rewrites before anything reads them."""
        if length in self.graphs:
            self.graphs[length] = self.graphs.pop(length)  # most recently used last
            return
        if length > self.model.chunk:
            return
        batch = self.model.cache.k[0].shape[0]
        tokens = torch.zeros((batch, length), dtype=torch.long, device=self.model.w.embed.device)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self._forward(tokens)
        torch.cuda.current_stream().wait_stream(stream)
        # the warm-up's activations, now free in PyTorch's cache, go back to the device: the graph's own
        # memory pool needs as much again, and the memory check before loading counted one pass's worth
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = self._forward(tokens)
        while len(self.graphs) >= self.KEEP:
            del self.graphs[next(iter(self.graphs))]
        self.graphs[length] = (graph, tokens, logits)

    def replay(self, tokens: torch.Tensor) -> torch.Tensor | None:
        """The logits of prefilling ``tokens`` [B, L] by replaying the graph of length L; None when none is held."""
        held = self.graphs.get(tokens.shape[1])
        if held is None:
            return None
        graph, static, logits = held
        static.copy_(tokens)
        graph.replay()
        return logits


def capture_graph(run: Callable[[], T]) -> tuple[torch.cuda.CUDAGraph, T]:
    """``run`` once on a side stream (its kernels loaded, its memory allocated), then captured as a CUDA
    graph: the graph, and what the captured call returned (its outputs, rewritten by each replay)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        run()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = run()
    return graph, out


def _feed(into: torch.Tensor, state: torch.Tensor, tokens: torch.Tensor, position: int) -> None:
    """A decode step's inputs: ``tokens`` [B] into ``into`` [B, 1], ``position`` and its cache length (one
    more) into rows 0 and 1 of ``state`` [2, B]."""
    into.copy_(tokens[:, None])
    state[0].fill_(position)
    state[1].fill_(position + 1)


class Decoder:
    """The decode step over static buffers; on CUDA captured once as a graph and replayed."""

    def __init__(self, model: Transformer, batch: int, use_graph: bool) -> None:
        device = model.w.embed.device
        self.model = model
        self.tokens = torch.zeros((batch, 1), dtype=torch.long, device=device)
        # positions (row 0) and cache lengths (row 1) as GreedyDecoder holds them: the same kernel binaries
        # for both loops (an int32 length is another binary, which `neurobrix warmup` would not have built)
        self.state = torch.zeros((2, batch), dtype=torch.long, device=device)
        self.use_graph = use_graph
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None

    def _forward(self) -> torch.Tensor:
        return self.model.forward(self.tokens, self.state[0][:, None], self.state[1])

    def _feed(self, tokens: torch.Tensor, position: int) -> None:
        _feed(self.tokens, self.state, tokens, position)

    def capture(self, position: int) -> None:
        """Capture the step as a CUDA graph (nothing to do off CUDA), warmed up at ``position``: a
        warm-up step on a side stream (kernels loaded, memory allocated) writes placeholder k and v at
        ``position``, which the first real step at that position overwrites before reading them."""
        if not self.use_graph or self.graph is not None:
            return
        self._feed(torch.zeros_like(self.tokens[:, 0]), position)
        self.graph, self.logits = capture_graph(self._forward)

    def step(self, tokens: torch.Tensor, position: int) -> torch.Tensor:
        """Logits [B, vocab] after feeding ``tokens`` [B] at ``position``."""
        if not self.use_graph:
            self._feed(tokens, position)
            return self._forward()
        self.capture(position)
        self._feed(tokens, position)
        self.graph.replay()
        return self.logits


class GreedyDecoder:
    """Greedy decoding, each step's token picked on the device (``greedy_pick``) and fed to the next step
    there: a replay of the captured step needs nothing from the host. The step reads its token from
    ``tokens`` [B, 1] and its position and cache length from ``state`` [2, B] (row 0 the position, row 1 the
    length after the step, as the kernels take them), then writes the picked token over ``tokens`` and moves
    ``state`` on by one (one kernel, the op ``greedy_pick``). ``Decoder`` with ``sample`` instead copies the
    token in and fills the position and the length from the host, and picks outside the graph: each a stream operation
    waiting for the one before. Off CUDA the same step runs eagerly.

    Measured on the H200 (benchmarks/results/2026-12-02e): capturing several steps in one graph decoded at
    most 2 % faster and cost each run 0.3-0.6 s more capture, so one step a replay.
    """

    def __init__(
        self, model: Transformer, batch: int, use_graph: bool, penalty: float = 1.0, seen: torch.Tensor | None = None
    ) -> None:
        """``penalty``, ``seen``: the repetition penalty and its [B, vocab] marks of each sequence's tokens,
        updated on the device with each step's token."""
        if penalty != 1 and seen is None:
            raise ValueError("a repetition penalty needs the tokens each sequence holds (seen)")
        device = model.w.embed.device
        self.model, self.use_graph, self.penalty, self.seen = model, use_graph, penalty, seen
        self.tokens = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.state = torch.zeros((2, batch), dtype=torch.long, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None

    def _step(self) -> None:
        logits = self.model.forward(self.tokens, self.state[0][:, None], self.state[1])
        assert logits is not None
        # the token written over the step's input (the embedding lookup read it first), the state moved on
        if self.penalty != 1:  # float32 scores after the penalty: PyTorch's pick
            assert self.seen is not None
            greedy_pick(penalize(logits, self.seen, self.penalty), out=self.tokens)
            self.state.add_(1)
        else:  # one kernel (neurobrix/ops/pick.py)
            self.model.ops.greedy_pick(logits, self.tokens, self.state)
        if self.seen is not None:
            self.seen.scatter_(1, self.tokens, True)

    def capture(self, position: int) -> None:
        """Capture the step (nothing off CUDA, or when held), warmed up at ``position``: a warm-up step on a
        side stream writes placeholder k and v there, which the first real step rewrites before reading."""
        if not self.use_graph or self.graph is not None:
            return
        self.start(self.tokens[:, 0], position)
        self.graph, _ = capture_graph(self._step)

    def start(self, tokens: torch.Tensor, position: int) -> None:
        """Feed the first token per sequence [B] at ``position`` (the prompt's length)."""
        _feed(self.tokens, self.state, tokens, position)

    def step(self) -> torch.Tensor:
        """Run one step; returns ``tokens``, the picked token per sequence [B, 1], until the next step."""
        if self.graph is None:
            self._step()
        else:
            self.graph.replay()
        return self.tokens


class _Reader:
    """Reads a step's tokens back to the host without waiting for work queued after them: on CUDA a
    copy into pinned memory and an event, both queued at ``start``; ``finish`` waits for that event only."""

    def __init__(self, like: torch.Tensor) -> None:
        self.cuda = like.device.type == "cuda"
        self.host = torch.empty(like.shape, dtype=like.dtype, pin_memory=True) if self.cuda else None
        self.done = torch.cuda.Event() if self.cuda else None
        self.token: torch.Tensor | None = None

    def start(self, token: torch.Tensor) -> None:
        # off CUDA the work queued after ``start`` has already run: keep the tokens as they are now
        self.token = token if self.cuda else token.clone()
        if self.host is not None and self.done is not None:
            self.host.copy_(token, non_blocking=True)
            self.done.record()

    def finish(self) -> list[Any]:
        assert self.token is not None
        if self.host is None or self.done is None:
            return self.token.tolist()
        self.done.synchronize()
        return self.host.tolist()


def _tokens(n: int) -> str:
    return f"{n} token" if n == 1 else f"{n} tokens"


@dataclass
class Stats:
    """The numbers of the statistics line, each phase timed on its own."""

    prompt_tokens: int
    generated_tokens: int
    time_to_first_token_s: float  # the prompt's own: from the start of its prefill to its first token
    decode_tokens_per_s: float  # tokens after the first, over the time from the first token to the last
    load_s: float | None = None  # preflight and weights onto the device (``run`` sets it)
    capture_s: float = 0.0  # before the prefill: its kernels loaded, the decode step captured (CUDA)
    decoded_tokens: int | None = None  # the tokens after each sequence's first (0: the decode rate measures nothing)
    captured: bool | None = None  # whether CUDA graphs were captured (False off a GPU: capture_s measures nothing)

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.time_to_first_token_s if self.time_to_first_token_s > 0 else 0.0

    def line(self) -> str:
        phases = [f"prompt {_tokens(self.prompt_tokens)}", f"generated {_tokens(self.generated_tokens)}"]
        if self.load_s is not None:
            phases.append(f"load {self.load_s:.2f} s")
        phases += [
            # off a GPU nothing is captured: "capture 0.00 s" read as a capture that was fast, where there was none
            # (walk-through round 43)
            "capture n/a (CUDA only)" if self.captured is False else f"capture {self.capture_s:.2f} s",
            f"time to first token {self.time_to_first_token_s * 1000:.1f} ms",
            f"prefill {self.prefill_tokens_per_s:.0f} tokens/s",
            # no token after the first (one asked for, or an end-of-text id first): "decode 0.0 tokens/s" read as a
            # decode too slow to make one, where none was made (walk-through round 41)
            "decode n/a (no token after the first)"
            if self.decoded_tokens == 0
            else f"decode {self.decode_tokens_per_s:.1f} tokens/s",
        ]
        return "[" + " | ".join(phases) + "]"


def generate_batch(
    model: Transformer,
    prompts: list[list[int]],
    max_new_tokens: int,
    opts: Sampling,
    eos: set[int],
    on_step: Callable[[list[int | None]], None] | None = None,
    use_graph: bool = False,
    device_pick: bool = True,
    constraints: Constraints | None = None,
    stop: Callable[[list[int]], bool] | None = None,
) -> tuple[list[list[int]], Stats]:
    """Generate up to ``max_new_tokens`` after each of ``prompts`` (equal lengths, one per row of the
    model's batch); a sequence stops at its first EOS, or where ``stop`` (given the prompt and the new tokens so far,
    after each token) says so (transformers' stop strings: ``Tokenizer.stop_strings``), the batch when all have.
    ``on_step`` gets each step's new token per sequence (None for one already finished). Returns (new ids per
    sequence, stats).

    Greedy decoding picks each token on the device, inside the step's graph (``GreedyDecoder``);
    ``device_pick=False``, sampling, or ``constraints`` (the model's token masks, see ``Constraints``) picks it on
    the host's side of the graph (``Decoder``).

    A model generates one generation at a time: its KV cache, graphs and decode state are its own, so that a second
    generation begun while one runs (in another thread, or from the first one's ``on_step`` or ``stop``) wrote its
    tokens into the first one's cache, and each went on with the other's (other tokens, silently). It is refused.
    """
    if not isinstance(model, Transformer):
        raise UsageError(f"generate's model must be a neurobrix.model.Transformer, got {type(model).__name__}")
    if not model.generating.acquire(blocking=False):
        raise UsageError(
            "this model is generating already (in another thread, or in a callback of its own generation): a model's "
            "KV cache holds one generation at a time; wait for it to end, or load a second model"
        )
    try:
        require_current(model.ops)  # the model's settings still what the tables found now certify
        return _generate_batch(
            model, prompts, max_new_tokens, opts, eos, on_step, use_graph, device_pick, constraints, stop
        )
    finally:
        model.generating.release()


@torch.inference_mode()
def _generate_batch(
    model: Transformer,
    prompts: list[list[int]],
    max_new_tokens: int,
    opts: Sampling,
    eos: set[int],
    on_step: Callable[[list[int | None]], None] | None,
    use_graph: bool,
    device_pick: bool,
    constraints: Constraints | None,
    stop: Callable[[list[int]], bool] | None,
) -> tuple[list[list[int]], Stats]:
    """``generate_batch`` once the model is this generation's."""
    if not isinstance(opts, Sampling):
        raise UsageError(f"generate's opts must be a neurobrix.generate.Sampling, got {type(opts).__name__}")
    opts.validate()
    expect("max_new_tokens", max_new_tokens, "an integer")
    if max_new_tokens < 1:
        raise UsageError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    # the rest of the call's arguments, before the model runs: each was used only after the prefill, an int eos or a
    # dict of constraints failing there in a TypeError or AttributeError, an eos of strings never matching a token
    if not isinstance(eos, (set, frozenset, list, tuple)) or not all(type(i) is int for i in eos):
        raise UsageError(f"generate's eos must be a set of token ids (integers), got {eos!r}")
    eos = set(eos)
    if constraints is not None and not isinstance(constraints, Constraints):
        raise UsageError(
            f"generate's constraints must be a neurobrix.generate.Constraints or None, got {constraints!r}"
        )
    for name, hook in (("on_step", on_step), ("stop", stop)):
        if hook is not None and not callable(hook):
            raise UsageError(f"generate's {name} must be a function or None, got {hook!r}")
    expect("use_graph", use_graph, "true or false")
    expect("device_pick", device_pick, "true or false")
    if not isinstance(prompts, list) or not all(
        isinstance(p, list) and all(type(i) is int for i in p) for p in prompts
    ):
        raise UsageError("generate's prompts must be lists of token ids (integers)")
    batch = model.cache.k[0].shape[0]
    if len(prompts) != batch or len({len(p) for p in prompts}) != 1 or not prompts[0]:
        raise UsageError(
            f"generate takes {batch} non-empty prompts of one length (the model's batch), "
            f"got lengths {[len(p) for p in prompts]}"
        )
    vocab = model.cfg.vocab_size
    if constraints is not None:
        constraints.validate(vocab)
    past = sorted({i for p in prompts for i in p if not 0 <= i < vocab})
    if past:  # a token a tokenizer adds after the embedding's rows (a new pad token...): transformers' model fails too
        raise UsageError(
            f"the prompt holds token ids past the model's {vocab} embeddings (config.json's vocab_size): "
            f"{', '.join(map(str, past[:8]))}{' ...' if len(past) > 8 else ''}; the model cannot read them"
        )
    seq = len(prompts[0])
    # the last decode step feeds position seq + max_new_tokens - 2 and fills the cache one further
    if seq + max_new_tokens - 1 > model.cache.capacity:
        raise UsageError(
            f"a {seq}-token prompt and {max_new_tokens} new tokens need a KV cache of "
            f"{seq + max_new_tokens - 1} positions; this model was built with {model.cache.capacity}"
        )
    window = model.cfg.sliding_window
    if window is not None and seq + max_new_tokens - 1 > window:
        # transformers' model lets a query see only the last ``window`` positions; the engine attends to all,
        # which is the same text only while every position fed lies within one window
        raise UsageError(
            f"a {seq}-token prompt and {max_new_tokens} new tokens feed the model {seq + max_new_tokens - 1} "
            f"positions, more than its sliding attention window of {window} (config.json's sliding_window), "
            "which NeuroBrix does not apply; shorten the prompt or lower --max-tokens"
        )
    device = model.w.embed.device
    generator = None
    if opts.seed is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(opts.seed)
    graphed = use_graph and device.type == "cuda"
    seen = None  # [B, vocab]: the tokens each sequence holds, for the repetition penalty
    if opts.penalty != 1:
        seen = torch.zeros((batch, model.cfg.vocab_size), dtype=torch.bool, device=device)
    processors = None
    if constraints is not None and constraints.active:
        processors = Processors(constraints, prompts, max_new_tokens, eos)
    greedy = None
    if opts.temperature == 0 and device_pick and processors is None and not opts.renormalize_logits:
        greedy = GreedyDecoder(model, batch, graphed, opts.penalty, seen)
    decoder = Decoder(model, batch, graphed)
    graphs = None
    prepare = time.perf_counter()  # lean: user statistics (the run's own line, never used to pick settings)
    if decoder.use_graph:
        # Before the prompt is timed: the prefill at this length is captured as a graph (its warm-up pass
        # loads every prefill kernel, or compiles it when `neurobrix warmup` has not); a prompt prefilled in
        # chunks is prefilled once instead, for the same reason. The decode step is captured at the first
        # position it will decode. The prefill below rewrites the same k and v; its first token is the
        # prompt's own.
        graphs = model.graphs.setdefault("prefill", PrefillGraphs(model))
        graphs.capture(seq)
        if seq not in graphs.graphs:
            prefill(model, prompts)
        if greedy is not None and max_new_tokens > 1:  # a decode step will run
            greedy.capture(seq)
        elif max_new_tokens > 1:  # a decode step will run
            decoder.capture(seq)
        torch.cuda.synchronize()
    if seen is not None:  # the prompts' tokens (a capture's warm-up above marked placeholders)
        seen.zero_()
        seen.scatter_(1, torch.tensor(prompts, device=device), True)
    start = time.perf_counter()  # lean: user statistics
    token = sample(prefill(model, prompts, graphs), opts, generator, seen, processors)
    outs: list[list[int]] = [[] for _ in range(batch)]
    done = [False] * batch

    def record(step: list[int]) -> None:
        new: list[int | None] = []
        for b, t in enumerate(step):  # the .tolist() that made ``step`` synced: these tokens exist now
            new.append(None if done[b] else t)
            if not done[b]:
                outs[b].append(t)
                done[b] = t in eos or (stop is not None and stop(prompts[b] + outs[b]))
        if on_step:
            on_step(new)

    record(token.tolist())
    first = time.perf_counter()  # lean: user statistics
    # One step ahead: step s + 1 is queued on the GPU (from step s's token, still on the device) before the
    # host reads step s's tokens, so the GPU never waits for the host's read, streaming and EOS check. The
    # read is a copy queued before step s + 1 into pinned memory, waited for by its own event: a plain
    # .tolist() would queue behind step s + 1 and wait for it. When every sequence has ended, the one
    # step queued past the end is computed and dropped.
    if greedy is not None:
        _decode_greedy(greedy, token, seq, max_new_tokens - 1, record, lambda: all(done))
    else:
        read = _Reader(token)
        steps = 1

        def step(token: torch.Tensor, position: int) -> torch.Tensor | UsageError:
            # the step queued ahead may lie past the end of every sequence, where transformers' generate computes
            # nothing: a refusal of its settings there (``decay_scale``) is raised only once the step is needed
            try:
                return sample(decoder.step(token, position), opts, generator, seen, processors)
            except UsageError as exc:
                return exc

        ahead: torch.Tensor | UsageError | None = None
        if steps < max_new_tokens and not all(done):
            ahead = step(token, seq)
        while ahead is not None:
            if isinstance(ahead, UsageError):
                raise ahead
            token, steps = ahead, steps + 1
            read.start(token)
            ahead = step(token, seq + steps - 1) if steps < max_new_tokens else None
            record(read.finish())
            if all(done):
                break
    end = time.perf_counter()  # lean: user statistics
    decoded = sum(len(o) for o in outs) - batch
    rate = decoded / (end - first) if decoded and end > first else 0.0
    stats = Stats(batch * seq, sum(len(o) for o in outs), first - start, rate, capture_s=start - prepare)
    return outs, dataclasses.replace(stats, decoded_tokens=decoded, captured=decoder.use_graph)


def _decode_greedy(
    greedy: GreedyDecoder,
    token: torch.Tensor,
    seq: int,
    steps: int,
    record: Callable[[list[int]], None],
    finished: Callable[[], bool],
) -> None:
    """``steps`` greedy decode steps after the first token [B] (at position ``seq``), each step's tokens
    handed to ``record`` until ``finished``. One step ahead, as the sampling loop: step s + 1 is queued
    before the host reads step s's tokens (a copy queued between the two into the other of two pinned
    buffers, so step s + 1 cannot overwrite them first)."""
    if steps < 1 or finished():
        return
    greedy.start(token, seq)
    reads = [_Reader(greedy.tokens) for _ in range(2)]  # step s's tokens in reads[s % 2]
    reads[0].start(greedy.step())
    for s in range(1, steps + 1):
        if s < steps:
            reads[s % 2].start(greedy.step())
        record([t for (t,) in reads[(s - 1) % 2].finish()])
        if finished():
            return


def generate(
    model: Transformer,
    prompt: list[int],
    max_new_tokens: int,
    opts: Sampling,
    eos: set[int],
    on_token: Callable[[int], None] | None = None,
    use_graph: bool = False,
    constraints: Constraints | None = None,
    stop: Callable[[list[int]], bool] | None = None,
) -> tuple[list[int], Stats]:
    """Generate up to ``max_new_tokens`` after ``prompt`` (batch 1); returns (new token ids, statistics)."""
    if on_token is not None and not callable(on_token):  # called inside on_step, after the prefill
        raise UsageError(f"generate's on_token must be a function or None, got {on_token!r}")
    on_step = (lambda new: on_token(new[0]) if new[0] is not None else None) if on_token else None
    outs, stats = generate_batch(
        model, [prompt], max_new_tokens, opts, eos, on_step, use_graph, constraints=constraints, stop=stop
    )
    return outs[0], stats
