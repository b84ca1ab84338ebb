"""A newcomer's pass over the README's user commands on a machine without a GPU: what a first user types
(the CPU example, `--help` of every command, common mistakes) said something wrong or nothing where it had to."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest
from test_config import BASE  # the smallest Llama config.json

from neurobrix.config import ModelConfig
from neurobrix.errors import UsageError
from neurobrix.run import new_token_limit

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


def _parsers():
    from conformance.__main__ import build_parser as conformance_parser
    from gate.cli import build_parser as gate_parser
    from neurobrix.cli import build_parser as neurobrix_parser

    return {
        "neurobrix": neurobrix_parser(),
        "python -m conformance": conformance_parser(),
        "python -m gate": gate_parser(),
    }


def _options(parser, name):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from _options(subparser, f"{name} {sub}")
        elif action.option_strings:
            yield name, action


def test_every_option_with_a_default_says_which_in_its_help():
    """`--help` is where a newcomer learns what an option does when not given: `conformance check` ran the dev
    profile (40 random examples) without saying so, while the README shows `--profile ci`; `rank --batch` said
    "(1 8)", `rank --examples`, `certify --profile`, `rank --profile` and `sweep --examples` said nothing. Every
    option whose default is a value (a number, one of its choices, a list) names it next to "default"; a default
    computed from the environment (a tables folder) only has to be described."""
    missing = []
    for prog, parser in _parsers().items():
        for name, action in _options(parser, prog):
            default = action.default
            if default in (None, False, argparse.SUPPRESS) or isinstance(
                action, (argparse._HelpAction, argparse._VersionAction)
            ):
                continue
            text = (action.help or "") % {**vars(action), "prog": name} if "%(" in (action.help or "") else action.help
            text = text or ""
            if isinstance(default, str) and not action.choices:
                shown = None  # a path or a value from the environment: described, not printed
            elif isinstance(default, list):
                shown = " ".join(str(item) for item in default)
            else:
                shown = str(default)
            if "default" not in text or (shown is not None and shown not in text):
                missing.append(f"{name} {'/'.join(action.option_strings)} (default {default!r}): {text}")
    assert missing == []
