"""Round 30 of planted bugs: the code merged on 2026-12-05 and not planted before: strict round 34 (the index row pass
stepping aside for a dtype that is a list or an object, the stack rule's hash of the imported ``__init__.py``), gate
round 34 (the install reader of tests/test_gate_round34.py, the lock reader of tests/test_workflows.py it calls, and
release.yml's locked installs), text round 30 (the byte-token rule built from the ByteFallback decoder's, the decay
refused at the token where it applies), kernel-mutant round 6 (``launch_switches``, the interpreter's guard on two
programs storing one element, ``Small.explicit``), walk-through round 31 (doctor without triton, the
``NEUROBRIX_TABLES`` message, ``conformance.bind`` beside bound records, the interrupted run's line end, a missing
dependency named) and run's "encode to no tokens" message. The plants and the driver: tests/planted30_plants.py,
tests/planted30_driver.py (round 26's ``run_round`` on this round's plants). Each test here fails with the plant
named in its docstring and passes on the clean code.

Outcomes (68 plants): 33 caught by the tests before this round (r01, r02; k01-k03, k07-k09; g01, g02, g05, g07;
y01, y02; t01, t02; x03-x06; m03-m05, m09, m10, m13, m14; w02, w04-w06, w09, w10), 35 survived: 31 are caught here
(k04; g03, g04, g06, g08, g09, g11, g12; t04-t06; x01, x02, x07; n01, n02, n04; m01, m02, m07, m08, m12; w01, w03,
w07, w08, w12-w16) and 4 are equivalent: r03 (the row pass's dtypes as strings: JSON gives no value other than a
string whose ``str`` is a dtype's name, so the same rows step aside), k05 (a RECORD line split from the left: the
package's path ``<name>/__init__.py`` holds no comma, so the three fields are the same), k06 (the line's end looked
for one character later: the line starts with the path, never a line end) and t03 (the six counted in characters,
not bytes: a token whose count differs holds a character past ASCII among the two digits, which the digits' rule
refuses either way). n01 and n04 undo the defect fixed this round (the first test of the last section). The plants
ran against strict round 34's tests and the tables' (row pass), the stack's and strict rounds 21, 30 and planted 28
(the record), gate round 34's and test_workflows.py (the install reader, the locks, release.yml), text round 30's,
test_tokenizer.py and planted 23 (the byte rule), text rounds 30, 29 and 14 and planted 28 and 29 (the decay),
test_cli.py (run's messages), kmut6's (and the conformance tests of the store guard), and walk-through 31's with
test_cli.py, test_newcomer.py, strict round 34, the newcomer round 30, planted 25 and 28 and test_conformance.py.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import types
from pathlib import Path

import pytest

# -- stack: the record's line for the package, its hash -------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _package(site: Path, code: bytes, record: str) -> types.ModuleType:
    """A ``triton`` package in ``site`` whose ``__init__.py`` holds ``code``, one .dist-info named triton 3.9.0 whose
    RECORD is ``record``."""
    (site / "triton").mkdir(parents=True)
    (site / "triton" / "__init__.py").write_bytes(code)
    info = site / "triton-3.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton\nVersion: 3.9.0\n", encoding="utf-8")
    (info / "RECORD").write_text(record, encoding="utf-8")
    module = types.ModuleType("triton")
    module.__file__ = str(site / "triton" / "__init__.py")
    module.__version__ = "3.9.0"
    return module


def test_a_record_holds_the_package_only_by_its_own_path_and_a_hash_it_can_check(tmp_path):
    """Planted k07: the package's line looked for anywhere in the record (not at a line's start), so a record that
    lists ``vendored/triton/__init__.py`` with the imported file's hash held a triton it does not install; k04: a
    hash hashlib does not know taken as the imported file's."""
    from neurobrix import stack
    from neurobrix.errors import CompilerStackError

    code = b"__version__ = '3.9.0'\n"
    listed = f"vendored/triton/__init__.py,sha256={_b64(code)},{len(code)}\n"
    with pytest.raises(CompilerStackError, match="not one an installed distribution holds"):
        stack.installed_version(_package(tmp_path / "a", code, listed))
    unknown = f"triton/__init__.py,nosuchhash={_b64(code)},{len(code)}\n"
    with pytest.raises(CompilerStackError, match="lists another triton/__init__.py"):
        stack.installed_version(_package(tmp_path / "b", code, unknown))
    ok = f"triton/__init__.py,sha256={_b64(code)},{len(code)}\n"  # control: the same files, the record right
    assert stack.installed_version(_package(tmp_path / "c", code, ok)) == "3.9.0"


# -- gate round 34: the install reader and the lock reader ------------------------------------------------------------


def test_the_install_reader_splits_joined_and_continued_commands():
    """Planted g03: a run: script's commands split at line ends and ``;`` alone, so ``cd x && pip install twine``
    was one command (refused as not `python -m pip install`, where the install itself must be judged); g04: a
    continued line (``\\`` then a line end) not joined, so its options read as another command."""
    from test_gate_round34 import install_commands, unhashed

    assert install_commands("cd work && python -m pip install -e . || true") == ["python -m pip install -e ."]
    assert install_commands("echo start | pip install twine") == ["pip install twine"]
    continued = "python -m pip install \\\n  --no-deps --no-build-isolation --no-index -e .\n"
    assert install_commands(continued) == ["python -m pip install    --no-deps --no-build-isolation --no-index -e ."]
    assert unhashed(install_commands(continued)[0]) is None


def test_the_install_reader_holds_the_lock_by_its_path_and_reads_it(tmp_path, monkeypatch):
    """Planted g08: a lock named by any path ending in the lock's name (``evil.github/gate/requirements.txt``) taken
    for the repository's; g06: ``-r`` as the last word ended in an IndexError, not a reason; g09: the lock's
    lines not read, so a lock holding an unhashed requirement passed."""
    import test_gate_round34 as round34

    locked = "python -m pip install --require-hashes --only-binary :all: -r "
    assert round34.unhashed(locked + ".github/gate/requirements.txt") is None  # the control
    assert round34.unhashed(locked + "checkout/.github/gate/requirements.txt") is None
    assert round34.unhashed(locked + "evil.github/gate/requirements.txt") is not None
    assert round34.unhashed("python -m pip install --require-hashes --only-binary :all: twine -r") is not None
    loose = tmp_path / "requirements.txt"
    loose.write_text("twine==7.0.0\n", encoding="utf-8")
    monkeypatch.setitem(round34.LOCKS, ".github/gate/requirements.txt", loose)
    with pytest.raises(AssertionError, match="not only sha256 hashes"):
        round34.unhashed(locked + ".github/gate/requirements.txt")


def test_a_lock_line_without_a_hash_is_refused():
    """Planted g11: a pinned line with no ``--hash`` option passed the lock reader (``all`` of no options)."""
    from test_workflows import lock_pins

    digest = "0" * 64
    assert lock_pins(f"twine==7.0.0 \\\n    --hash=sha256:{digest}\n") == {"twine": ("7.0.0", 1)}
    with pytest.raises(AssertionError, match="not only sha256 hashes"):
        lock_pins("twine==7.0.0\n")


def test_a_requirement_under_a_marker_the_jobs_meet_must_be_locked():
    """Planted g12: a locked package's requirements under an environment marker not looked at, so one the jobs'
    Python 3.11 on Linux needs (``importlib-metadata; python_version < "3.12"``) could be missing from the lock."""
    from test_gate_round34 import unlocked

    pins = {"twine": ("7.0.0", 1)}
    requires = ["twine>=6", 'pkg-old; python_version < "3.12"', 'pkg-win; sys_platform == "win32"', "pkg-any"]
    assert unlocked(pins, requires) == ['pkg-old; python_version < "3.12"', "pkg-any"]


# -- text round 30: the ByteFallback rule, the decay's eos ids -------------------------------------------------------

SPELLINGS = ["<0x41>", "<0x0a>", "<0x+A>", "<0xA+>", "<0x-1>", "<0xZZ>", "<0x80>", "<0x1>", "<0x+>", "<0xé>", "<0x 1>"]


def test_the_byte_rule_is_the_decoders_own():
    """Planted t04: the two digits matched at their start alone (``<0xA+>`` read as a byte, which the decoder prints
    as it is). Each spelling is held to what tokenizers' ByteFallback decoder does with it."""
    from tokenizers import decoders

    from neurobrix.tokenizer import _fallback_byte

    decoder = decoders.ByteFallback()
    for token in SPELLINGS:
        assert _fallback_byte(token) == (decoder.decode([token]) != token), token


def test_the_stream_waits_after_an_added_byte_token_and_writes_an_ordinary_one_at_once(tmp_path):
    """Planted t06: the byte tokens looked for in the model's vocabulary alone, so an added token spelt as a byte
    (which ByteFallback decodes as one: transformers prints "\\ufffd" for it before an invalid byte) was written at
    once; t05: every six-character token starting "<0x" taken for a byte, so one the decoder prints as it is
    (``<0xZZ>``) waited."""
    import json

    import transformers
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "sentencepiece")
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    ordinary = len(vocab) if isinstance(vocab, dict) else None
    assert ordinary is not None
    vocab["<0xZZ>"] = ordinary
    added = ordinary + 1
    data["added_tokens"].append(
        {
            "id": added,
            "content": "<0x0a>",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": False,
        }
    )
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    ours = Tokenizer(folder)
    byte_80 = hf.convert_tokens_to_ids("<0x80>")
    ids = [added, byte_80, hf.convert_tokens_to_ids("▁the")]
    assert hf.decode([added]) == "\n" and hf.decode(ids[:2]) == "\ufffd\ufffd"  # read as a byte, decoded as a run
    stream = ours.stream()
    assert stream.push(added) == ""
    assert "".join([stream.push(i) for i in ids[1:]]) + stream.finish() == hf.decode(ids, skip_special_tokens=True)
    stream = ours.stream()
    assert stream.push(ordinary) == hf.decode([ordinary]) != ""


def test_the_decay_is_refused_at_the_first_token_where_transformers_processor_fails():
    """Planted x01: an eos id equal to the vocabulary's size taken as inside it (transformers' processor indexes the
    scores with it there: an IndexError); x02: the refusal naming the token before the failing one. The first
    failing token is held to transformers' own processor."""
    import torch
    from transformers.generation.logits_process import ExponentialDecayLengthPenalty

    from neurobrix.errors import UsageError
    from neurobrix.generate import Constraints, decay_eos_check, decay_failure

    vocab, prompt_len, start = 8, 3, 2
    for eos in ([vocab], [vocab - 1], [0, vocab + 3]):
        processor = ExponentialDecayLengthPenalty((start, 1.5), eos, prompt_len)
        failing = None
        for length in range(prompt_len, prompt_len + 10):
            try:
                processor(torch.zeros(1, length, dtype=torch.long), torch.ones(1, vocab))
            except IndexError:
                failing = length - prompt_len + 1
                break
        constraints = Constraints(exponential_decay_length_penalty=(start, 1.5))
        assert decay_failure(constraints, prompt_len, 10, eos, vocab) == failing, eos
        if failing is not None:  # the refusal names that token
            with pytest.raises(UsageError, match=f"from new token {failing} on "):
                decay_eos_check((start, 1.5), eos, vocab, prompt_len, prompt_len + failing - 1)


def test_a_decay_on_a_negative_eos_id_is_refused_before_the_run_as_transformers_refuses_it(tmp_path):
    """Planted x07: the tokenizer's refusal of eos ids below 0 for the decay dropped, so the run went on (refused
    only where the decay applies, or printing its text when it ended before), where transformers'
    ExponentialDecayLengthPenalty refuses them when it is made, before any token."""
    import json

    from tokenizer_fixtures import save
    from transformers.generation.logits_process import ExponentialDecayLengthPenalty

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = save(tmp_path / "tok", "sentencepiece")
    for eos, refused in (([-1], True), ([2], False)):
        try:
            ExponentialDecayLengthPenalty((4, 1.5), eos, 3)
            theirs = False
        except ValueError:
            theirs = True
        assert theirs == refused, eos
        setting = {"exponential_decay_length_penalty": [4, 1.5], "eos_token_id": eos}
        (folder / "generation_config.json").write_text(json.dumps(setting), encoding="utf-8")
        if refused:
            with pytest.raises(TokenizerError, match="exponential_decay_length_penalty raises eos ids outside"):
                Tokenizer(folder).constraints(320)
        else:
            assert Tokenizer(folder).constraints(320)["exponential_decay_length_penalty"] == (4, 1.5)


# -- kmut6: the launch switches, the store guard, the explicit shapes ------------------------------------------------


def _stand_in(monkeypatch, switch, launch) -> None:
    """rms_norm's launcher replaced by one that launches ``_noop`` with ``PDL=switch(pdl)`` and
    ``launch_pdl=launch(pdl)`` (never run: ``launch_switches`` records each launch instead)."""
    import dataclasses

    from neurobrix.ops import SPECS

    def launcher(*, config, empty, pdl=False, **args):
        _noop[(1,)](args["x"], PDL=switch(pdl), launch_pdl=launch(pdl))

    monkeypatch.setitem(SPECS, "rms_norm", dataclasses.replace(SPECS["rms_norm"], launch=launcher))


def _rms_case():
    from conformance import harness

    return harness.build("rms_norm", "fp32", {"M": 2, "N": 8}, harness.Values("fp32", "cpu", 1, ("normal",)))


def test_launch_switches_hold_each_launch_to_what_was_asked(monkeypatch):
    """Planted m01: a launch's switch held to its launch_pdl alone, so a launcher that ignores ``pdl`` (both off when
    asked for PDL) passed; m02: the switch alone held to ``pdl``, so a launch that never asks for PDL with its switch
    on passed."""
    from conformance import harness

    config = {"BLOCK_M": 64, "num_warps": 4}
    _stand_in(monkeypatch, lambda pdl: pdl, lambda pdl: pdl)  # the control
    assert harness.launch_switches(_rms_case(), config) == []
    _stand_in(monkeypatch, lambda pdl: False, lambda pdl: False)
    assert [line.split(":")[0] for line in harness.launch_switches(_rms_case(), config)] == [
        "the launcher with pdl=True launches _noop with PDL=False, launch_pdl=False"
    ]
    _stand_in(monkeypatch, lambda pdl: pdl, lambda pdl: False)
    assert [line.split(":")[0] for line in harness.launch_switches(_rms_case(), config)] == [
        "the launcher with pdl=True launches _noop with PDL=True, launch_pdl=False"
    ]


try:
    import triton
    import triton.language as tl

    @triton.jit
    def _noop(x, PDL: tl.constexpr):
        pass

    @triton.jit
    def _store_at(out, first, second, N: tl.constexpr, TWICE: tl.constexpr):
        """Each program (its id over both axes, ``p``) stores p at ``first[p]``, and at ``second[p]`` when TWICE."""
        p = tl.program_id(0) + tl.num_programs(0) * tl.program_id(1)
        offs = tl.arange(0, N)
        where = tl.load(first + p + offs * 0)
        tl.store(out + where, p + offs * 0, mask=offs == 0)
        if TWICE:
            again = tl.load(second + p + offs * 0)
            tl.store(out + again, p + offs * 0, mask=offs == 0)

    @triton.jit
    def _store_masked(out, N: tl.constexpr):
        """Each program stores its id at element ``p`` of a block of N, its lanes but the p-th masked."""
        p = tl.program_id(0)
        offs = tl.arange(0, N)
        tl.store(out + offs, p + offs * 0, mask=offs == p)

except ImportError:  # pragma: no cover - every environment the tests run in has Triton
    pass


def _stores(grid, first, second=None):
    """Run ``_store_at`` on ``grid`` under the interpreter's memory guard; the elements written."""
    import torch

    from conformance import harness

    out = torch.zeros(8, dtype=torch.int32)
    first_t = torch.tensor(first, dtype=torch.int32)
    second_t = torch.tensor(second if second is not None else first, dtype=torch.int32)
    with harness.memory_guarded():
        _store_at[grid](out, first_t, second_t, N=2, TWICE=second is not None)
    return out.tolist()


def test_the_store_guard_sees_every_pair_of_programs_and_only_their_stores():
    """Planted m07: the clash looked for only where a launch made more than two stores (two programs storing one
    element each passed); m09: programs named by their first axis alone, so (0, 0) and (0, 1) were one program and
    their clash passed; m08: a program storing one element twice taken for a clash; m10: the masked lanes of a
    store counted as stored."""
    from conformance import harness

    assert _stores((2,), [0, 1]) == [0, 1, 0, 0, 0, 0, 0, 0]  # the control: distinct elements
    with pytest.raises(harness.MemoryGuardError, match="both store to the element"):
        _stores((2,), [3, 3])
    with pytest.raises(harness.MemoryGuardError, match=r"programs \(0, 0, 0\) and \(0, 1, 0\)"):
        _stores((1, 2), [5, 5])
    assert _stores((2,), [0, 1], second=[0, 1]) == [0, 1, 0, 0, 0, 0, 0, 0]  # each program its own element twice
    import torch

    out = torch.full((2,), -1, dtype=torch.int32)
    with harness.memory_guarded():
        _store_masked[(2,)](out, N=2)
    assert out.tolist() == [0, 1]


def test_an_explicit_shape_outside_the_entrys_domain_is_not_checked():
    """Planted m12: ``Small.explicit`` shapes run without the entry's range check, so a shape past the entry's
    domain was checked too (another setting's shape, held to this one)."""
    from conformance import check
    from conformance.specs import Small
    from neurobrix.schema import Domain, Setting

    config = {"BLOCK_M": 64, "num_warps": 4}
    entry = Setting(Domain(("fp32",), (("M", 1, 4), ("N", 1, 64))), config)
    inside, outside = {"M": 2, "N": 40}, {"M": 9, "N": 40}
    small = Small({"M": (1, 4), "N": (1, 64)}, {}, {}, (inside, outside))
    found = check.check_entry("rms_norm", entry, "fp32", 1, "ci", shrink=False, small=small)
    assert found.passed and found.examples == 2, found.failure


# -- walk-through 31 --------------------------------------------------------------------------------------------------


def test_a_missing_tracked_list_in_the_installed_tables_says_to_reinstall(tmp_path):
    """Planted w03: every origin given (the installed package's too) told to fix NEUROBRIX_TABLES, which is unset."""
    from neurobrix import tables
    from neurobrix.errors import TablesError

    with pytest.raises(TablesError) as refused:
        tables.read_tracked(tmp_path, "installed package")
    assert "Reinstall neurobrix" in str(refused.value) and tables.ENV_VAR not in str(refused.value)
    with pytest.raises(TablesError, match=f"{tables.ENV_VAR}={tmp_path} names no tables folder"):
        tables.read_tracked(tmp_path, tables.ENV_VAR)


def test_bind_refuses_a_record_whose_last_proof_alone_lacks_its_digest(tmp_path, capsys):
    """Planted w08: a record taken as bound when its first proof carries a digest, so one whose later proofs lack
    theirs was left unbound and the folder said "nothing to bind"."""
    import re
    import shutil

    from conftest import REPO, retrack

    from conformance import bind
    from neurobrix import tables

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    record = tables.proofs_path(root, "interpreter", "rms_norm")
    shipped = record.read_text(encoding="utf-8")
    digests = list(re.finditer(r"(?<=\n  proof:\n)    entry: '?[0-9a-f]{16}'?\n", shipped))
    assert len(digests) >= 2
    last = digests[-1]
    record.write_text(shipped[: last.start()] + shipped[last.end() :], encoding="utf-8")
    retrack(root)
    assert bind.main([str(root)]) == 3
    assert "not a record certify wrote without entry digests" in capsys.readouterr().err


def test_bind_refuses_a_record_without_entries_beside_one_it_would_bind(tmp_path, capsys):
    """Planted w07: a record whose ``entries`` is empty taken as bound (every one of no proofs carries a digest), so
    it was skipped and the rest of the folder bound, where the record fails its check and the folder is refused,
    nothing written."""
    import re
    import shutil

    from conftest import REPO, retrack

    from conformance import bind
    from neurobrix import tables

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    empty = tables.proofs_path(root, "interpreter", "rms_norm")
    text = empty.read_text(encoding="utf-8")
    empty.write_text(text[: text.index("\nentries:\n")] + "\nentries: []\n", encoding="utf-8")
    unbound = tables.proofs_path(root, "interpreter", "silu_mul")
    stripped = re.sub(r"(?<=\n  proof:\n)    entry: '?[0-9a-f]{16}'?\n", "", unbound.read_text(encoding="utf-8"))
    unbound.write_text(stripped, encoding="utf-8")
    retrack(root)
    assert bind.main([str(root)]) == 3
    assert "rms_norm.proofs.yaml: field 'entries'" in capsys.readouterr().err
    assert unbound.read_text(encoding="utf-8") == stripped


def _interrupted(monkeypatch, capsys, writes, error):
    """`neurobrix run` whose run writes ``writes`` and then raises ``error``: (exit code, stdout, stderr)."""
    from neurobrix import cli
    from neurobrix import run as run_module

    def run(opts, write=None, notice=None):
        for text in writes:
            write(text)
        raise error

    monkeypatch.setattr(run_module, "run", run)
    with pytest.raises(SystemExit) as ended:
        cli.main(["run", "--model", "tiny", "--prompt", "hello"])
    captured = capsys.readouterr()
    return ended.value.code, captured.out, captured.err


def test_an_interrupted_or_refused_run_ends_its_line_once(monkeypatch, capsys):
    """Planted w14: the last text taken as not ending a line before any was written, so an interrupt before the
    first token printed an empty line; w12: an empty write (a stream holding a byte back) taken as the last text, so
    a line already ended was ended again; w13: only Ctrl-C ended the line, not a refusal mid-text (the decay's)."""
    from neurobrix.errors import UsageError

    assert _interrupted(monkeypatch, capsys, [], KeyboardInterrupt()) == (130, "", "neurobrix: error: interrupted\n")
    assert _interrupted(monkeypatch, capsys, ["a line\n", ""], KeyboardInterrupt())[1] == "a line\n"
    code, out, err = _interrupted(monkeypatch, capsys, ["the king", ""], UsageError("refused at new token 4"))
    assert (code, out, err) == (2, "the king\n", "neurobrix: error: refused at new token 4\n")


def test_a_missing_dependency_is_named_by_its_distribution(monkeypatch, capsys):
    """Planted w15: the module's whole dotted name looked up (``huggingface_hub.errors`` missing ended in a
    traceback, not the one line naming huggingface_hub); w16: any missing module taken for a dependency (a KeyError
    for one the project does not depend on)."""
    code, _, err = _interrupted(
        monkeypatch, capsys, [], ModuleNotFoundError("No module named 'huggingface_hub'", name="huggingface_hub.errors")
    )
    assert code == 1 and err.startswith("neurobrix: error: huggingface_hub is not installed") and err.count("\n") == 1
    from neurobrix import cli
    from neurobrix import run as run_module

    def run(opts, write=None, notice=None):
        raise ModuleNotFoundError("No module named 'nosuchmodule'", name="nosuchmodule")

    monkeypatch.setattr(run_module, "run", run)
    with pytest.raises(ModuleNotFoundError, match="nosuchmodule"):
        cli.main(["run", "--model", "tiny", "--prompt", "hello"])


_WITHOUT_TRITON = """
import sys
from importlib import metadata

sys.modules["triton"] = None
real = metadata.version

def version(name):
    if name == "triton":
        raise metadata.PackageNotFoundError(name)
    return real(name)

metadata.version = version
from neurobrix import cli, doctor

doctor._importable = lambda name: name != "triton"
sys.exit(cli.main(["doctor"]))
"""


def test_doctor_without_triton_alone_says_so(tmp_path):
    """Planted w01: torch installed and triton not, doctor went on to the kernel sources (which import triton) and
    ended in a ModuleNotFoundError traceback."""
    import re
    import subprocess

    from conftest import REPO

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NEUROBRIX_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TRITON], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.search(r"FAIL +triton +not installed", done.stdout) and "blocked by triton" in done.stdout, done.stdout


# -- run: text that encodes to no tokens, with chat on and no chat template -------------------------------------------


def test_text_that_encodes_to_nothing_without_a_chat_template_is_named_so_with_chat_on(tmp_path, monkeypatch, capsys):
    """A defect found this round (and planted n01, n04, its fix undone): `run` with chat on (the default) on a model
    without a chat template, the prompt text its vocabulary encodes to nothing (spaces under WordPiece), said "the
    prompt is empty after tokenization ...; give some text, or drop --no-chat (or give it, where the model's chat
    template renders no text)": the prompt was not empty, --no-chat was not given, and the model has no chat
    template. It now names the text that encodes to no tokens, and only asks for some text."""
    pytest.importorskip("transformers")
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import generate_these, save

    from neurobrix import store
    from neurobrix.cli import main
    from neurobrix.tokenizer import Tokenizer

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "wp-model", use_transformers=False)
    save(folder, "wordpiece")
    store.import_model(str(folder), progress=False)
    generated = generate_these(monkeypatch, [])
    text = " \t "
    tokenizer = Tokenizer(folder)
    assert tokenizer.chat_template is None and tokenizer.encode_prompt(text, chat=True) == []
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "wp-model", "--prompt", text, "--backend", "torch"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and generated.eos is None
    assert "the prompt's 3 characters encode to no tokens of this model's vocabulary" in err, err
    assert "empty" not in err and "--no-chat" not in err and err.count("\n") == 1, err


def test_text_that_encodes_to_nothing_beside_a_start_token_is_named_so(tmp_path, monkeypatch, capsys):
    """Planted n02: a prompt whose text encodes to no tokens, its ids then the start token the tokenizer's template
    adds alone, called "the prompt is empty" (run's second refusal, where the model would run on that token alone):
    it held 3 characters. transformers' tokenizer gives the start token alone for it too."""
    import json

    import transformers
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import generate_these, save

    from neurobrix import store
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "wp-start", use_transformers=False)
    save(folder, "wordpiece")
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    sep = data["model"]["vocab"]["[SEP]"]
    data["post_processor"]["single"].insert(0, {"SpecialToken": {"id": "[SEP]", "type_id": 0}})
    data["post_processor"]["special_tokens"] = {"[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}}
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    text = " \t "
    assert transformers.AutoTokenizer.from_pretrained(folder)(text)["input_ids"] == [sep]
    store.import_model(str(folder), progress=False)
    generated = generate_these(monkeypatch, [])
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "wp-start", "--prompt", text, "--no-chat", "--backend", "torch"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and generated.eos is None
    assert "the prompt's 3 characters encode to no tokens of this model's vocabulary: without a chat template" in err
