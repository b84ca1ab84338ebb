"""A newcomer's pass over the README's user commands on a machine without a GPU: what a first user types
(the CPU example, `--help` of every command, common mistakes) said something wrong or nothing where it had to."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from neurobrix.config import ModelConfig
from neurobrix.errors import UsageError
from neurobrix.run import new_token_limit

BASE = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 8,
    "intermediate_size": 12,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 10,
    "max_position_embeddings": 16,
    "rms_norm_eps": 1e-5,
}
NO_LENGTH = SimpleNamespace(max_new_tokens=lambda n: None, generation_file="generation_config.json")


@pytest.mark.parametrize("asked", [None, 3])
@pytest.mark.parametrize("prompt_len", [16, 40])
def test_a_prompt_that_fills_the_context_is_refused_for_its_own_length(prompt_len, asked):
    """A prompt of the context's length or more leaves no room for one new token, whatever --max-tokens says.
    `run` noted "generating at most 20 tokens" and then refused it, telling the user to "lower --max-tokens",
    which cannot help; now it refuses the prompt alone, with the length that fits, and notes no count."""
    cfg = ModelConfig.from_hf(BASE)
    said: list[str] = []
    with pytest.raises(UsageError) as info:
        new_token_limit(cfg, NO_LENGTH, prompt_len, asked, said.append)
    message = str(info.value)
    assert f"the prompt ({prompt_len} tokens) plus one new token exceeds the model's context of 16 tokens" in message
    assert "at most 15 tokens" in message and "--max-tokens" not in message
    assert said == []
    # one token shorter, the prompt runs its one new token (the default cut to it, with a note)
    assert new_token_limit(cfg, NO_LENGTH, 15, asked and 1, said.append) == 1
    with pytest.raises(UsageError, match="plus --max-tokens 2 exceeds .* or lower --max-tokens"):
        new_token_limit(cfg, NO_LENGTH, 15, 2, print)


def test_a_prompt_filling_a_sliding_window_names_the_window_and_what_fits():
    cfg = ModelConfig.from_hf({**BASE, "architectures": ["MistralForCausalLM"], "sliding_window": 10})
    with pytest.raises(UsageError, match=r"exceeds the model's sliding attention window of 10 .* at most 10 tokens"):
        new_token_limit(cfg, NO_LENGTH, 11, 1, print)


def test_doctor_help_names_every_row_the_doctor_reports():
    """`neurobrix doctor --help` named python, torch, triton, the device, the class and the tables only, while the
    report also has the model store, the class's kernels, the compiler stack, the Triton variables and cache, the
    kernel sources and the environment's NEUROBRIX_* variables (the README's commands table lists them). Each row
    name the doctor can print (read from its source, so a new row needs its word in the help) is in the help."""
    import re
    from pathlib import Path

    import neurobrix.doctor
    from neurobrix.cli import build_parser

    rows = set(re.findall(r'Finding\("([^"]+)"', Path(neurobrix.doctor.__file__).read_text(encoding="utf-8")))
    assert {"python", "store", "stack", "kernels", "environment"} <= rows  # the source is read as meant
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    description = commands.choices["doctor"].description.lower()
    assert sorted(row for row in rows if row not in description) == []
