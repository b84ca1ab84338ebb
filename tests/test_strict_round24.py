"""The twenty-fourth round, adversarial on the strict runtime: the paths between a certified plan and a kernel launch
rather than the files read. Four classes: the arrival counters of linear's MERGE "last" and of greedy_pick were the
process's, shared by every model (two models generating at once counted each other's arrivals); two models launching
at once on the interpreter class ran through the Triton interpreter's one program index (each computed the other's
tiles); a kernel was launched with tensors on another GPU than torch's current one, where Triton launches it, or on
a GPU made current after ``Plan.ops()`` checked the class of the one current then; and attention_decode's lengths
were proven as int32 while every decode step hands the kernel int64 ones (another binary). Each test failed before
the fix it names and passes now; the controls pass either way. Small kernels run on the interpreter."""

from __future__ import annotations

import types

import pytest
import torch
from kernel_tables import write_gpu_class, write_tables

from neurobrix import gpu, stack, tables
from neurobrix.errors import InvalidInputError, UncertifiedGPUError
from neurobrix.ops import _common, certified
from neurobrix.ops import linear as linear_module
from neurobrix.ops.linear import linear
from neurobrix.ops.pick import greedy_pick

GEMV = {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": 2, "num_warps": 4}
LAST = {**GEMV, "MERGE": "last"}
PICK = {"BLOCK_V": 64, "num_warps": 4}  # 128 logits: two parts, the row's last to arrive picks


def _counters_of_each_launch(monkeypatch) -> list[torch.Tensor]:
    """The arrival counters each launch from here on is handed (``tile_counters``' result, as linear and greedy_pick
    get it)."""
    handed: list[torch.Tensor] = []
    real = linear_module.tile_counters

    def recorded(*args, **kwargs):
        handed.append(real(*args, **kwargs))
        return handed[-1]

    monkeypatch.setattr(linear_module, "tile_counters", recorded)
    import neurobrix.ops.pick as pick_module

    monkeypatch.setattr(pick_module, "tile_counters", recorded)
    return handed


def _linear_launch(ops, seed):
    generator = torch.Generator().manual_seed(seed)
    x, w = torch.randn(1, 96, generator=generator), torch.randn(40, 96, generator=generator)
    return ops.linear(x, w, None), linear(x, w, config=GEMV)  # (by MERGE "last", by the merge kernel)


def _pick_launch(ops, seed):
    logits = torch.randn(1, 128, generator=torch.Generator().manual_seed(seed))
    tokens, state = torch.zeros((1, 1), dtype=torch.long), torch.zeros((2, 1), dtype=torch.long)
    ops.greedy_pick(logits, tokens, state)
    return tokens, logits.argmax(dim=-1, keepdim=True)  # (the kernel's pick, torch's)


LAUNCHES = {
    "linear-merge-last": (("linear", "fp32", (1, 40, 96)), LAST, _linear_launch),
    "greedy_pick": (("greedy_pick", "fp32", (1, 128)), PICK, _pick_launch),
}


@pytest.mark.parametrize("op", sorted(LAUNCHES))
def test_two_models_never_count_arrivals_in_each_others_counters(monkeypatch, op):
    """Before: the counters were the process's, one set per device for every model, so two models generating at once
    (two threads; a CUDA graph's warm-up on its side stream beside another model's replays) shared each tile's
    count: model B's first program to arrive found model A's arrival there, took itself for the tile's last, merged
    partial sums not yet stored, and reset A's count, so that A's tile was never merged. Model A's launch is held in
    flight here (its tile's count at 1, one of its two programs arrived) while model B launches the same call. Now
    each plan's ops hold their own counters: B's launch leaves A's count alone and gives the right result."""
    call, setting, launch = LAUNCHES[op]
    handed = _counters_of_each_launch(monkeypatch)
    model_a, model_b = certified({call: setting}), certified({call: setting})
    got, want = launch(model_a, 0)
    assert torch.equal(got, want)  # control: one model alone
    counters_a = handed[-1]
    counters_a[0] = 1  # model A's launch in flight: the first of its tile's two programs has arrived
    try:
        got, want = launch(model_b, 1)
        assert int(counters_a[0]) == 1, "model B's launch counted its arrivals in model A's counters"
        assert torch.equal(got, want)
        assert not handed[-1].any()  # model B's own counters back at zero after its launch
    finally:
        counters_a[0] = 0


def test_one_models_ops_keep_one_set_of_counters(monkeypatch):
    """Control: a model's own launches (linear's and greedy_pick's, one after the other on one stream) share its
    counters, as a CUDA graph captured once replays them; a launcher called directly (conformance) keeps the
    process's."""
    handed = _counters_of_each_launch(monkeypatch)
    model = certified({call: setting for call, setting, _ in LAUNCHES.values()})
    for _, _, launch in LAUNCHES.values():
        got, want = launch(model, 2)
        assert torch.equal(got, want)
    assert handed[0] is handed[1]
    x, w = torch.randn(1, 96), torch.randn(40, 96)
    linear(x, w, config=LAST)
    assert handed[-1] is linear_module._COUNTERS[x.device]


class _OnGPU(torch.Tensor):
    """A CPU tensor that says it lies on a GPU (no GPU here): what a launcher reads to choose where to launch."""

    gpu = 1

    @property
    def device(self):  # type: ignore[override]
        return torch.device("cuda", self.gpu)


def _on_gpu(tensor: torch.Tensor, index: int) -> torch.Tensor:
    made = tensor.as_subclass(_OnGPU)
    made.gpu = index
    return made


@pytest.fixture
def a_gpu_machine(monkeypatch):
    """The launchers' view of a machine with GPUs, torch's current one cuda:0 (Triton launches there)."""
    monkeypatch.setattr(_common, "INTERPRETER", False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.mark.parametrize("index", [1, 3])
def test_a_launch_on_another_gpu_than_the_current_one_is_refused_by_name(a_gpu_machine, index):
    """Before: a kernel whose tensors lie on cuda:1 while torch's current GPU is cuda:0 (a program that put its model
    there, ``warmup.launch(..., device="cuda:1")``) passed every check and was launched by Triton on cuda:0, its
    current GPU: the kernel read another GPU's memory (over peer access, or faulted on an illegal address), unordered
    with the PyTorch work on the tensors' own GPU, and a CUDA graph captured on cuda:0 held none of that work. Now
    refused naming both GPUs and what to do (InvalidInputError, exit 2), before anything is launched."""
    x, w = _on_gpu(torch.randn(1, 96), index), _on_gpu(torch.randn(40, 96), index)
    with pytest.raises(InvalidInputError, match=rf"x is on cuda:{index}, but .* current GPU, cuda:0.*set_device"):
        linear(x, w, config=GEMV)
    logits = _on_gpu(torch.randn(1, 128), index)
    tokens = _on_gpu(torch.zeros((1, 1), dtype=torch.long), index)
    state = _on_gpu(torch.zeros((2, 1), dtype=torch.long), index)
    with pytest.raises(InvalidInputError, match=rf"logits is on cuda:{index}, but .* current GPU, cuda:0"):
        greedy_pick(logits, tokens, state, config=PICK)


def test_a_launch_on_the_current_gpu_passes_the_device_check(a_gpu_machine):
    """Control: tensors on the current GPU pass, as every `run` and `warmup` launch does (the model on "cuda")."""
    tensors = {"x": types.SimpleNamespace(device=torch.device("cuda", 0))}
    _common.check_device("linear", **tensors)
    with pytest.raises(InvalidInputError, match="tensors on different devices"):
        _common.check_device("linear", x=tensors["x"], weight=types.SimpleNamespace(device=torch.device("cuda", 1)))


def test_two_models_launching_at_once_on_the_interpreter_never_run_each_others_programs(monkeypatch):
    """Before: the Triton interpreter runs a launch's programs one by one through state of the process (the program
    index in one global builder), so a model launching in another thread while a first model's launch was between two
    programs set that index under it: the first launch's next program read the other's last index and computed
    another tile than its own (here columns 64-95 of a 40-column output: nothing), leaving its own tile as
    ``torch.empty`` left it, silently. Model A's launch is held here before its second program for up to a second,
    or until model B's launch has ended once it began. Now the engine's interpreted launches run one at a time: B's
    waits for A's, and both give x @ W^T."""
    import threading

    from triton.runtime import interpreter

    config = {**GEMV, "SPLIT_K": 1}
    generator = torch.Generator().manual_seed(24)
    x_a, w_a = torch.randn(1, 96, generator=generator), torch.randn(40, 96, generator=generator)
    x_b, w_b = torch.randn(1, 96, generator=generator), torch.randn(96, 96, generator=generator)  # 3 programs
    model_a = certified({("linear", "fp32", (1, 40, 96)): config})
    model_b = certified({("linear", "fp32", (1, 96, 96)): config})
    main = threading.current_thread()
    b_started, b_done = threading.Event(), threading.Event()
    got: dict[str, object] = {}

    def run_b() -> None:
        try:
            got["b"] = model_b.linear(x_b, w_b, None)
        except Exception as exc:  # reported below, as the test's failure
            got["b"] = exc
        finally:
            b_done.set()

    b = threading.Thread(target=run_b)
    real = interpreter.interpreter_builder.set_grid_idx
    programs_of_a = []

    def set_grid_idx(x, y, z):
        real(x, y, z)
        if threading.current_thread() is not main:
            b_started.set()
        else:
            programs_of_a.append((x, y, z))
            if len(programs_of_a) == 2:  # model A between its two programs: model B launches now
                b.start()
                if b_started.wait(1.0):
                    b_done.wait(30)

    monkeypatch.setattr(interpreter.interpreter_builder, "set_grid_idx", set_grid_idx)
    got["a"] = model_a.linear(x_a, w_a, None)
    b.join(30)
    assert not b.is_alive()
    for name, (x, w) in {"a": (x_a, w_a), "b": (x_b, w_b)}.items():
        assert isinstance(got[name], torch.Tensor), got[name]
        torch.testing.assert_close(got[name], x @ w.T, rtol=1e-5, atol=1e-5)


_HOPPER = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Fake Hopper", (9, 0), 132, 139.8)
_A100 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA A100-SXM4-80GB", (8, 0), 108, 79.2)


def test_a_gpu_made_current_after_the_plans_ops_is_checked_before_its_first_launch(tmp_path, monkeypatch):
    """Before: ``Plan.ops()`` checked the class of the GPU current when it was called; a program that then made
    another GPU current (``torch.cuda.set_device(1)``: an A100 beside the H100 whose class was planned) and put its
    model there had every kernel launched on the A100 with the H100's settings. Now a plan's ops check each device
    their calls run on before its first launch there: refused (exit 5) naming both GPUs; GPU 0 and a GPU 1 of its kind
    are launched on."""
    loaded = tables.load(write_gpu_class(write_tables(tmp_path / "t")))
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(_common, "INTERPRETER", False)
    monkeypatch.setattr(gpu, "device_facts", lambda: _HOPPER)
    second = [_A100]
    monkeypatch.setattr(gpu, "facts_of", lambda index: [_HOPPER, second[0]][index], raising=False)
    current = [0]
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current[0])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for name in stack.CACHE_ENV:
        monkeypatch.setenv(name, str(tmp_path / "cache"))
    from neurobrix.plan import resolve

    call = ("linear", "fp32", (1, 40, 96))
    ops = resolve([call], loaded, "fake-hopper").ops()  # GPU 0 current: of the class
    # no GPU here: the launcher's kernels record their launch, its scratch is made on the CPU
    launched: list = []
    for name in [n for n in vars(linear_module) if n.startswith("_linear_") and n.endswith("_kernel")]:
        monkeypatch.setattr(linear_module, name, _Recorder(launched))
    monkeypatch.setitem(linear_module.linear.__kwdefaults__, "empty", _cpu_empty)
    current[0] = 1  # torch.cuda.set_device(1), the model put on cuda:1
    x, w = _on_gpu(torch.randn(1, 96), 1), _on_gpu(torch.randn(40, 96), 1)
    with pytest.raises(UncertifiedGPUError, match=r"would run on GPU 1 \(name 'NVIDIA A100-SXM4-80GB'") as refused:
        ops.linear(x, w, None)
    assert refused.value.exit_code == 5 and not launched
    second[0] = _HOPPER  # control: a GPU 1 of GPU 0's kind
    ops.linear(x, w, None)
    assert launched


def _cpu_empty(*shape, device=None, **kwargs):
    """torch.empty on the CPU whatever device is asked (no GPU here)."""
    return torch.empty(*shape, **kwargs)


class _Recorder:
    """A kernel stand-in: ``kernel[grid](...)`` records the launch and runs nothing."""

    def __init__(self, launched: list) -> None:
        self.launched = launched

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launched.append(grid)


# -- the integer arguments a launch is given ------------------------------------------------------------------------


def _integer_arguments(kernel: str, args: tuple, kwargs: dict) -> set[tuple[str, str, str]]:
    """(op, argument, dtype) of each integer tensor a call hands its launcher (what picks another binary than the
    float tensors and the key do: Triton compiles a kernel per argument dtype)."""
    import inspect

    from neurobrix.ops import SPECS

    bound = inspect.signature(SPECS[kernel].launch).bind_partial(*args, **kwargs).arguments
    return {
        (kernel, name, str(value.dtype).removeprefix("torch."))
        for name, value in bound.items()
        if isinstance(value, torch.Tensor) and not value.dtype.is_floating_point
    }


def _engine_launches() -> tuple[set[tuple[str, str, str]], set[tuple]]:
    """The integer arguments of every launch of a generation, as the engine makes them (its prefill, its decode step
    for sampling and for greedy decoding), recorded on meta tensors; and the calls' keys."""
    from store_fixtures import config_dict

    from neurobrix.config import ModelConfig
    from neurobrix.generate import Decoder, GreedyDecoder
    from neurobrix.model import Transformer, meta_weights
    from neurobrix.ops import SPECS, Ops

    found: set[tuple[str, str, str]] = set()
    calls: set[tuple] = set()

    def make(spec):
        def op(*args, **kwargs):
            found.update(_integer_arguments(spec.name, args, kwargs))
            dtype, key = spec.key_of(*args, **kwargs)
            calls.add((spec.name, dtype, tuple(key)))
            return spec.outputs(*args, **kwargs)

        return op

    cfg = ModelConfig.from_hf(config_dict(), "config.json")
    # prefilled in two passes (the second over the cache, attention_chunk's), as a prompt longer than a chunk is
    model = Transformer(cfg, meta_weights(cfg, torch.float32), Ops("arguments", make), batch=1, capacity=8, chunk=2)
    model.prefill(torch.zeros((1, 3), dtype=torch.long, device="meta"))
    Decoder(model, 1, use_graph=False).step(torch.zeros((1,), dtype=torch.long, device="meta"), 3)
    greedy = GreedyDecoder(model, 1, use_graph=False)
    greedy.start(torch.zeros((1,), dtype=torch.long, device="meta"), 3)
    greedy.step()
    assert set(SPECS) == {name for name, _, _ in calls}  # every op launched
    return found, calls


def test_every_integer_argument_the_engine_launches_with_is_one_conformance_proves():
    """Before: attention_decode's cache lengths were drawn by conformance (so by every check and every proof) as an
    int32 tensor, while the engine's decode step hands the kernel a row of its int64 decode state (positions and
    lengths, which greedy_pick moves on): Triton compiles a kernel per argument dtype, so every decode step of every
    run launched an attention_decode binary no proof ever ran. Now conformance draws the lengths as the engine lays
    them out too (the row of an int64 state), so a check and a certify run the engine's binary. Every integer tensor
    the engine hands a launcher (its prefill, a sampled and a greedy decode step) is one conformance draws for that
    op, in that dtype."""
    from conformance.harness import Values
    from conformance.specs import RECORDS
    from neurobrix.ops import SPECS

    engine, calls = _engine_launches()
    drawn: set[tuple[str, str, str]] = set()
    for kernel, dtype, key in sorted(calls):
        shape = dict(zip(SPECS[kernel].key, key))
        for seed in range(12):
            args, _ = RECORDS[kernel].build(shape, Values(dtype, "cpu", seed))
            drawn |= _integer_arguments(kernel, (), args)
    assert engine - drawn == set(), f"launched by the engine, never drawn by conformance: {sorted(engine - drawn)}"
