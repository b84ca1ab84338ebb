"""The sampling settings of a generation (``--temperature``, ``--top-k``, ``--top-p``, ``--seed``,
``--repetition-penalty``) and their check. Apart from :mod:`neurobrix.generate` (which applies them, and names this
class as its own) because the check imports nothing heavy: `neurobrix run` refuses a setting out of its range before
torch is imported, as it refuses a model not stored (``neurobrix.cli.before_torch``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import UsageError, expect


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0 = greedy
    top_k: int | None = None  # 0: no top-k limit (transformers' top_k=0), None: the model's (``neurobrix.run``)
    top_p: float | None = None  # in [0, 1]: 0 keeps the most likely token, 1 every token
    seed: int | None = None
    # transformers' repetition penalty: a logit of a token the sequence holds (prompt or generated) divided by
    # it when positive, multiplied when negative; 1 = none. None: the model's (``neurobrix.run``), else 1
    repetition_penalty: float | None = None
    # transformers' other sampling filters, each applied after top-p as its warper computes it (None: off): min_p
    # (tokens under min_p times the top token's probability), typical_p (locally typical sampling's mass, < 1),
    # epsilon_cutoff and eta_cutoff (tokens under a probability floor, 0 < cutoff < 1), and top_h (before top-k:
    # the most likely of the top 100 tokens while their entropy stays within top_h times theirs in all)
    min_p: float | None = None
    typical_p: float | None = None
    epsilon_cutoff: float | None = None
    eta_cutoff: float | None = None
    top_h: float | None = None
    # transformers' renormalize_logits: the scores after every warper replaced by their log-softmax (LogitNormalization,
    # its last processor) before the draw's softmax, which rounds otherwise, or before a greedy pick (an infinite score
    # makes every score NaN there: token 0); None: the model's (``neurobrix.run``)
    renormalize_logits: bool | None = None
    # transformers' num_return_sequences where it samples: generate repeats the prompt that many times and draws every
    # row's token in one multinomial call per step, so that a seed draws other tokens for the first row than for a
    # prompt alone; the engine generates the first sequence, each draw made over that many copies of its
    # probabilities (the first row's draw is the same whatever the others' probabilities)
    sequences: int = 1

    @property
    def penalty(self) -> float:
        return 1.0 if self.repetition_penalty is None else self.repetition_penalty

    def validate(self) -> None:
        expect("Sampling.temperature", self.temperature, "a number")
        expect("Sampling.top_k", self.top_k, "an integer", optional=True)
        expect("Sampling.seed", self.seed, "an integer", optional=True)
        expect("Sampling.renormalize_logits", self.renormalize_logits, "true or false", optional=True)
        expect("Sampling.sequences", self.sequences, "an integer")
        if self.sequences < 1:
            raise UsageError(f"Sampling.sequences must be >= 1, got {self.sequences}")
        for name in ("top_p", "repetition_penalty", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_h"):
            expect(f"Sampling.{name}", getattr(self, name), "a number", optional=True)
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise UsageError(f"--temperature must be a number >= 0, got {self.temperature}")
        # as transformers' generate takes them: top_k 0 builds no top-k warper (all tokens), top_p 0 keeps the most
        # likely token (its warper takes [0, 1])
        if self.top_k is not None and self.top_k < 0:
            raise UsageError(f"--top-k must be >= 0 (0: no top-k limit), got {self.top_k}")
        if self.top_p is not None and not (math.isfinite(self.top_p) and 0 <= self.top_p <= 1):
            raise UsageError(f"--top-p must be in [0, 1], got {self.top_p}")
        if self.seed is not None and not 0 <= self.seed < 2**64:  # what torch.Generator.manual_seed takes
            raise UsageError(f"--seed must be an integer in [0, 2**64), got {self.seed}")
        if not self.penalty > 0:  # infinity too, as transformers' processor takes it (NaN is no number > 0)
            raise UsageError(f"--repetition-penalty must be a number > 0, got {self.repetition_penalty}")
        # what transformers' warpers accept where generate builds them (low, high, whether each is taken):
        # TypicalLogitsWarper refuses a typical_p of 0 and TopHLogitsWarper a top_h of 0 (generate builds both
        # there), where an epsilon_cutoff or eta_cutoff of 0 builds no warper
        ranges = {
            "min_p": (0, 1, True, True),
            "typical_p": (0, 1, False, False),
            "epsilon_cutoff": (0, 1, True, False),
            "eta_cutoff": (0, 1, True, False),
            "top_h": (0, 1, False, True),
        }
        for name, (low, high, from_low, to_high) in ranges.items():
            value = getattr(self, name)
            if value is not None and not (
                math.isfinite(value)
                and (low <= value if from_low else low < value)
                and (value <= high if to_high else value < high)
            ):
                said = f"{'[' if from_low else '('}{low}, {high}{']' if to_high else ')'}"
                raise UsageError(f"{name} must be in {said}, got {value}")
