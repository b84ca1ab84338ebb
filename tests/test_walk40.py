"""Walk-through round 40: a contributor adding a kernel, `run` of a model not stored on a CPU, a reader of `--help`.

Followed CONTRIBUTING.md's "Add a kernel" (the launch lint's narrow offsets, conformance/offsets.py) on a toy kernel in
a scratch copy, README.md's `run` on the 2-core machine without a GPU for a model not in the store, and every
command's `--help` (neurobrix's, `python -m conformance`'s, `python -m gate`'s) against the README.

Found and fixed (each test below failed before its fix):
- `run --model` of a model not in the store, on a CPU with the interpreter off, said "no GPU found" (exit 5), and
  after TRITON_INTERPRET=1 that the model is not stored (`warmup` looked at the store first); an empty prompt with
  `--no-chat` and `--system` with `--no-chat` waited for the device too, and a note on unused sampling options came
  before the refusal. The order is now what was named, then the machine: the options, the folders NEUROBRIX_HOME and
  NEUROBRIX_TABLES name (run and warmup alike), the model, the prompt against its tokenizer, the device.
- Certify on a kernel the launch lint refuses screened and timed every setting, then said only "every candidate ...
  failed its proof", the lint's sentence never shown: it is refused before any work, with the lint's sentences.
- `mutants` counted a plant in such a kernel caught by the lint's complaint about the clean source (a kill rate of
  100 %): it refuses until the clean source passes.
- The lint said to name a narrow product in NARROW_OFFSETS "with its bound" without saying where a bound is computed,
  and an allowance naming a quantity ``offsets.bounds`` never computes passed certify's plan for a GPU class unchecked:
  the lint names ``conformance.offsets.bounds``, and the plan refuses such an allowance, saying where to compute it.
- An op in MODULES without its conformance record (between the guide's steps 1 and 3) made every `python -m
  conformance` command a RuntimeError's traceback; a record without its op was told to add the record it had.
- `python -m conformance --help` listed no exit code; `tables verify --help` and `tables show --help` said nothing of
  the kernel-code binding the README's rows describe.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    """The README's tiny model, written and imported once into a store of its own."""
    from neurobrix import store, tiny

    root = tmp_path_factory.mktemp("walk40")
    old = os.environ.get("NEUROBRIX_HOME")
    os.environ["NEUROBRIX_HOME"] = str(root / "home")
    try:
        tiny.make(root / "tiny-llama")
        store.import_model(str(root / "tiny-llama"), progress=False)
    finally:
        if old is None:
            os.environ.pop("NEUROBRIX_HOME")
        else:
            os.environ["NEUROBRIX_HOME"] = old
    return root


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("--model", "nope", "--prompt", "hi"), 2, "no model 'nope' in the store"),
        (("--model", "meta-llama/Llama-3.2-1B-Instruct", "--prompt", "hi"), 2, "`neurobrix import meta-llama/"),
        (("--model", "https://huggingface.co/org/x", "--prompt", "hi"), 2, "no model 'https://huggingface.co/org/x'"),
        (("--model", "{folder}", "--prompt", "hi"), 2, "is a folder that has not been imported"),
        (("--model", "tiny-llama", "--prompt", "hi", "--system", "s", "--no-chat"), 2, "drop --no-chat"),
        (("--model", "tiny-llama", "--prompt", "", "--no-chat"), 2, "the prompt is empty"),
        (("--model", "nope", "--prompt", "hi", "--top-k", "5"), 2, "no model 'nope' in the store"),
        (("--model", "tiny-llama", "--prompt", "hi"), 5, "no GPU found"),
        (("--model", "tiny-llama", "--prompt", "hi", "--seed", "1"), 5, "no GPU found"),
    ],
)
def test_run_refuses_what_the_user_named_before_what_the_machine_lacks(
    tiny_store, tmp_path, monkeypatch, capsys, args, code, says
):
    """On a CPU with the interpreter off, `run --model` of a model not in the store said "no GPU found" (exit 5), and
    after TRITON_INTERPRET=1 that the model is not stored (`warmup` said so at once): the options, the model and the
    prompt are refused before the device, which is refused last (and still, a stored model and a good prompt); a note
    on the options (a sampling option without a temperature) waits for the refusals, as every note on the run does."""
    import torch

    from neurobrix import gpu
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tiny_store / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    gpu.device_facts.cache_clear()
    monkeypatch.setattr(gpu, "device_facts", gpu.device_facts.__wrapped__)  # nothing cached from another test
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    args = tuple(str(folder) if a == "{folder}" else a for a in args)
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["run", *args])
    err = capsys.readouterr().err
    assert done.value.code == code, err
    assert "Traceback" not in err and err.startswith("neurobrix: error: ") and says in err.splitlines()[0], err
    assert "note:" not in err  # refused before any note about a run that will not happen


@pytest.mark.parametrize("command", ["run", "warmup"])
def test_a_tables_folder_the_variable_names_wrongly_comes_before_the_model(command, tmp_path, monkeypatch, capsys):
    """NEUROBRIX_TABLES naming no folder is the environment the user set, refused first as NEUROBRIX_HOME is (exit 3;
    it was found while the device's class was read): a model not stored is not named before it, by run or warmup."""
    from neurobrix import tables
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEUROBRIX_TABLES", str(tmp_path / "no such tables"))
    tables._locate.cache_clear()
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([command, "--model", "nope", *(["--prompt", "hi"] if command == "run" else [])])
    err = capsys.readouterr().err
    assert done.value.code == 3 and err.startswith("neurobrix: error: NEUROBRIX_TABLES="), err


@pytest.fixture
def narrow_kernel(monkeypatch):
    """A Triton function planted in silu_mul's module whose row index stays int32 (the toy kernel's first mistake):
    the launch lint reads it off its source, as it would a new op module's."""
    import triton
    import triton.language as tl

    from conformance import check
    from neurobrix.ops import silu_mul as module
    from neurobrix.ops._common import dependent_launch

    @triton.jit
    def narrow(x_ptr, stride, PDL: tl.constexpr):
        dependent_launch(PDL)
        row = tl.program_id(0)
        tl.store(x_ptr + row * stride, 0.0)

    narrow.fn.__module__ = module.__name__
    monkeypatch.setattr(module, "_narrow_kernel", narrow, raising=False)
    check.launch_problems.cache_clear()
    (problem,) = check.launch_problems("silu_mul")
    yield problem
    monkeypatch.undo()
    check.launch_problems.cache_clear()


def test_certify_shows_the_launch_lint_not_every_candidate_failing(narrow_kernel, tmp_path):
    """A kernel the lint refuses was certified as "every candidate for toy_mul ... failed its proof" (exit 1) after
    screening and timing every setting, the lint's sentence (what to widen, or where to name it) never shown; it is
    refused before any work now, with that sentence."""
    import shutil

    from conformance import certify

    assert "_narrow_kernel reads tl.program_id(0) into row in int32" in narrow_kernel
    shutil.copytree(REPO / "tables" / "interpreter", tmp_path / "interpreter")
    with pytest.raises(certify.LintFailed) as refused:
        certify.certify("interpreter", tmp_path, ["silu_mul"], ["fp32"], False, 1, "ci", None, "certify")
    assert refused.value.exit_code == 1 and f"silu_mul: {narrow_kernel}" in str(refused.value)
    assert "conformance.check.NARROW_IDS" in narrow_kernel  # where to name it, as the file and CONTRIBUTING say


def test_mutants_refuse_a_kernel_whose_own_source_the_lint_refuses(narrow_kernel, monkeypatch):
    """Every check of such a kernel fails, planted or not: its mutants all counted as caught (the toy kernel's plant
    was "caught" by the lint's complaint about its unwidened program id, a kill rate of 100 %)."""
    from conformance import mutants
    from neurobrix.errors import UsageError

    chosen = [m for m in mutants.MUTANTS if m.kernel == "silu_mul"][:1]
    caught = mutants.Outcome(caught=True, how="error", entry="", id="x", kernel="silu_mul", bug="", seconds=0.0)
    monkeypatch.setattr(mutants, "run_one", lambda *args, **kwargs: caught)
    with pytest.raises(UsageError, match="the launch lint refuses the unpatched source of silu_mul") as refused:
        mutants.run(chosen)
    assert narrow_kernel in str(refused.value)


def test_an_allowance_whose_bound_nothing_computes_is_refused_at_certifys_plan(monkeypatch):
    """The lint said to name a narrow product in NARROW_OFFSETS "with its bound"; an allowance naming a quantity that
    offsets.bounds does not compute (a new kernel's, before its computation is added there) passed certify's plan for
    a GPU class, its range never checked. It is refused there, saying where the quantity is computed."""
    from conformance import certify, offsets
    from neurobrix.errors import UsageError

    source = "@triton.jit\ndef k(x_ptr, n, stride):\n    i = tl.load(x_ptr)\n    tl.store(x_ptr + i * stride, 0)\n"
    (said,) = offsets.narrow_offsets("toy", source)
    assert "conformance.offsets.bounds" in said and callable(offsets.bounds)
    assert certify.plan("nvidia-h200", ["silu_mul"], ["bf16"])
    where = "neurobrix.ops.silu_mul._silu_mul_kernel"
    monkeypatch.setitem(offsets.NARROW_OFFSETS, where, {"offs_m": offsets.Allow(("toy.rows",), "a row x a stride")})
    with pytest.raises(UsageError) as refused:
        certify.plan("nvidia-h200", ["silu_mul"], ["bf16"])
    assert f"{where}: the allowance of offs_m is bounded by toy.rows" in str(refused.value)
    assert "conformance/offsets.py's bounds" in str(refused.value)


@pytest.mark.parametrize("step", ["op without its record", "record without its op"])
def test_an_op_and_its_record_out_of_step_is_one_line_saying_which_file(step, monkeypatch):
    """Between step 1 (the op module in MODULES) and step 3 (its record) every `python -m conformance` command ended
    in a RuntimeError's traceback; a record whose op is not in MODULES was told to add conformance/specs/<op>.py, the
    file it had. Now one line (exit 1, the CLI's NeuroBrixError) naming the file to add or the MODULES to extend."""
    import neurobrix.ops
    from conformance import specs
    from neurobrix.errors import NeuroBrixError

    ops = dict(neurobrix.ops.SPECS)
    if step == "op without its record":
        ops["toy_mul"] = ops["silu_mul"]
        says = "ops without a record: toy_mul (add conformance/specs/<op>.py"
    else:
        del ops["silu_mul"]
        says = "records without an op: silu_mul (add the op's module to MODULES in neurobrix/ops/__init__.py"
    monkeypatch.setattr(neurobrix.ops, "SPECS", ops)
    with pytest.raises(NeuroBrixError) as refused:
        specs._discover()
    assert refused.value.exit_code == 1 and says in str(refused.value) and "\n" not in str(refused.value)


def _help(parser, *path: str) -> str:
    import argparse

    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return " ".join(parser.format_help().split())


def test_conformance_help_lists_the_exit_codes_the_readme_gives():
    """`python -m conformance --help` listed no exit code at all (`neurobrix` and the gate do); the README gave none
    for it either, though its commands end 1, 2, 3 (a time limit, or damaged tables), 5 and 128+N. Both list the same
    codes now, each with its meaning."""
    import re

    from conformance.__main__ import build_parser

    text = _help(build_parser())
    said = " ".join(README[README.index("Exit codes of `python -m conformance`") :].split("\n\n")[0].split())
    codes = re.findall(r"(?:: |, )(\d+\+?N?) ", said)
    assert codes == ["0", "1", "2", "3", "5", "128+N"], said
    epilog = text[text.index("Exit codes:") : text.index("ended by signal N") + 1]
    assert re.findall(r"(?:: |, )(\d+\+?N?) ", epilog) == codes, epilog
    for meaning in (
        "mutant not caught",
        "track --check",
        "--max-minutes",
        "tables damaged or invalid",
        "TRITON_INTERPRET",
    ):
        assert meaning in said and meaning in epilog, meaning


@pytest.mark.parametrize(
    ("action", "terms"),
    [("verify", ("kernel code", "AWAITING_REPROOF", "awaiting_reproof")), ("show", ("kernel code", "re-proven"))],
)
def test_tables_help_says_what_the_readme_row_says(action, terms):
    """`tables verify --help` said it checks hashes and indexes only, `tables show --help` nothing of the kernel code a
    table was proven on, where the README's rows (round 39's) name the kernel-code check and its lines."""
    from neurobrix.cli import build_parser

    row = next(line for line in README.splitlines() if line.startswith(f"| `neurobrix tables {action} "))
    text = _help(build_parser(), "tables", action)
    for term in terms:
        assert term in row and term in text, term
