"""The forty-seventh round, adversarial on the strict runtime: a long-lived program using the Python API
(``neurobrix.store.resolve``, ``neurobrix.run.load_model``, ``neurobrix.generate``, ``neurobrix.plan.resolve`` and
``Plan.ops``) while the world under it changes: the store's model imported again or removed, the tables re-certified
on disk or NEUROBRIX_TABLES pointed elsewhere, NEUROBRIX_HOME and Triton's cache variables changed in the process.
The rule: the program gets what a fresh process gives (ids compared exactly) or a one-line NeuroBrixError naming the
change, never a silent mix.

Found and fixed (each test below failed before its fix):
- a StoredModel a program kept read the files of the model imported again under its name (``stored.tokenizer()``,
  ``stored.config()``): the new import's tokenizer beside the weights loaded from the old one, silently; each read is
  now held to the check, as ``load_model`` held the weights (exit 7, "changed while ... read").
- a model loaded before its tables were re-certified (an entry it launches gone) or before NEUROBRIX_TABLES named
  another folder went on generating with settings the tables found now do not certify, where a fresh process refuses
  the model (exit 4); each generation now holds the model's settings to the tables found now (a stat while they are
  the same; changed, its calls are resolved once again there), and refuses by name where they differ (exit 2).
- ``Plan.ops()`` on a plan resolved before its tables were re-certified was refused as "tables ... a program built or
  replaced", which it was not; it is named now (the tables changed on disk: resolve again). And a plan whose tables
  were loaded before eight other folders or states were loaded was refused so (``tables.is_loaded`` asked
  ``tables.load``'s cache of eight, whose evicted entries read as forged); it launches now.

Pinned (pass before and after): a model re-certified with the same settings, or moved to an identical copy of its
tables, generates the ids it gave before; a model removed after a program resolved it is named removed, not damaged;
the engine's Triton cache follows NEUROBRIX_HOME as it changes in the process, gives way to a TRITON_CACHE_DIR or
TRITON_HOME the program sets after it, and Triton's own knob reads what it set. Held: a loaded model is a snapshot of
the import it was loaded from (as transformers' from_pretrained model is): after a re-import it generates the ids it
gave before, and a program's tokenizer read from its StoredModel is the same import's (the fix above), so nothing
mixes; a fresh process gives the new import's ids. Two threads generating on one model or two, torch's default dtype
and deterministic settings were earlier rounds' (25, 24, 21).

No GPU: the interpreter class on tiny random checkpoints (tests/store_fixtures.py), about a minute on a loaded
2-core machine (four fresh processes among it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, retrack
from store_fixtures import make_checkpoint

from neurobrix import stack, store, tables
from neurobrix.errors import UsageError
from neurobrix.generate import Sampling, generate
from neurobrix.plan import generation_calls, resolve
from neurobrix.run import load_model
from neurobrix.store import DamagedModelError

PROMPT, NEW = [3, 4, 5], 8


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> Path:
    """A store holding the tiny checkpoint as ``tiny``; the checkpoint's folder."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny")
    store.import_model(str(folder), progress=False)
    return folder


def _tables(tmp_path: Path, name: str, without: str | None = None) -> Path:
    """The interpreter class's shipped tables, copied and tracked under ``name`` (``without`` a kernel's files)."""
    root = tmp_path / name
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    if without:
        _drop(root, without)
    retrack(root)
    return root


def _drop(root: Path, kernel: str) -> None:
    for path in (tables.index_path(root, "interpreter", kernel), tables.proofs_path(root, "interpreter", kernel)):
        path.unlink()


def _reimport(folder: Path) -> None:
    """The checkpoint given other weights and another chat template, imported again under its name."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = {k: v * 1.5 if "proj" in k else v for k, v in load_file(str(weights)).items()}
    save_file(tensors, str(weights), metadata={"format": "pt"})
    template = "{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
    (folder / "tokenizer_config.json").write_text(
        json.dumps({**json.loads((folder / "tokenizer_config.json").read_text()), "chat_template": template})
    )
    for jinja in folder.glob("*.jinja"):
        jinja.write_text(template)
    store.import_model(str(folder), progress=False)


def _loaded():
    return load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)


def _ids(model) -> list[int]:
    return generate(model, PROMPT, NEW, Sampling(), set())[0]


FRESH = """
import json, sys
from neurobrix import store
from neurobrix.errors import NeuroBrixError
from neurobrix.generate import Sampling, generate
from neurobrix.run import load_model
from neurobrix.store import DamagedModelError
try:
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=3, capacity=11)
except NeuroBrixError as exc:
    print(json.dumps(exc.exit_code)); sys.exit()
print(json.dumps(generate(model, [3, 4, 5], 8, Sampling(), set())[0]))
"""


def _fresh() -> list[int] | int:
    """What a fresh process gives with this process's environment: the ids, or the exit code of its refusal."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", FRESH], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the store's model imported again or removed under a program ---------------------------------------------------


def test_a_stored_model_kept_by_a_program_refuses_the_files_of_a_reimport(tiny):
    stored = store.resolve("tiny")
    template = stored.tokenizer().chat_template
    _reimport(tiny)
    with pytest.raises(DamagedModelError, match="changed while this command read it.*neurobrix.store.resolve"):
        stored.tokenizer()  # was: the new import's template, beside the old import's weights
    with pytest.raises(DamagedModelError, match="changed while this command read it"):
        stored.config()
    assert store.resolve("tiny").tokenizer().chat_template != template  # resolved again: the new import, whole


def test_a_stored_model_removed_under_a_program_is_named_removed(tiny):
    stored = store.resolve("tiny")
    store.remove("tiny")
    for read in (stored.tokenizer, stored.config):
        with pytest.raises(DamagedModelError, match="was removed while this command read it"):
            read()


def test_a_loaded_model_is_the_import_it_was_loaded_from_and_a_fresh_load_the_new_one(tiny):
    model = _loaded()
    before = _ids(model)
    _reimport(tiny)
    assert _ids(model) == before  # held: the weights in memory are the loaded import's (a snapshot)
    assert _ids(_loaded()) == _fresh() != before  # the new import's, exactly as a fresh process


# --- the tables re-certified or named elsewhere under a loaded model or a resolved plan ----------------------------


def test_a_loaded_model_refuses_settings_its_recertified_tables_no_longer_certify(tiny, tmp_path, monkeypatch):
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    model = _loaded()
    _ids(model)
    _drop(root, "rms_norm")  # re-certified without the setting the model launches
    retrack(root)
    assert _fresh() == 4  # a fresh process: no certified setting for its calls
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*rms_norm") as err:
        _ids(model)  # was: generated on with the setting no table certifies now
    assert "\n" not in str(err.value)


def test_a_loaded_model_refuses_settings_the_tables_named_since_do_not_certify(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv(tables.ENV_VAR, str(_tables(tmp_path, "full")))
    model = _loaded()
    monkeypatch.setenv(tables.ENV_VAR, str(_tables(tmp_path, "partial", without="silu_mul")))
    assert _fresh() == 4
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*silu_mul"):
        _ids(model)


def test_tables_that_still_certify_a_loaded_models_settings_change_nothing(tiny, tmp_path, monkeypatch):
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    model = _loaded()
    before = _ids(model)
    (root / tables.TRACKED_NAME).unlink()
    retrack(root)  # re-certified to the same settings: another TRACKED.yaml (inode, time)
    assert _ids(model) == before
    monkeypatch.setenv(tables.ENV_VAR, str(_tables(tmp_path, "copy")))  # an identical copy named
    assert _ids(model) == before == _fresh()


def test_a_plan_resolved_before_its_tables_were_recertified_is_refused_by_name(tiny, tmp_path, monkeypatch):
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    plan = resolve(generation_calls(store.resolve("tiny").config(), 1, 3, 11, "fp32"), tables.load(), "interpreter")
    plan.ops()
    _drop(root, "rms_norm")
    retrack(root)
    with pytest.raises(UsageError, match=r"changed on disk since these settings were resolved.*Resolve the plan again"):
        plan.ops()  # was: "tables ... built or replaced by a program"


def test_a_plan_outlives_eight_other_loads_of_tables(tiny, tmp_path, monkeypatch):
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    plan = resolve(generation_calls(store.resolve("tiny").config(), 1, 3, 11, "fp32"), tables.load(), "interpreter")
    for n in range(8):  # a long-lived program looking at other tables folders (load's cache holds eight)
        tables.load(_tables(tmp_path, f"other{n}"))
    assert tables.is_loaded(plan.tables)
    plan.ops()  # was: refused as tables a program built or replaced


# --- the engine's own Triton cache as the program changes NEUROBRIX_HOME and Triton's variables --------------------


def test_the_engine_cache_follows_the_home_and_gives_way_to_the_programs_own(tmp_path, monkeypatch):
    import triton

    for name in stack.CACHE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(stack, "_ENGINE_CACHE_SET", [None])
    for home in ("a", "b"):
        monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / home))
        stack.use_engine_cache()
        assert os.environ["TRITON_CACHE_DIR"] == triton.knobs.cache.dir == str(tmp_path / home / "triton-cache")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))  # the program's own, set after
    stack.use_engine_cache()
    assert stack.engine_cache() is None and triton.knobs.cache.dir == str(tmp_path / "mine")
    monkeypatch.setattr(stack, "_ENGINE_CACHE_SET", [None])
    monkeypatch.delenv("TRITON_CACHE_DIR")
    stack.use_engine_cache()
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "th"))  # TRITON_HOME set after: Triton's reading of it stands
    stack.use_engine_cache()
    assert "TRITON_CACHE_DIR" not in os.environ
    assert triton.knobs.cache.dir == str(tmp_path / "th" / ".triton" / "cache")
