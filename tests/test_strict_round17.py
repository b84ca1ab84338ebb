"""The seventeenth round, adversarial on the runtime's inputs: a stored model's manifest whose fields are of another
type than the import writes (or name a file outside the model's folder); table YAML holding values that are no JSON
data (a date, bytes, a set, a key that is no text) or numbers and booleans spelt in YAML 1.1's other forms (octal
0204, hex, 1_0, sexagesimal 2:12, on), which a YAML 1.2 reader reads otherwise; tracked paths that are not a plain
``<folder>/<file>`` (a name too long for the file system, a control character, ``.`` or an empty segment); control
characters in a table's texts (a terminal escape, a carriage return); a re-proof whose format is 1.0 or true; the
Python API's run, warmup, warmup.launch and plan.resolve handed an empty dtype, hooks that are no functions, None or a
class that is no text; and generation_config.json special ids (pad, bos, decoder start) with which transformers'
generate fails.
Each test failed before the fix it names (an input accepted, or a traceback instead of one line and its exit code)
and passes now; the controls (what the reference accepts) pass either way, and only they run a model (in the Triton
interpreter, a one-layer model of a few tokens)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import retrack
from store_fixtures import config_dict, make_checkpoint
from test_strict_round16 import _one_line

from neurobrix import tables
from neurobrix.cli import main
from neurobrix.errors import TablesError

# -- a stored model's manifest of other types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        # a TypeError traceback: shlex.quote of the revision in the damage message, a format spec on a list in `list`
        (lambda d: d.update(revision=5), "revision 5 is neither a text nor null"),
        (lambda d: d.update(revision=["main"]), "revision ['main'] is neither a text nor null"),
        (lambda d: d.update(commit={"a": 1}), "commit {'a': 1} is neither a text nor null"),
        (lambda d: d.update(imported=5), "imported 5 is neither a text nor null"),
        # accepted: equal to the format 1, a source shown (and re-imported) as "None"
        (lambda d: d.update(format=1.0), "format 1.0 is not the integer 1"),
        (lambda d: d.update(format=True), "format True is not the integer 1"),
        (lambda d: d.update(source=None), "source None is not the text of a hub id or a folder"),
        # accepted: a size of another type read as the integer it rounds or parses to
        (lambda d: d["files"].update({"config.json": str(d["files"]["config.json"])}), "the size '"),
        (lambda d: d["files"].update({"config.json": d["files"]["config.json"] + 0.7}), ".7, not a number of bytes"),
        (lambda d: d["files"].update({"config.json": True}), "the size True, not a number of bytes"),
        # accepted: a file outside the model's folder checked (and counted) as the model's
        (lambda d: d["files"].update({"/etc/hostname": 0}), "files names '/etc/hostname', which is not a file of"),
        (lambda d: d["files"].update({"../other/config.json": 0}), "files names '../other/config.json', which is not"),
    ],
)
def test_a_manifest_field_of_another_type_is_a_damaged_model(tmp_path, monkeypatch, capsys, change, said):
    """The stored model's neurobrix-model.json with a revision of 5 (and a file missing): `list` and `run` died in a
    TypeError traceback; a revision list or a commit object killed `list`; a format of 1.0 or true, a source null, a
    size "369", 369.7 or true, a file named "/etc/hostname" (checked outside the model's folder) were taken. Now the
    model is damaged (exit 7) naming the field, `list` marks it so, and `remove` clears it."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    path = tmp_path / "home" / "models" / "tiny" / "neurobrix-model.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    data["files"].setdefault("missing.json", 3)  # a damage to report too
    path.write_text(json.dumps(data), encoding="utf-8")
    err = _one_line(capsys, ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1"], 7)
    assert "stored model tiny" in err and "neurobrix-model.json is unreadable" in err and said in err
    capsys.readouterr()
    assert main(["list"]) == 0
    assert "DAMAGED" in capsys.readouterr().out
    assert main(["list", "--json"]) == 0
    assert main(["remove", "tiny"]) == 0
    assert not path.exists()


# -- table YAML holding what JSON cannot ---------------------------------------------------------------------------

_PROOFS = "interpreter/demo.proofs.yaml"


def _replace(root, rel, old, new):
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    retrack(root)


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        # a TypeError traceback in every reader of the proofs (the dimensions joined into the message)
        ("N: [1, 4096]}", "N: [1, 4096], 7: [1, 2]}", "found the key 7, which is no text"),
        # a TypeError traceback in `tables show --json`; `tables verify` passed them
        ("  torch: 2.13.0\n", "  torch: 2.13.0\n  when: 2026-11-29\n", "found a timestamp"),
        ("  torch: 2.13.0\n", "  torch: 2.13.0\n  2026-11-29: certified\n", "found a timestamp"),
        ("{backend: interpreter,", "{backend: interpreter, serial: !!binary AAAA,", "found a binary"),
        ("{backend: interpreter,", "{backend: interpreter, seen: !!set {a},", "found a set"),
        # passed everything: a provenance keyed by an integer, true or null
        ("{backend: interpreter,", "{backend: interpreter, 5: 6,", "found the key 5, which is no text"),
        ("  torch: 2.13.0\n", "  torch: 2.13.0\n  ~: x\n", "found the key None, which is no text"),
        ("  torch: 2.13.0\n", "  torch: 2.13.0\n  on: x\n", "found the boolean 'on'"),
    ],
)
def test_a_value_json_cannot_hold_in_a_table_file_is_refused(fixture_tables, monkeypatch, capsys, old, new, said):
    """Table YAML holding a key that is no text (``7: [1, 2]`` in a domain, ``5:`` in the recorded device) or a value
    JSON has not (a date, bytes, a set): a domain's made `tables verify` and `tables show` die in a TypeError
    traceback, a date, bytes or a set in the provenance made `tables show --json` die so (and passed `tables
    verify`). The table format is JSON's data written as YAML (the index is JSON): now every reader refuses such a
    file, naming the line (exit 3)."""
    _replace(fixture_tables, _PROOFS, old, new)
    for argv in (["tables", "show", "interpreter", "demo", "--json"], ["tables", "show", "interpreter", "demo"]):
        err = _one_line(capsys, argv, 3)
        assert "demo.proofs.yaml:" in err and "not valid YAML: " in err and said in err
    capsys.readouterr()
    assert main(["tables", "verify"]) == 3
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "yaml11"),
    [("0204", 132), ("0x84", 132), ("0b10000100", 132), ("1_32", 132), ("2:12", 132), ("+0204", 132)],
)
def test_a_number_spelt_as_yaml_11_only_reads_it_is_refused(fixture_tables, value, yaml11):
    """A class.yaml matching ``multiprocessor_count: 0204``: PyYAML (YAML 1.1) reads 132, an H200's, where a YAML 1.2
    reader (and a reviewer) reads 204; so with hex, binary, ``1_32`` and the sexagesimal ``2:12``. The class
    matched a GPU of 132 SMs. Now a table's number must be spelt as JSON spells it (exit 3, naming the line)."""
    assert yaml.safe_load(f"n: {value}") == {"n": yaml11}
    path = fixture_tables / "fake-gpu" / "class.yaml"
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "multiprocessor_count:" in x)
    _replace(fixture_tables, "fake-gpu/class.yaml", line, line.split(":")[0] + f": {value}")
    with pytest.raises(
        TablesError, match=rf"class.yaml:\d+:\d+: not valid YAML: found the integer '{re.escape(value)}' spelt as"
    ):
        tables.load()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("worst_error_ratio: 0.25", "worst_error_ratio: 0_0.25"),  # 0.25 to PyYAML, text to YAML 1.2
        ("time_best_us: 1.0\n", "time_best_us: 0:1.0\n"),  # sexagesimal: 1.0
        ("examples: 10\n", "examples: 0xa\n"),
    ],
)
def test_a_proofs_number_spelt_as_yaml_11_only_reads_it_is_refused(fixture_tables, old, new):
    _replace(fixture_tables, _PROOFS, old, new)
    problems = [p.message for p in tables.verify_all(tables.load())]
    assert len(problems) == 1 and "spelt as YAML 1.1 only reads it" in problems[0]


def test_the_json_spellings_still_load(fixture_tables):
    """Controls: what safe_dump writes (certify's writer) reads as before: 1.0e-05, .inf (refused later, as a
    proof's), true, null, quoted dates."""
    _replace(fixture_tables, _PROOFS, "worst_error_ratio: 0.25", "worst_error_ratio: 2.5e-01")
    _replace(
        fixture_tables,
        _PROOFS,
        "  torch: 2.13.0\n",
        "  torch: 2.13.0\n  extra: [1.0e-05, -3, +4, True, null, '2026-11-29']\n",
    )
    assert not tables.verify_all(tables.load())
    assert tables.read_yaml(fixture_tables / _PROOFS, "x")["provenance"]["extra"] == [
        1e-05,
        -3,
        4,
        True,
        None,
        "2026-11-29",
    ]


# -- tracked paths that are not plain ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("interpreter/" + "x" * 300 + ".json", "a name longer than 255 bytes"),  # an OSError: exit 1, not 3
        ("interpreter/demo.json\n", "a control character"),  # the message naming it split over two lines
        ("interpreter/./demo.json", "an empty or '.' segment"),  # hashed as demo.json, then "untracked" besides
        ("interpreter//demo.json", "an empty or '.' segment"),
        ("./interpreter/demo.json", "an empty or '.' segment"),
        ("interpreter/demo.json/", "an empty or '.' segment"),
    ],
)
def test_a_tracked_path_that_is_not_plain_is_refused_by_name(fixture_tables, monkeypatch, capsys, path, said):
    """TRACKED.yaml listing a file under a name longer than the file system keeps: every command reading the tables
    ended in "File name too long" (exit 1, an error of the machine); a NUL, a line feed, a "." or an empty segment
    gave the folder check's messages about other files (the path checked not the one listed). Now the list itself
    is refused naming the entry (exit 3)."""
    tracked = fixture_tables / tables.TRACKED_NAME
    data = yaml.safe_load(tracked.read_text(encoding="utf-8"))
    entry = next(f for f in data["files"] if f["path"] == "interpreter/demo.json")
    entry.update(path=path, wheel_path=f"{tables.WHEEL_DIR}/{path}")
    tracked.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    err = _one_line(capsys, ["tables", "list"], 3)
    assert "TRACKED.yaml: field 'files[" in err and f"is not a plain relative path: {said}" in err


# -- control characters in the tables' texts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        # `tables list` and doctor print the description: the screen cleared, the line rewritten
        ("interpreter/class.yaml", "description: ", 'description: "\\e[2J\\e[Hall tables verified" #'),
        ("interpreter/class.yaml", "description: ", 'description: "x\\rtables verified" #'),
        ("interpreter/class.yaml", "description: ", 'description: "x\\x9b2J" #'),  # C1's CSI
        (_PROOFS, "command: written", 'command: "\\e]0;title\\a" #'),
        ("TRACKED.yaml", "path: interpreter/demo.json", 'path: "interpreter/demo\\0.json"'),
        ("interpreter/demo.json", '"torch": "', '"torch": "\\u001b[2J'),  # JSON: escaped, or raw C1
        ("interpreter/demo.json", '"torch": "', '"torch": "\u009b'),
    ],
)
def test_a_control_character_in_a_table_text_is_refused(fixture_tables, capsys, rel, old, new):
    """A class.yaml description of "\\e[2J\\e[Hall tables verified" or "x\\rtables verified" (YAML's escapes): `tables
    list` and `doctor` printed it raw, clearing the screen or rewriting the line above; a proof's command so in
    `tables show`, an index's stack in the exit-6 message. Now a table's text holding a control character other than
    tab and line feed is refused naming the line (exit 3)."""
    path = fixture_tables / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    if rel != "TRACKED.yaml":
        retrack(fixture_tables)
    try:
        loaded = tables.load()
        problems = [p.message for p in tables.verify_all(loaded)]
    except TablesError as exc:
        problems = [str(exc)]
    assert len(problems) == 1 and "found the control character" in problems[0], problems
    assert f"{rel.split('/')[-1]}:" in problems[0]


# -- the Python API's run and warmup: an empty dtype, hooks that are no functions ------------------------------------


def _stored_tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0


@pytest.mark.parametrize("api", ["run", "warmup"])
def test_an_empty_dtype_is_refused_not_the_default(tmp_path, monkeypatch, api):
    """``RunOptions(dtype="")`` (a program passing on an unset setting): run and warmup took "" as no dtype and used
    the default, where `--dtype ""` is refused by the CLI. Now it is refused as any other unknown dtype (exit 2)."""
    from neurobrix.errors import UsageError
    from neurobrix.run import RunOptions, run
    from neurobrix.warmup import WarmupOptions, warmup

    _stored_tiny(tmp_path, monkeypatch)
    with pytest.raises(UsageError, match=r"--dtype must be one of .*, got ''") as refused:
        if api == "run":
            run(RunOptions("tiny", "hello", max_tokens=1, dtype=""), write=lambda text: None, notice=lambda line: None)
        else:
            warmup(WarmupOptions("tiny", max_tokens=1, max_prompt=1, dtype=""))
    assert refused.value.exit_code == 2


@pytest.mark.parametrize(
    ("api", "hooks", "said"),
    [
        ("run", {"write": 5}, "run's write must be a function or None, got 5"),  # TypeError once the model ran
        ("run", {"notice": "log"}, "run's notice must be a function or None, got 'log'"),
        ("run", {"write": ""}, "run's write must be a function or None, got ''"),  # stdout used in silence
        ("warmup", {"progress": 1}, "warmup's progress must be a function or None, got 1"),
        ("warmup", {"progress": 0}, "warmup's progress must be a function or None, got 0"),  # never called
        ("warmup", {"notice": 5}, "warmup's notice must be a function or None, got 5"),
    ],
)
def test_a_hook_that_is_no_function_is_refused_before_the_model_runs(tmp_path, monkeypatch, api, hooks, said):
    """run's write and notice, warmup's progress and notice: a hook that is no function was called only once the
    model ran (a TypeError traceback after the weights were loaded) or, empty, was taken as none. Now each is a
    UsageError naming it, before the store is read."""
    from neurobrix.errors import UsageError
    from neurobrix.run import RunOptions, run
    from neurobrix.warmup import WarmupOptions, warmup

    _stored_tiny(tmp_path, monkeypatch)
    with pytest.raises(UsageError, match=re.escape(said)):
        if api == "run":
            run(
                RunOptions("tiny", "hello", max_tokens=1),
                **{"write": lambda t: None, "notice": lambda t: None, **hooks},
            )
        else:
            warmup(WarmupOptions("tiny", max_tokens=1, max_prompt=1), **hooks)


def test_warmup_refuses_options_of_another_class():
    from neurobrix.errors import UsageError
    from neurobrix.run import RunOptions
    from neurobrix.warmup import warmup

    with pytest.raises(UsageError, match="warmup takes a neurobrix.warmup.WarmupOptions, got RunOptions"):
        warmup(RunOptions("tiny", "hello"))


# -- a re-proof record of other types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(format=1.0),
        lambda r: r.update(format=True),
    ],
)
def test_a_reproof_record_of_other_types_admits_nothing(fixture_tables, tmp_path, monkeypatch, change):
    """A local re-proof (what admits a class on another torch and Triton) whose format is 1.0 or true: equal to the
    format 1, it admitted the stack. Now the record must be written as the check writes it, or it admits nothing."""
    from neurobrix import stack

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    running = stack.Stack("2.99.0", "9.9.0")
    stack.write_reproof("interpreter", tables.load(), running, {"passed": True}, "test", "test")
    assert stack.reproof_problem("interpreter", tables.load(), running) is None
    path = stack.reproof_path("interpreter")
    record = json.loads(path.read_text(encoding="utf-8"))
    change(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    problem = stack.reproof_problem("interpreter", tables.load(), running)
    assert problem is not None and "is unreadable" in problem


# -- generation_config.json's other special token ids --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "taken"),
    [
        ("pad_token_id", "NaN", True),  # json reads NaN; torch.tensor(nan, dtype=long) fails in generate
        ("pad_token_id", "1e400", True),
        ("pad_token_id", '"1"', True),
        ("pad_token_id", "[1]", True),  # GenerationConfig.validate: [1] < 0
        ("bos_token_id", '"1"', True),
        ("bos_token_id", "NaN", True),
        ("decoder_start_token_id", "Infinity", True),
        ("pad_token_id", "-1", False),  # transformers generates (a warning): still runs
        ("bos_token_id", "[1]", False),
    ],
)
def test_run_refuses_special_ids_transformers_generate_fails_on(tmp_path, monkeypatch, capsys, name, value, taken):
    """generation_config.json giving pad_token_id NaN, 1e400, "1" or [1], bos_token_id "1" or NaN: transformers'
    generate makes an int64 tensor of each (and compares the pad id with 0) and fails, generating nothing; the engine,
    which uses none of them at batch 1, ran. Now run refuses the file naming the field (exit 2); what transformers
    generates with (-1, a bos list) still runs."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "ids", config=config_dict(), use_transformers=False)
    (folder / "generation_config.json").write_text(f'{{"eos_token_id": 2, "{name}": {value}}}', encoding="utf-8")
    assert main(["import", str(folder)]) == 0
    argv = ["run", "--model", "ids", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"]
    if not taken:
        assert main(argv) == 0
        return
    err = _one_line(capsys, argv, 2)
    # refused naming the file and the field (round 13 of text parity refuses some of these forms first, in its words)
    assert f"generation_config.json: {name} " in err


# -- the Python API's plan.resolve ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((None, "interpreter"), "resolve's tables must be a neurobrix.tables.Tables"),  # AttributeError
        (("tables", ["interpreter"]), "resolve's class_id must be a string"),  # TypeError: unhashable type
        (("tables", "interpreter", 5), "resolve's certify_hint must be a string"),  # added to the certify command
    ],
)
def test_resolve_refuses_arguments_of_another_type(args, said):
    """``neurobrix.plan.resolve`` (README: a program may plan for any class) checked its calls but not the rest:
    tables=None died in an AttributeError, a class given as a list in a TypeError. Now each is a UsageError."""
    from neurobrix import plan
    from neurobrix.errors import UsageError

    loaded = tables.load()
    args = tuple(loaded if a == "tables" else a for a in args)
    with pytest.raises(UsageError, match=re.escape(said)):
        plan.resolve([("rms_norm", "fp32", (1, 4096))], *args)


# -- the Python API's warmup.launch --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"dtype": "bogus"}, "launch's dtype must be one of"),  # KeyError 'bogus'
        ({"progress": 5}, "launch's progress must be a function or None, got 5"),  # TypeError after the first pass
        ({"cfg": None}, "launch takes a neurobrix.config.ModelConfig and a neurobrix.warmup.WarmupPlan"),
        ({"plan": None}, "launch takes a neurobrix.config.ModelConfig and a neurobrix.warmup.WarmupPlan"),
        ({"device": "nowhere"}, "launch's device must be a torch.device or its name"),
    ],
)
def test_launch_refuses_arguments_of_another_type(tmp_path, monkeypatch, change, said):
    """``neurobrix.warmup.launch`` (README: it launches a plan's kernels): a dtype name it does not know died in a
    KeyError, a progress of 5 in a TypeError after the first pass, None for the config or the plan in an
    AttributeError, the device "cpu" (a name torch takes) in an AttributeError. Now each is refused by name, and a
    device name is taken as torch takes it."""
    import torch

    from neurobrix import store, warmup
    from neurobrix.errors import UsageError

    _stored_tiny(tmp_path, monkeypatch)
    cfg = store.resolve("tiny").config()
    plan = warmup.plan_warmup(cfg, tables.load(), "interpreter", "fp32", max_prompt=1, max_new=1)
    args = {"cfg": cfg, "plan": plan, "dtype": "fp32", "device": torch.device("cpu"), "progress": None, **change}
    with pytest.raises(UsageError, match=re.escape(said)):
        warmup.launch(**args)
    assert warmup.launch(cfg, plan, "fp32", "cpu") == plan.passes
