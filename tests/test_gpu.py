"""neurobrix.gpu: lazy detection, the interpreter class, and the typed errors for no / unknown GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

from neurobrix import gpu, tables
from neurobrix.errors import NoGPUError, TablesError, UncertifiedGPUError

H200 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Fake 9000", (9, 0), 132, 139.8)


def test_interpreter_is_its_own_class(fixture_tables):
    assert os.environ["TRITON_INTERPRET"] == "1"
    assert gpu.detect_class().id == "interpreter"


def test_no_gpu_and_no_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(NoGPUError) as err:
        gpu.detect_class()
    assert "TRITON_INTERPRET=1" in str(err.value) and "--backend torch" in str(err.value)
    assert err.value.exit_code == 5


def test_matching_facts_find_the_class(fixture_tables):
    assert gpu.classify(H200, tables.load()).id == "fake-gpu"


@pytest.mark.parametrize(
    "change",
    [
        {"name": "NVIDIA Real 9000"},
        {"compute_capability": (8, 9)},
        {"compute_capability": (9, 1)},  # the same major: the minor counts too
        {"multiprocessor_count": 114},
        {"name": "nvidia fake 9000"},  # device_name is matched case-sensitively
        {"vendor": "amd"},
        {"backend": "hip"},
    ],
)
def test_any_differing_fact_is_uncertified(fixture_tables, change):
    facts = gpu.DeviceFacts(**{**H200.as_dict(), **change})
    with pytest.raises(UncertifiedGPUError) as err:
        gpu.classify(facts, tables.load())
    message = str(err.value)
    assert "not certified" in message and facts.describe() in message
    assert "certified classes" in message and "fake-gpu, interpreter" in message
    assert "python -m conformance certify --class <class-id>" in message


def test_a_class_without_its_multiprocessor_count_is_refused(fixture_tables):
    """Every fact of a CUDA class is required: a class.yaml without multiprocessor_count (which would match GPUs of
    any SM count, or fail later) is refused when the tables load, naming the file."""
    import yaml

    path = fixture_tables / "fake-gpu" / "class.yaml"
    data = yaml.safe_load(path.read_text())
    del data["match"]["multiprocessor_count"]
    path.write_text(yaml.safe_dump(data))
    from conftest import retrack

    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: field 'match'"):
        tables.load()


def test_two_matching_classes_are_refused(fixture_tables):
    twin = fixture_tables / "twin"
    twin.mkdir()
    text = (fixture_tables / "fake-gpu" / "class.yaml").read_text().replace("class: fake-gpu", "class: twin")
    (twin / "class.yaml").write_text(text)
    from conftest import retrack

    retrack(fixture_tables)
    # refused with the tables (exit 3), before any device is looked at (tests/test_strict_round18.py)
    with pytest.raises(TablesError, match=r"twin/class.yaml: field 'match': a device can match both .*fake-gpu"):
        tables.load()


def test_shipped_h200_class_matches_the_h200_facts():
    # The facts of the lent H200 (FACTS.md): name, compute capability 9.0, 132 SMs.
    facts = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132)
    assert gpu.classify(facts, tables.load(REPO / "tables")).id == "nvidia-h200"


def test_importing_the_engine_touches_no_device():
    code = (
        "import neurobrix, neurobrix.gpu, neurobrix.tables, neurobrix.cli, sys; "
        "assert neurobrix.gpu.device_facts.cache_info().currsize == 0; "
        "assert 'torch' not in sys.modules, 'torch imported at import time'"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


@pytest.mark.parametrize("value", ["1", "true", "YES", "on", "y", "0", ""])
def test_the_engine_and_triton_agree_on_whether_kernels_run_in_the_interpreter(value):
    """Triton turns its interpreter on for TRITON_INTERPRET=true/yes/on/y too, not only 1. Were the engine to read
    only "1", a GPU machine with TRITON_INTERPRET=true would pick its GPU class and check its stack, then run that
    class's settings (bf16 included, which the interpreter computes wrongly) through Triton's interpreter: not the
    code they were proven on. Both the class detection and the launchers must read the variable as Triton does."""
    code = (
        "import triton, json; from neurobrix import gpu; from neurobrix.ops import _common; "
        "print(json.dumps([bool(triton.knobs.runtime.interpret), gpu.interpreter_enabled(), _common.INTERPRETER]))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": value}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    triton_says, class_says, launch_says = json.loads(out)
    assert class_says == triton_says and launch_says == triton_says
