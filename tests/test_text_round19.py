"""The nineteenth round of text parity: config.json's attention windows compared with transformers' own generate on
tiny random Qwen2 and Mistral checkpoints (round 7's: PyTorch's kernels, greedy in float64).

- A layer marked sliding_attention without a window: Qwen2Config keeps sliding_window only with use_sliding_window,
  and a Qwen2 layer that layer_types marks sliding attends through a sliding-window mask that fails without one (a
  TypeError); a mistral config.json holding layer_types is Ministral to transformers, whose model builds the
  sliding-window mask at every step, whatever the layers are, and fails where sliding_window is null (a ValueError).
  transformers prints no text; the engine ran every layer over full attention and printed text. Each is refused at
  import (and so by run, which reads config.json the same way) in one line naming the field (exit 2).
- Held: the same fields where transformers builds a window or none (use_sliding_window with a window wider than the
  run, a null window on Qwen2 without layer_types, a Ministral file whose window is set), run's text its text.

Each test of the first class failed before its fix."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint, ours, theirs  # noqa: E402
from test_text_round13 import _import_refused, _no_text  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}
SLIDING = ["full_attention", "sliding_attention"]

# --- a layer marked sliding without a window ----------------------------------------------------------------------

NO_WINDOW = {  # family, config.json fields, what the refusal names
    "Qwen2, use_sliding_window false, layers marked sliding": (
        "Qwen2Config",
        {"use_sliding_window": False, "sliding_window": 8, "layer_types": SLIDING},
        "the sliding window is off (use_sliding_window false)",
    ),
    "Qwen2, sliding_window null, layers marked sliding": (
        "Qwen2Config",
        {"use_sliding_window": True, "sliding_window": None, "layer_types": SLIDING},
        "the sliding window is null",
    ),
    "Ministral, sliding_window null, every layer full": (
        "MistralConfig",
        {"sliding_window": None, "layer_types": ["full_attention", "full_attention"]},
        "sliding_window is null in a mistral config.json with layer_types",
    ),
    "Ministral, sliding_window null, layer_types null": (
        "MistralConfig",
        {"sliding_window": None, "layer_types": None},
        "sliding_window is null in a mistral config.json with layer_types",
    ),
}


@pytest.mark.parametrize("case", NO_WINDOW)
def test_a_sliding_mask_without_a_window_is_refused_by_name(tmp_path, monkeypatch, capsys, case):
    """transformers' mask fails, so generate prints nothing. Before: imported, and run printed full attention's
    text."""
    family, fields, named = NO_WINDOW[case]
    folder = checkpoint(tmp_path / "m", family, fields=fields, generation=GENERATION)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, named)


# --- held ground ---------------------------------------------------------------------------------------------------

HELD = {
    "Qwen2, a window wider than the run on a layer marked sliding": (
        "Qwen2Config",
        {"use_sliding_window": True, "sliding_window": 100, "layer_types": SLIDING},
    ),
    "Qwen2, use_sliding_window with a null window, no layer_types": (
        "Qwen2Config",
        {"use_sliding_window": True, "sliding_window": None, "layer_types": None},
    ),
    "Qwen2, use_sliding_window false, every layer full": (
        "Qwen2Config",
        {"use_sliding_window": False, "sliding_window": None, "layer_types": ["full_attention"] * 2},
    ),
    "Ministral, a window wider than the run": ("MistralConfig", {"sliding_window": 100, "layer_types": SLIDING}),
}


@pytest.mark.parametrize("case", HELD)
def test_windows_transformers_builds_held(tmp_path, monkeypatch, case):
    family, fields = HELD[case]
    folder = checkpoint(tmp_path / "m", family, fields=fields, generation=GENERATION)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
