"""The twenty-third round, adversarial on the strict runtime's inputs: numbers no float holds. JSON and YAML read an
integer of any length, 1 followed by 400 zeros included, and Python reads one of more than 4,300 digits not at all; a
checkpoint's JSON files, a proof's timings and the Python API's numbers holding one ended in a traceback (an
OverflowError where it met a float, a ValueError from the parser). Each test failed before the fix it names and
passes now; the controls pass either way. No kernel is launched."""

from __future__ import annotations

import json
import struct

import pytest
from conftest import retrack
from kernel_tables import write_tables
from store_fixtures import config_dict, make_checkpoint

from neurobrix import tables
from neurobrix.cli import main
from neurobrix.config import ConfigError, ModelConfig
from neurobrix.errors import UsageError
from neurobrix.generate import Constraints, Sampling

HUGE = "1" + "0" * 400  # past a float's range (about 1.8e308), within Python's 4,300 digits
LONG = "1" + "0" * 5000  # past Python's 4,300 digits: json.loads raises ValueError


def _refused(capsys, argv, code, said):
    """``neurobrix argv`` ends with ``code`` and one line on stderr holding ``said``."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == code, err
    assert len(err.strip().splitlines()) == 1 and said in err, err


# -- a checkpoint's JSON files ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "field", "number"),
    [
        ("config.json", "rms_norm_eps", HUGE),  # OverflowError in math.isfinite
        ("config.json", "rope_theta", HUGE),
        ("config.json", "rms_norm_eps", LONG),  # ValueError from json.loads
        ("generation_config.json", "max_new_tokens", HUGE),  # imported, then OverflowError in run
        ("generation_config.json", "no_repeat_ngram_size", HUGE),
        ("generation_config.json", "eos_token_id", LONG),
        ("tokenizer_config.json", "model_max_length", LONG),
    ],
    ids=["eps", "theta", "eps-5001-digits", "max_new_tokens", "no_repeat_ngram_size", "eos-5001-digits", "max_length"],
)
def test_import_refuses_an_integer_no_float_holds_in_one_line(tmp_path, monkeypatch, capsys, file, field, number):
    """Before: a traceback, at the import (config.json's eps or theta met math.isfinite; a number of 5,001 digits
    the parser) or at every run of the imported model (generation_config.json's counts, compared with a float).
    Now the import refuses the file naming it and the number (exit 2), before anything is stored."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "m", config=config_dict(), use_transformers=False)
    path = folder / file
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, field: "NUMBER"}).replace('"NUMBER"', number), encoding="utf-8")
    _refused(capsys, ["import", str(folder)], 2, f"{file} holds the integer 100000000000... ({len(number)} digits)")
    assert not (tmp_path / "home" / "models" / "m").exists()


def test_a_checkpoints_large_integers_a_float_holds_are_read_as_before(tmp_path, monkeypatch, capsys):
    """Control: tokenizer_config.json's usual model_max_length int(1e30) (31 digits), an eos id and a size as
    written are taken."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "m", config=config_dict(), use_transformers=False)
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "model_max_length": int(1e30)}), encoding="utf-8")
    assert main(["import", str(folder)]) == 0


def test_a_safetensors_header_holding_a_number_of_over_4300_digits_is_refused(tmp_path, monkeypatch, capsys):
    """A header whose JSON holds a 5,001-digit number (its length field fixed up): json.loads raised ValueError out of
    the import; now it is an unreadable header (exit 2), as one that is no JSON is."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "m", config=config_dict(), use_transformers=False)
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    header["__metadata__"] = "NUMBER"
    text = json.dumps(header).replace('"NUMBER"', LONG).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + length :])
    _refused(capsys, ["import", str(folder)], 2, "not a safetensors file (unreadable header)")


# -- the Python API -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["rms_norm_eps", "rope_theta"])
def test_model_config_refuses_an_integer_past_a_floats_range(field):
    """``ModelConfig.from_hf`` of a dict a program built: OverflowError before, a ConfigError naming the field now."""
    with pytest.raises(ConfigError, match=field):
        ModelConfig.from_hf(config_dict(**{field: int(HUGE)}), "config.json")


def test_model_config_keeps_integers_a_float_holds():
    """Control: a theta written as an integer is read as its float, as before (an integer eps transformers 5.25's strict
    config refuses, and so does the engine since text round 41: tests/test_text_round41.py)."""
    cfg = ModelConfig.from_hf(config_dict(rms_norm_eps=0.0, rope_theta=500000))
    assert (cfg.rms_norm_eps, cfg.rope_theta) == (0.0, 500000.0)


@pytest.mark.parametrize(
    "made",
    [
        lambda: Sampling(temperature=int(HUGE)).validate(),  # OverflowError in math.isfinite
        lambda: Sampling(top_p=int(HUGE)).validate(),
        lambda: Sampling(temperature=0.0, repetition_penalty=int(HUGE)).validate(),  # passed, failed in torch
        lambda: Constraints(exponential_decay_length_penalty=(int(HUGE), 1.0)).validate(32),
        lambda: Constraints(sequence_bias=(((1,), int(HUGE)),)).validate(32),
        lambda: Constraints(encoder_repetition_penalty=int(HUGE)).validate(32),
    ],
    ids=["temperature", "top_p", "repetition_penalty", "decay", "sequence_bias", "encoder_repetition_penalty"],
)
def test_generation_settings_refuse_an_integer_past_a_floats_range(made):
    with pytest.raises(UsageError):
        made()


# -- a proof's numbers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["time_best_us", "time_median_us"])
def test_a_proof_timing_no_float_holds_is_refused_naming_the_field(tmp_path, monkeypatch, capsys, field):
    """``time_median_us: 1000...0`` (401 digits; the folder re-tracked) passed the schema's "number, at least 0" and
    `tables verify` and `tables show` died in float() (OverflowError); now both refuse it naming the field (exit 3)."""
    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / "rms_norm.proofs.yaml"
    text = path.read_text(encoding="utf-8")
    assert f"{field}: 0.0" in text
    path.write_text(text.replace(f"{field}: 0.0", f"{field}: {HUGE}", 1), encoding="utf-8")
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    said = f"field 'entries[0].proof.{field}': must be a finite number, got an integer of 401 digits"
    capsys.readouterr()
    assert main(["tables", "verify"]) == 3
    assert said in capsys.readouterr().err
    _refused(capsys, ["tables", "show", "interpreter", "rms_norm"], 3, said)
