"""The sixteenth round, adversarial on the runtime's inputs: table YAML that gives a value by alias, proofs recorded on
another class's device, integers written as floats in the table files, safetensors headers whose data offsets are no
integers, NEUROBRIX_* variables set to nothing, arguments of another type handed to the Python API's generate, and
JSON nested deeper than Python's parser goes (checkpoint files, headers, a manifest, a re-proof record).
Each test failed before the fix it names (an input accepted, or a traceback instead of one line and its exit code)
and passes now. No kernel is launched."""

from __future__ import annotations

import json
import struct

import pytest
import yaml
from conftest import retrack
from kernel_tables import write_gpu_class, write_tables
from store_fixtures import config_dict, make_checkpoint

from neurobrix import tables
from neurobrix.cli import main
from neurobrix.errors import TablesError


def _edit_yaml(path, change):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _one_line(capsys, argv, code):
    """``neurobrix argv`` ends with ``code`` and one line on stderr, which it returns."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == code, err
    assert len(err.strip().splitlines()) == 1, err
    return err


# -- YAML aliases in the table files ------------------------------------------------------------------------------


def test_a_recursive_alias_in_proofs_is_refused_not_a_recursion_error(tmp_path, monkeypatch, capsys):
    """A proofs record whose provenance device holds itself (``&d {self: *d}``): the safe loader builds the recursive
    dict, the schema (``device`` is any object) and ``tables verify`` passed it, and ``tables show CLASS KERNEL --json``
    died in a RecursionError traceback. Now every reader of the tables refuses the alias (exit 3), naming the line."""
    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / "rms_norm.proofs.yaml"
    text = path.read_text(encoding="utf-8")
    assert "\n  device:\n" in text
    path.write_text(text.replace("\n  device:\n", "\n  device: &d\n    self: *d\n", 1), encoding="utf-8")
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    err = _one_line(capsys, ["tables", "show", "interpreter", "rms_norm", "--json"], 3)
    assert "rms_norm.proofs.yaml:" in err and "alias" in err
    capsys.readouterr()
    assert main(["tables", "verify"]) == 3
    assert "alias" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        # a value written once and given again: a reader sees "*d", the engine the value far above
        ("class.yaml", lambda t: t.replace("description: ", "note: &d x\ndescription: *d\n#", 1)),
        # a billion laughs: each level ten times the one before; a copy of the record (tables show --json) never ends
        (
            "rms_norm.proofs.yaml",
            lambda t: t.replace(
                "\n  device:\n",
                "\n  laughs: "
                + "".join(f"\n    l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'x'] * 10)}]" for i in range(9))
                + "\n  device:\n",
                1,
            ),
        ),
    ],
)
def test_an_alias_in_a_table_file_is_refused(tmp_path, name, edit):
    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / name
    before = path.read_text(encoding="utf-8")
    path.write_text(edit(before), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != before
    retrack(root)
    with pytest.raises(TablesError, match=rf"{name}:\d+:\d+: not valid YAML for a table: .*alias") as refused:
        loaded = tables.load(root)
        loaded.proofs("interpreter", "rms_norm")
    assert refused.value.exit_code == 3


# -- proofs bound to another class's device -----------------------------------------------------------------------


def _gpu_proofs(root, class_id="fake-hopper"):
    """A CUDA class's tables whose proofs record a device of the class (write_gpu_class copies the interpreter's)."""
    write_gpu_class(write_tables(root))
    device = {
        "backend": "cuda",
        "vendor": "nvidia",
        "name": "NVIDIA Fake Hopper",
        "compute_capability": [9, 0],
        "multiprocessor_count": 132,
        "total_memory_gib": 139.8,
    }
    for path in (root / class_id).glob("*.proofs.yaml"):
        _edit_yaml(path, lambda d: d["provenance"].update(device=dict(device)))
    retrack(root)
    return root


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"multiprocessor_count": 114}, "multiprocessor_count 114, the class's 132"),
        ({"name": "NVIDIA A100-SXM4-80GB", "compute_capability": [8, 0]}, "name 'NVIDIA A100-SXM4-80GB'"),
        ({"compute_capability": [8, 9]}, "compute_capability (8, 9), the class's (9, 0)"),
        ({"backend": "interpreter", "vendor": "triton", "name": "Triton interpreter (CPU)"}, "backend 'interpreter'"),
    ],
)
def test_proofs_recorded_on_another_gpu_are_refused(tmp_path, monkeypatch, capsys, change, said):
    """A proofs record certified on another GPU (an A100's, a smaller H200's, the interpreter's) copied into a class's
    folder with its class renamed: ``tables verify`` and ``tables show`` took its proofs as the class's (the device its
    provenance records was never read). Now the device must be one the class.yaml matches (exit 3, naming it)."""
    root = _gpu_proofs(tmp_path / "t")
    assert not tables.verify_all(tables.load(root))  # the class's own device: accepted
    _edit_yaml(root / "fake-hopper" / "linear.proofs.yaml", lambda d: d["provenance"]["device"].update(change))
    retrack(root)
    tables.clear_cache()
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    err = _one_line(capsys, ["tables", "show", "fake-hopper", "linear"], 3)
    assert "linear.proofs.yaml: field 'provenance.device': records a device that is not of class fake-hopper" in err
    assert said in err
    problems = tables.verify_all(tables.load(root))
    assert [p.path for p in problems] == ["fake-hopper/linear"]


def test_interpreter_proofs_recorded_on_a_gpu_are_refused(tmp_path):
    root = write_tables(tmp_path / "t")
    _edit_yaml(root / "interpreter" / "rotary.proofs.yaml", lambda d: d["provenance"]["device"].update(backend="cuda"))
    retrack(root)
    with pytest.raises(TablesError, match=r"records a device that is not of class interpreter \(backend 'cuda'"):
        tables.load(root).proofs("interpreter", "rotary")


# -- integers written as floats -----------------------------------------------------------------------------------


def _fake_gpu_class(root, **match):
    _edit_yaml(root / "fake-gpu" / "class.yaml", lambda d: d["match"].update(match))


def _demo_proofs(change):
    return lambda root: _edit_yaml(root / "interpreter" / "demo.proofs.yaml", change)


@pytest.mark.parametrize(
    ("edit", "where", "said"),
    [
        (lambda r: _fake_gpu_class(r, multiprocessor_count=132.0), "match.multiprocessor_count", "132.0"),
        (lambda r: _fake_gpu_class(r, compute_capability=[9.0, 0]), "match.compute_capability[0]", "9.0"),
        (lambda r: _edit_yaml(r / "fake-gpu" / "class.yaml", lambda d: d.update(format=1.0)), "format", "1.0"),
        (_demo_proofs(lambda d: d["entries"][0]["proof"].update(examples=10.0)), "entries[0].proof.examples", "10.0"),
        (_demo_proofs(lambda d: d["entries"][1]["domain"].update(M=[17, 64.0])), "entries[1].domain.M[1]", "64.0"),
        (
            _demo_proofs(lambda d: d["entries"][0]["proof"].update(candidates_tried=2.0)),
            "entries[0].proof.candidates_tried",
            "2.0",
        ),
    ],
)
def test_an_integer_written_as_a_float_is_refused(fixture_tables, edit, where, said):
    """JSON Schema's "integer" admits 132.0 (so does fastjsonschema): a class matching ``multiprocessor_count: 132.0``,
    proofs of "10.0 examples" or a domain ``M: [17, 64.0]`` (equal to its index's [17, 64]) passed ``tables verify``
    and showed as such. Now each is refused naming the field (exit 3)."""
    edit(fixture_tables)
    retrack(fixture_tables)
    try:
        problems = [p.message for p in tables.verify_all(tables.load())]
    except TablesError as exc:  # a class.yaml: refused as the tables load
        problems = [str(exc)]
    assert len(problems) == 1 and f"field '{where}': must be an integer, got {said}" in problems[0]


def test_an_index_format_written_as_a_float_is_refused(fixture_tables):
    """The settings index run loads: "format": 4.0 equals the schema's const 4 and loaded."""
    path = fixture_tables / "interpreter" / "demo.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "format": 4.0}), encoding="utf-8")
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"demo.json: field 'format': must be an integer, got 4.0"):
        tables.load().index("interpreter", "demo")


def test_a_tracked_size_written_as_a_float_is_refused(fixture_tables):
    path = fixture_tables / tables.TRACKED_NAME
    _edit_yaml(path, lambda d: d["files"][0].update(size=float(d["files"][0]["size"])))
    with pytest.raises(TablesError, match=r"TRACKED.yaml: field 'files\[0\].size': must be an integer, got \d+\.0"):
        tables.load()


# -- safetensors headers whose offsets are no integers ------------------------------------------------------------


@pytest.mark.parametrize("offset", [lambda end: str(end), lambda end: None])
def test_import_refuses_data_offsets_that_are_no_integers_in_one_line(tmp_path, monkeypatch, capsys, offset):
    """A header giving a tensor ``"data_offsets": [0, "2048"]`` (or null): import added the ends up to compare them with
    the file's size and died in a TypeError traceback. Now it is refused naming the tensor and the offsets (exit 2),
    and nothing is stored."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "bad", config=config_dict(), use_transformers=False)
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8 : 8 + length]), raw[8 + length :]
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"][1] = offset(header[name]["data_offsets"][1])
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    err = _one_line(capsys, ["import", str(folder)], 2)
    assert f"model.safetensors: the safetensors header gives tensor {name} the data offsets" in err
    assert not (tmp_path / "home" / "models" / "bad").exists()


# -- NEUROBRIX_* set to nothing -----------------------------------------------------------------------------------


def test_an_empty_neurobrix_home_is_refused_not_the_default(tmp_path, monkeypatch, capsys):
    """``NEUROBRIX_HOME=$UNSET neurobrix import ...`` stored the model in the default ~/.cache/neurobrix, which the
    user had meant to avoid, and every later command with the variable set found another store. Now an empty value is
    refused (exit 2) by every command that reaches the store, and doctor names it."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # the default home, should anything reach it
    monkeypatch.setenv("NEUROBRIX_HOME", "")
    err = _one_line(capsys, ["list"], 2)
    assert "NEUROBRIX_HOME is set but empty" in err
    assert not (tmp_path / "user").exists()
    capsys.readouterr()
    assert main(["doctor"]) == 1
    assert "NEUROBRIX_HOME is set but empty" in capsys.readouterr().out


def test_an_empty_neurobrix_tables_is_refused_not_the_packaged_tables(monkeypatch, capsys):
    """``NEUROBRIX_TABLES=$UNSET`` read the packaged tables in silence, where the user meant a folder of their own."""
    monkeypatch.setenv(tables.ENV_VAR, "")
    err = _one_line(capsys, ["tables", "list"], 3)
    assert "NEUROBRIX_TABLES is set but empty" in err


# -- the Python API's generate: arguments used only after the prefill ----------------------------------------------


def _tiny_model():
    """A one-layer model on zero weights and PyTorch's kernels, on the CPU (as test_generation_planted builds it)."""
    import torch
    from test_runtime_planted import TINY

    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH
    from neurobrix.warmup import scratch_weights

    return Transformer(TINY, scratch_weights(TINY, torch.float32, torch.device("cpu")), TORCH, batch=1, capacity=8)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"eos": 2}, "eos must be a set of token ids"),  # TypeError: argument of type 'int' is not iterable
        ({"eos": None}, "eos must be a set of token ids"),
        ({"eos": {"2"}}, "eos must be a set of token ids"),  # never equal to a token: the generation never stopped
        ({"eos": {True}}, "eos must be a set of token ids"),  # True == 1: token 1 stopped it
        ({"constraints": {"min_length": 3}}, "constraints must be a neurobrix.generate.Constraints"),  # AttributeError
        ({"on_token": 5}, "on_token must be a function"),  # TypeError: 'int' object is not callable
        ({"stop": "</s>"}, "stop must be a function"),
        ({"use_graph": "no"}, "use_graph must be true or false"),
    ],
)
def test_generate_refuses_arguments_of_another_type_before_the_model_runs(given, said):
    """``neurobrix.generate.generate`` checked its prompt, sampling and token count, but used its eos ids, constraints
    and hooks only after the prefill: an int eos or a dict of constraints ended in a TypeError or AttributeError
    traceback, an eos of strings (or True) ran on past the end of text. Now each is a UsageError naming it."""
    from neurobrix.errors import UsageError
    from neurobrix.generate import Sampling, generate

    args = {"eos": {2}, **given}
    eos = args.pop("eos")
    with pytest.raises(UsageError, match=said):
        generate(_tiny_model(), [1, 2], 3, Sampling(), eos, **args)


# -- JSON nested deeper than Python's parser goes ------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000  # valid JSON; json.loads ends in a RecursionError, transformers' read too


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json", "generation_config.json"])
def test_import_refuses_a_json_file_nested_too_deep_in_one_line(tmp_path, monkeypatch, capsys, name):
    """A checkpoint file holding arrays nested 100,000 deep: the parsers' errors were caught, not the RecursionError
    Python's json raises, and import died in its traceback. Now it is refused naming the file (exit 2)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "deep", config=config_dict(), use_transformers=False)
    path = folder / name
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    path.write_text(json.dumps(data)[:-1] + (", " if data else "") + f'"extra": {DEEP}}}', encoding="utf-8")
    err = _one_line(capsys, ["import", str(folder)], 2)
    assert f"{name}: " in err and "too deep" in err
    assert not (tmp_path / "home" / "models" / "deep").exists()


def test_import_refuses_a_safetensors_header_nested_too_deep_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "deep", config=config_dict(), use_transformers=False)
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = f'{{"x": {DEEP}}}'.encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + raw[8 + length :])
    err = _one_line(capsys, ["import", str(folder)], 2)
    assert "model.safetensors: not a safetensors file (unreadable header)" in err


def test_a_manifest_nested_too_deep_is_a_damaged_model_not_a_traceback(tmp_path, monkeypatch, capsys):
    """The stored model's manifest rewritten so: `run` died in a RecursionError traceback; now the model is damaged
    (exit 7) and `remove` clears it."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "deep", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    (tmp_path / "home" / "models" / "deep" / store.MANIFEST).write_text(f'{{"x": {DEEP}}}', encoding="utf-8")
    err = _one_line(capsys, ["run", "--model", "deep", "--prompt", "hello", "--no-chat", "--max-tokens", "1"], 7)
    assert "stored model deep" in err and "is damaged" in err
    assert main(["remove", "deep"]) == 0


def test_a_reproof_record_nested_too_deep_admits_nothing_and_is_no_traceback(tmp_path, monkeypatch, capsys):
    """Tables certified on another torch, so that the local re-proof is read: a record nested too deep made doctor
    (and run) die in a RecursionError traceback. Now it is an unreadable re-proof, which admits nothing."""
    root = write_tables(tmp_path / "t", torch="2.12.0+cpu")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "reproofs").mkdir(parents=True)
    (tmp_path / "home" / "reproofs" / "interpreter.json").write_text(DEEP, encoding="utf-8")
    capsys.readouterr()
    assert main(["doctor"]) == 1
    assert "reproofs/interpreter.json is unreadable" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("field", "value", "failed"),
    [
        ("min_length", "3", "TypeError"),
        ("no_repeat_ngram_size", 2.5, "TypeError"),
        ("suppress_tokens", (10**6,), "IndexError"),
        ("suppress_tokens", 5, "TypeError"),
        ("bad_words_ids", ((1.5,),), "IndexError"),
        ("bad_words_ids", ((),), "IndexError"),
        ("forced_eos_token_id", (10**6,), "IndexError"),
        ("encoder_repetition_penalty", 0.0, "ZeroDivisionError"),
        ("sequence_bias", (((1,), "x"),), "ValueError"),
        ("exponential_decay_length_penalty", (1,), "IndexError"),
        ("no_repeat_ngram_size", -1, "nothing: a negative size ran as none"),
        ("forced_bos_token_id", 10**6, "nothing: an id past the vocabulary forced nothing"),
    ],
)
def test_generate_refuses_constraints_it_cannot_apply_before_the_model_runs(field, value, failed):
    """Constraints a program builds itself (``Tokenizer.constraints`` builds them valid): each value here reached the
    processors after the prefill and failed there (``failed``), or ran as if unset. Now generate refuses it naming
    the field (UsageError), before the model runs."""
    from neurobrix.errors import UsageError
    from neurobrix.generate import Constraints, Sampling, generate

    with pytest.raises(UsageError, match=rf"Constraints\.{field} must be "):
        generate(_tiny_model(), [1, 2], 3, Sampling(), {2}, constraints=Constraints(**{field: value}))


# -- Triton's cache folder named by nothing, or relative ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("TRITON_CACHE_DIR", "", "TRITON_CACHE_DIR is set but empty: Triton's cache of compiled kernels would be no"),
        ("TRITON_CACHE_DIR", "cache", "TRITON_CACHE_DIR=cache is a relative path"),
        ("TRITON_CACHE_DIR", "~/cache", "TRITON_CACHE_DIR=~/cache is a relative path"),  # Triton expands no ~
        ("TRITON_HOME", "", "TRITON_HOME is set but empty"),  # the cache in ./.triton/cache
        ("TRITON_HOME", "build", "TRITON_HOME=build is a relative path"),
    ],
)
def test_a_gpu_class_refuses_a_triton_cache_that_is_no_folder_or_relative(tmp_path, monkeypatch, name, value, said):
    """On a GPU class (a made-up one certified on this machine's stack, so that nothing else refuses it): an empty
    TRITON_CACHE_DIR passed every check and Triton's first compile raised "Could not create or locate cache dir" (a
    RuntimeError, after the weights were loaded); a relative one, or TRITON_HOME, put the binaries `warmup` compiled
    where a `run` from another folder does not look. Now run, warmup and the Python API refuse it (exit 2; doctor
    names it on such a class)."""
    from neurobrix import stack
    from neurobrix.errors import UsageError

    loaded = tables.load(write_gpu_class(write_tables(tmp_path / "t")))
    for other in stack.CACHE_ENV:
        monkeypatch.delenv(other, raising=False)
    stack.require_certified_stack("fake-hopper", loaded)  # unset: Triton's default, accepted
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=said) as refused:
        stack.require_certified_stack("fake-hopper", loaded)
    assert refused.value.exit_code == 2
    stack.require_certified_stack("interpreter", loaded)  # the interpreter compiles nothing: no cache to find
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # an absolute one wins over TRITON_HOME
    if name == "TRITON_HOME":
        stack.require_certified_stack("fake-hopper", loaded)


# -- an eos_token_id that is no token id ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eos", "where"),
    [
        *((eos, "config.json") for eos in ("2", 2.0, True, [[2]], {"id": 2}, [2, None])),
        # generate makes an int64 tensor of generation_config.json's (2.0, true and [[2]] are ids there:
        # tests/test_text_round15.py); these it cannot
        *((eos, "generation_config.json") for eos in ("2", {"id": 2}, [2, None])),
    ],
)
def test_run_refuses_an_eos_token_id_that_is_no_token_id_in_one_line(tmp_path, monkeypatch, capsys, eos, where):
    """An eos_token_id of "2", an object or a list holding null (config.json: 2.0, true and [[2]] too, which its
    config class refuses): the engine kept the ids that were ints and dropped the rest without a word, so the
    generation ran on past the end of text the model's settings named (transformers' generate makes a tensor of the
    value and fails). Now run refuses it, naming the file and the value (exit 2)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    config = config_dict(**({"eos_token_id": eos} if where == "config.json" else {}))
    folder = make_checkpoint(tmp_path / "eos", config=config, use_transformers=False)
    generation = folder / "generation_config.json"
    if where == "generation_config.json":
        generation.write_text(json.dumps({"eos_token_id": eos}), encoding="utf-8")
    else:
        generation.unlink(missing_ok=True)  # config.json's settings are the generation's
    if where == "config.json":  # refused by import since transformers' config class types it (below)
        err = _one_line(capsys, ["import", str(folder)], 2)
        assert "config.json: field 'eos_token_id' is " in err
        return
    assert main(["import", str(folder)]) == 0
    err = _one_line(capsys, ["run", "--model", "eos", "--prompt", "hello", "--no-chat", "--max-tokens", "2"], 2)
    assert f"{where}: eos_token_id must be a token id or a list of ids, got " in err


# -- config.json fields transformers' config classes type ----------------------------------------------------------


@pytest.mark.parametrize(
    ("model_type", "field", "value", "taken"),
    [
        ("llama", "use_cache", "no", False),
        ("llama", "use_cache", 1, True),
        ("llama", "bos_token_id", [1], None),
        ("llama", "bos_token_id", 1.0, 1),
        ("llama", "eos_token_id", [1, "2"], [1, 2]),
        ("llama", "attention_bias", "false", False),
        ("llama", "mlp_bias", 0, False),
        ("llama", "attention_dropout", "0", 0),
        ("llama", "pretraining_tp", 1.0, 1),
        ("llama", "initializer_range", "0.02", 0.02),
        ("mistral", "attention_dropout", True, 0.1),
        ("qwen2", "use_sliding_window", "false", False),
        ("qwen2", "max_window_layers", 2.0, 2),
    ],
)
def test_import_refuses_a_field_of_a_type_transformers_config_class_refuses(
    tmp_path, monkeypatch, capsys, model_type, field, value, taken
):
    """Fields the engine does not read (or reads without their type) but transformers 5's config class types, and
    validates when it builds the config: "use_cache": "no", "bos_token_id": 1.0, "attention_bias": "false"... were
    imported and run, where transformers builds no model from the file. Now import refuses each naming the field
    (exit 2), as a null there was (round 12); the value transformers takes (``taken``) still imports."""
    from neurobrix.config import ModelConfig

    ModelConfig.from_hf(config_dict(model_type, **{field: taken}), "config.json")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    config = config_dict(model_type, **{field: value})
    folder = make_checkpoint(tmp_path / "typed", config=config, use_transformers=False)
    err = _one_line(capsys, ["import", str(folder)], 2)
    assert f"config.json: field '{field}' is {value!r}, which transformers' " in err
    assert not (tmp_path / "home" / "models" / "typed").exists()
