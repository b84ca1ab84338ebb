"""`neurobrix warmup`: every Triton binary a run can need is launched (so compiled) before the first run.

The interpreter compiles nothing, so the coverage is checked at the level Triton keys its cache by: each
launch's specialization (kernel, constexprs, launch options, per argument its type, 16-byte alignment or
divisibility by 16, equality to 1), computed by Triton's own binder, as ``JITFunction.run`` computes it
before looking a binary up. Launches are recorded instead of run (their outputs are never read), on a
model with sizes that make strides odd (head dim 8, one kv head) and three layers (the warmup uses two),
under tables whose entries end in the middle of a bucket.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

import pytest
import torch
from conftest import REPO
from kernel_tables import CONFIGS, write_tables

from neurobrix import plan as plan_module
from neurobrix import stack, store, warmup
from neurobrix.cli import main
from neurobrix.kernel_code import patched_kernels

TILED = CONFIGS["linear"][1][1]
# settings that change inside a bucket: linear from M 101, attention_decode at capacities 97-100 only (a
# warmup cutting only at bucket edges would never launch that one; one taking residues mod 8 would never
# launch linear's second setting at an M divisible by 16: 112 lies inside 101-127)
EDGY = {
    "linear": [
        ({"M": [1, 1]}, CONFIGS["linear"][0][1]),
        ({"M": [2, 100]}, TILED),
        ({"M": [101, None]}, {**TILED, "BLOCK_M": 16}),
    ],
    "attention_decode": [
        ({"S": [1, 96]}, CONFIGS["attention_decode"][0][1]),
        ({"S": [97, 100]}, {"SPLITS": 2, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}),
        ({"S": [101, None]}, CONFIGS["attention_decode"][0][1]),
    ],
}
CONTEXT = 128
NAME = "odd"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A store holding a three-layer model with odd strides, and the EDGY tables selected."""
    from store_fixtures import config_dict, make_checkpoint

    root = tmp_path_factory.mktemp("warmup")
    config = config_dict(
        "llama",
        hidden_size=56,
        intermediate_size=40,
        num_attention_heads=7,
        num_key_value_heads=1,
        num_hidden_layers=3,
        max_position_embeddings=CONTEXT,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEUROBRIX_HOME", str(root / "home"))
        mp.setenv("NEUROBRIX_TABLES", str(write_tables(root / "tables", EDGY)))
        store.import_model(str(make_checkpoint(root / NAME, use_transformers=False, config=config)), progress=False)
        yield root


@pytest.fixture
def env(home, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(home / "home"))
    monkeypatch.setenv("NEUROBRIX_TABLES", str(home / "tables"))
    return home


# --- Triton's cache key of a launch --------------------------------------------------------------------


_BINDERS: dict = {}


def launch_key(fn, args, kwargs) -> tuple:
    """What Triton 3.x keys a compiled binary by, beyond the source: the kernel, its specialization
    (constexpr values; per argument its type and 'D' for 16-byte alignment / divisibility by 16, a
    constexpr for an integer equal to 1) and the launch options; JITFunction.run's own binder computes it."""
    from triton.backends.compiler import BaseBackend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    binder = _BINDERS.get(fn)
    if binder is None:
        jit = JITFunction(fn)
        binder = _BINDERS[fn] = create_function_from_signature(jit.signature, jit.params, BaseBackend)
    _, specialization, options = binder(*args, **kwargs)
    return (f"{fn.__module__}.{fn.__qualname__}", tuple(specialization), tuple(sorted(options.items())))


class Recorder:
    """Every Triton launch's key, into ``keys`` (a set that can be swapped between launches); the kernels
    run only with ``execute``."""

    def __init__(self, execute: bool = False) -> None:
        self.keys: set = set()
        self.execute = execute

    def install(self, mp: pytest.MonkeyPatch) -> None:
        from triton.runtime.interpreter import InterpretedFunction

        original = InterpretedFunction.run
        recorder = self

        def run(kernel, *args, grid, warmup, **kwargs):
            recorder.keys.add(launch_key(kernel.fn, args, kwargs))
            if recorder.execute:
                return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            return None

        mp.setattr(InterpretedFunction, "run", run)


@contextmanager
def recorded(execute: bool = False):
    """Every Triton launch's key, into the yielded set; the kernels run only with ``execute``."""
    recorder = Recorder(execute)
    with pytest.MonkeyPatch.context() as mp:
        recorder.install(mp)
        yield recorder.keys


def run_keys(name: str) -> dict[tuple[int, int], frozenset]:
    """(prompt length, KV capacity) -> the launch keys of that run, for every run the context allows:
    the model loaded as `run` loads it (every layer, its weights from the store), the prompt through
    generate's ``prefill``, a decode step through both of generate's decode loops, ``GreedyDecoder``
    (greedy: the token picked on the device) and ``Decoder`` (sampling), every step making the same
    launches (positions and lengths are tensors). Settings from the preflight's own functions."""
    from neurobrix.generate import Decoder, GreedyDecoder, prefill
    from neurobrix.model import Transformer, weights_from_files
    from neurobrix.ops import certified
    from neurobrix.plan import generation_calls, resolve
    from neurobrix.tables import load

    stored = store.resolve(name)
    cfg = stored.config()
    weights = weights_from_files(cfg, [str(p) for p in stored.weight_files()], torch.float32, "cpu")
    settings: dict = {}
    for length in range(1, CONTEXT):  # every prefill, and every decode capacity, each as one run's plan
        settings |= resolve(generation_calls(cfg, 1, length, length + 1, "fp32"), load(), "interpreter").settings
    ops = certified(settings)  # a call of some run that no plan above holds would raise here
    keys: dict[tuple[int, int], frozenset] = {}
    recorder = Recorder()
    with torch.inference_mode(), pytest.MonkeyPatch.context() as mp:
        recorder.install(mp)
        for capacity in range(2, CONTEXT + 1):
            model = Transformer(cfg, weights, ops, batch=1, capacity=capacity)
            recorder.keys = set()
            Decoder(model, 1, use_graph=False).step(torch.tensor([1]), capacity - 1)
            greedy = GreedyDecoder(model, 1, use_graph=False)
            greedy.start(torch.tensor([1]), capacity - 1)
            greedy.step()
            decode = frozenset(recorder.keys)
            for prompt in range(1, capacity):
                recorder.keys = set()
                prefill(model, [[1] * prompt])
                keys[prompt, capacity] = frozenset(recorder.keys) | (decode if capacity > prompt + 1 else frozenset())
    return keys


@pytest.fixture(scope="module")
def every_run(home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEUROBRIX_HOME", str(home / "home"))
        mp.setenv("NEUROBRIX_TABLES", str(home / "tables"))
        return run_keys(NAME)


def warmup_keys(max_tokens: int | None = None, max_prompt: int | None = None) -> set:
    with recorded() as keys:
        report = warmup.warmup(
            warmup.WarmupOptions(model=NAME, max_tokens=max_tokens, max_prompt=max_prompt, dtype="fp32")
        )
    assert report.passes == report.plan.passes > 0
    return keys


def uncovered(
    runs: dict[tuple[int, int], frozenset], keys: set, max_tokens: int = CONTEXT, max_prompt: int = CONTEXT
) -> dict:
    """The runs (prompts of at most ``max_prompt`` tokens, at most ``max_tokens`` new tokens) that would
    launch a binary the warmup did not."""
    return {
        run: sorted(made - keys)[:2]
        for run, made in runs.items()
        if run[0] <= max_prompt and run[1] - run[0] <= max_tokens and not made <= keys
    }


# --- coverage -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_run_finds_every_binary_the_warmup_launched(env, every_run):
    """Every prompt length from 1 to the context, with every --max-tokens it leaves room for: nothing a run
    launches is a binary the warmup did not launch first."""
    assert len(every_run) == CONTEXT * (CONTEXT - 1) // 2
    keys = warmup_keys()
    assert uncovered(every_run, keys) == {}
    distinct = set().union(*every_run.values())
    assert len(distinct) > 40  # odd strides and mid-bucket settings: many binaries, not a handful
    assert keys == distinct  # and the warmup launches nothing no run needs


@pytest.mark.slow
def test_limits_cover_every_run_within_them(env, every_run):
    """`warmup --max-prompt 40 --max-tokens 20`: every run within both (a second run with another
    --max-tokens within the limit included); longer prompts need what it skipped (their own settings)."""
    keys = warmup_keys(max_tokens=20, max_prompt=40)
    assert uncovered(every_run, keys, max_tokens=20, max_prompt=40) == {}
    assert uncovered(every_run, keys) != {}


def _divisor_8(monkeypatch):
    monkeypatch.setattr(warmup, "DIVISOR", 8)


def _one_cache_per_prompt(monkeypatch):
    monkeypatch.setattr(warmup, "_class_of", lambda length: 0)


def _buckets_only(monkeypatch):
    class NoEntries:
        def index(self, class_id, kernel):
            return None

    real = plan_module.length_segments
    monkeypatch.setattr(warmup, "length_segments", lambda tables, class_id, lo, hi: real(NoEntries(), class_id, lo, hi))


@pytest.mark.slow
@pytest.mark.parametrize(
    "weaken",
    [_divisor_8, _one_cache_per_prompt, _buckets_only],
    ids=["residues-mod-8", "one-cache-per-prompt", "bucket-edges-only"],
)
def test_the_coverage_check_catches_a_weaker_warmup(env, every_run, monkeypatch, weaken):
    """Each planted weakness leaves some run compiling: the check above has the power to see it."""
    weaken(monkeypatch)
    assert uncovered(every_run, warmup_keys()) != {}


def test_warmup_launches_every_planned_call_and_no_other(env, monkeypatch):
    from neurobrix import ops

    launched = set()
    real = ops.certified

    def counting(settings, pdl=False):
        made = real(settings, pdl)

        class Counting:
            def __getattr__(self, name):
                op = getattr(made, name)

                def call(*args, **kwargs):
                    dtype, key = ops.SPECS[name].key_of(*args, **kwargs)
                    launched.add((name, dtype, tuple(key)))
                    return op(*args, **kwargs)

                return call

        return Counting()

    monkeypatch.setattr(ops, "certified", counting)
    # (ops counting their launches are not the certified kernels: run and Plan.ops refuse them but for a test's say)
    with recorded(), patched_kernels("counts the calls warmup launches"):
        report = warmup.warmup(warmup.WarmupOptions(model=NAME, max_prompt=40, max_tokens=30, dtype="fp32"))
    assert launched == set(report.plan.settings)
    assert report.plan.prompts == [(1, 40)] and report.plan.capacities == [(2, 70)]


def test_the_warmup_plans_the_dtype_it_was_asked_for(env):
    """warmup --dtype fp16 resolves (so compiles) fp16's certified settings, the ones an fp16 run launches, and no
    other dtype's."""
    from neurobrix.tables import load

    cfg = store.resolve(NAME).config()
    plan = warmup.plan_warmup(cfg, load(), "interpreter", "fp16", max_prompt=3, max_new=2)
    assert plan.settings and {dtype for _, dtype, _ in plan.settings} == {"fp16"}
    run = plan_module.resolve(plan_module.generation_calls(cfg, 1, 3, 5, "fp16", layers=2), load(), "interpreter")
    assert set(run.settings) <= set(plan.settings)


def test_warmup_launches_with_the_class_launch_features(env, tmp_path, monkeypatch):
    """On a class that launches with programmatic dependent launch (another binary per kernel), the warmup plans and
    launches with it, so it compiles the binaries a run will load."""
    from kernel_tables import write_gpu_class

    from neurobrix import ops
    from neurobrix import stack as stack_module
    from neurobrix.tables import load

    root = write_gpu_class(write_tables(tmp_path / "pdl"))  # a Hopper class: the interpreter class lists none
    cfg = store.resolve(NAME).config()
    plan = warmup.plan_warmup(cfg, load(root), "fake-hopper", "fp32", max_prompt=1, max_new=1)
    assert plan.pdl is True
    monkeypatch.setattr(stack_module, "require_runnable", lambda *args: None)  # no Hopper here

    class Stop(Exception):
        pass

    seen = []

    def stop(settings, pdl=False):
        seen.append(pdl)
        raise Stop

    monkeypatch.setattr(ops, "certified", stop)
    with pytest.raises(Stop):
        warmup.launch(cfg, plan, "fp32", torch.device("cpu"))
    assert seen == [True]


# --- the lengths ----------------------------------------------------------------------------------------


def test_representatives_hold_both_ends_of_every_class():
    import random

    rng = random.Random(0)
    for _ in range(300):
        intervals = sorted((a, a + rng.randrange(0, 60)) for a in rng.sample(range(1, 300), rng.randrange(1, 4)))
        reps = warmup.representatives(intervals)
        members = [n for a, b in intervals for n in range(a, b + 1)]
        assert set(reps) <= set(members)
        classes = {}
        for n in members:
            classes.setdefault(-1 if n == 1 else n % 16, []).append(n)
        assert {(min(v), max(v)) for v in classes.values()} == {
            (min(r for r in reps if r in v), max(r for r in reps if r in v)) for v in classes.values()
        }
    assert warmup.representatives([(1, 16)]) == list(range(1, 17))  # a short interval: every length
    assert warmup.representatives([(65, 127)]) == [*range(65, 81), *range(112, 128)]


def test_length_segments_cut_at_bucket_edges_and_at_entry_edges(env):
    from neurobrix.buckets import bucket_of
    from neurobrix.ops import SPECS
    from neurobrix.tables import load

    segments = plan_module.length_segments(load(), "interpreter", 1, 127)
    assert segments[0][0] == 1 and segments[-1][1] == 127
    assert all(a[1] + 1 == b[0] for a, b in zip(segments, segments[1:]))
    rules = {r for s in SPECS.values() for r in s.buckets if r != "exact"}
    for lo, hi in segments:
        assert all(bucket_of(rule, lo) == bucket_of(rule, hi) for rule in rules)
    assert (65, 96) in segments and (97, 100) in segments and (101, 127) in segments  # EDGY's entry edges


# --- the command ----------------------------------------------------------------------------------------


def cli(*args, env=None):
    full = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "neurobrix", *args], capture_output=True, text=True, env=full)


def test_warmup_command_runs_the_kernels_and_reports(env):
    """The kernels really run (the interpreter executes them), progress on stderr, the summary on stdout."""
    result = cli(
        "warmup",
        "--model",
        NAME,
        "--max-prompt",
        "3",
        "--max-tokens",
        "2",
        env={"NEUROBRIX_HOME": str(env / "home"), "NEUROBRIX_TABLES": str(env / "tables")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"warmed up {NAME} on interpreter in fp32: 10 passes over prompts of 1-3 tokens and KV caches of 2-5 positions"
    )
    assert "warmup passes: 10/10 (100%)" in result.stderr and "Traceback" not in result.stderr


def test_warmup_user_mistakes_exit_like_run(env, monkeypatch, capsys):
    for args, code, said in [
        (["--model", "nobody/nothing"], 2, "neurobrix import"),
        (["--model", NAME, "--max-tokens", "0"], 2, "--max-tokens must be >= 1"),
        (["--model", NAME, "--max-prompt", "0"], 2, "--max-prompt must be >= 1"),
        (["--model", NAME, "--dtype", "bf16"], 2, "bf16 cannot run on the interpreter class"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(["warmup", *args])
        assert exit_.value.code == code, args
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err


def test_warmup_without_a_device_exits_5(env):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = cli(
        "warmup",
        "--model",
        NAME,
        env={"NEUROBRIX_HOME": str(env / "home"), "NEUROBRIX_TABLES": str(env / "tables"), "TRITON_INTERPRET": "0"},
    )
    assert result.returncode == 5 and "Traceback" not in result.stderr


def test_warmup_with_nothing_certified_exits_4_with_the_certify_command(env, tmp_path, monkeypatch, capsys):
    partial = {"attention_decode": [({"S": [1, 1]}, CONFIGS["attention_decode"][0][1])]}  # no cache of 2 or more
    monkeypatch.setenv("NEUROBRIX_TABLES", str(write_tables(tmp_path / "partial", partial)))
    with pytest.raises(SystemExit) as exit_:
        main(["warmup", "--model", NAME])
    assert exit_.value.code == 4
    err = capsys.readouterr().err
    assert "attention_decode" in err and "python -m conformance certify --class interpreter" in err


def test_ctrl_c_says_how_far_it_got_and_exits_130(env, monkeypatch, capsys):
    from neurobrix import generate

    real = generate.prefill
    calls = []

    def interrupted(model, prompts):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(model, prompts)

    monkeypatch.setattr(generate, "prefill", interrupted)
    with recorded(), pytest.raises(SystemExit) as exit_:
        main(["warmup", "--model", NAME, "--max-prompt", "8", "--max-tokens", "4"])
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    # the interpreter compiles nothing: nothing is kept, nothing resumed (walk-through 37; a GPU class's line names
    # its cache folder: tests/test_walk37.py)
    assert "warmup stopped after " in err and "the Triton interpreter compiles nothing" in err
    assert "interrupted" in err.splitlines()[-1]


def test_warmup_help():
    result = cli("warmup", "--help")
    assert result.returncode == 0
    for option in ("--model", "--max-tokens", "--max-prompt", "--dtype", "TRITON_CACHE_DIR", "Exit codes"):
        assert option in result.stdout


# --- import offers it ------------------------------------------------------------------------------------


@pytest.fixture
def checkpoint(home):
    return home / NAME


def test_import_on_a_certified_gpu_prints_the_warmup_command(env, checkpoint, monkeypatch, capsys):
    import neurobrix.cli_store as cli_store

    monkeypatch.setattr(cli_store, "_certified_gpu_class", lambda: "nvidia-h200")
    assert main(["import", str(checkpoint)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"imported {NAME}")
    assert out[1].endswith(f"neurobrix warmup --model {NAME}") and "nvidia-h200" in out[1]
    assert out[2].startswith("run it with: ")


def test_import_with_warmup_runs_it_after_the_import(env, checkpoint, monkeypatch, capsys):
    import neurobrix.cli as cli
    import neurobrix.cli_store as cli_store

    asked = []
    monkeypatch.setattr(cli_store, "_certified_gpu_class", lambda: "nvidia-h200")
    monkeypatch.setattr(cli, "cmd_warmup", lambda args: asked.append((args, store.resolve(args.model).name)) or 0)
    assert main(["import", str(checkpoint), "--warmup"]) == 0
    ((args, stored),) = asked  # once, on the model as stored (the import is complete before it starts)
    assert stored == NAME and (args.max_tokens, args.max_prompt, args.dtype) == (None, None, None)
    assert "neurobrix warmup --model" not in capsys.readouterr().out


def test_import_with_warmup_without_a_certified_gpu_says_there_is_nothing_to_compile(env, checkpoint, capsys):
    assert main(["import", str(checkpoint), "--warmup"]) == 0  # the interpreter: no compile cache
    out = capsys.readouterr().out
    assert "nothing to compile" in out and "neurobrix warmup --model" not in out


def test_the_certified_gpu_class_is_looked_for_only_on_a_gpu(monkeypatch):
    import neurobrix.cli_store as cli_store
    import neurobrix.gpu as gpu

    monkeypatch.setattr(gpu, "detect_class", lambda: type("C", (), {"id": "nvidia-h200"})())
    assert cli_store._certified_gpu_class() is None  # TRITON_INTERPRET=1 (conftest)
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli_store._certified_gpu_class() is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli_store._certified_gpu_class() == "nvidia-h200"

    def uncertified():
        from neurobrix.errors import UncertifiedGPUError

        raise UncertifiedGPUError("this GPU is not certified")

    monkeypatch.setattr(gpu, "detect_class", uncertified)
    assert cli_store._certified_gpu_class() is None


# --- on a GPU: a run after the warmup compiles nothing ----------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("cache", ["TRITON_CACHE_DIR", "engine"])
def test_after_warmup_no_run_compiles(tmp_path, cache):
    """A two-layer model of TinyLlama's shapes (the certified tables cover it): `warmup --max-prompt 40
    --max-tokens 24` into an empty Triton cache, then runs of other --max-tokens within those limits add
    nothing to the cache (a compile would write its binary there). The cache is the one TRITON_CACHE_DIR names, or,
    with no variable naming one, the engine's own under NEUROBRIX_HOME (nothing then goes to Triton's default
    folder in the home folder)."""
    import json

    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", *stack.CACHE_ENV)}
    env |= {
        # the repository first; what the environment already adds (dependencies kept beside it) after
        "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "NEUROBRIX_HOME": str(tmp_path / "home"),
    }
    folder = tmp_path / "triton-cache" if cache == "TRITON_CACHE_DIR" else tmp_path / "home" / stack.ENGINE_CACHE
    if cache == "TRITON_CACHE_DIR":
        env["TRITON_CACHE_DIR"] = str(folder)
    else:
        env["HOME"] = str(tmp_path / "user")  # Triton's default cache would be user/.triton/cache
    env.pop("NEUROBRIX_TABLES", None)
    make = (
        "import sys; sys.path.insert(0, 'tests'); from pathlib import Path; import parity; "
        f"parity.catalogue_checkpoint(Path({str(tmp_path / 'tiny-llama-shape')!r}), "
        "'TinyLlama/TinyLlama-1.1B-Chat-v1.0')"
    )

    def neurobrix(*args):
        return subprocess.run(
            [sys.executable, "-m", "neurobrix", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=1800
        )

    def cached():
        return {p.relative_to(tmp_path) for p in folder.rglob("*") if p.is_file()}

    made = subprocess.run([sys.executable, "-c", make], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert made.returncode == 0, made.stderr[-4000:]
    assert neurobrix("import", str(tmp_path / "tiny-llama-shape")).returncode == 0
    warm = neurobrix("warmup", "--model", "tiny-llama-shape", "--max-prompt", "40", "--max-tokens", "24")
    assert warm.returncode == 0, warm.stderr[-4000:]
    before = cached()
    assert before
    lines = []
    for prompt, tokens in (
        ("hello world", "24"),
        ("the model runs fast on certified kernels", "5"),
        ("hello", "1"),
    ):
        done = neurobrix("run", "--model", "tiny-llama-shape", "--prompt", prompt, "--no-chat", "--max-tokens", tokens)
        assert done.returncode == 0, done.stderr[-4000:]
        lines.append(done.stderr.strip().splitlines()[-1])
        # within what the warmup covered (its --max-prompt), or the test would ask for more than it warmed
        assert int(lines[-1].split("prompt ")[1].split(" tokens")[0]) <= 40, lines[-1]
    assert cached() == before, (sorted(cached() - before)[:5], lines)
    assert str(folder) in warm.stdout, warm.stdout  # the report names where the binaries went
    assert not (tmp_path / "user" / ".triton" / "cache").exists()
    print(json.dumps({"warmup": warm.stdout.strip(), "runs": lines}))


def test_a_prompt_counts_as_runnable_only_below_a_certified_capacity(tmp_path):
    """A run of a P-token prompt needs a KV cache of P + 1 positions at least: with decode certified up to
    capacity 32 only, prompts of up to 31 tokens can run, and the report says so (taking the capacities' upper
    end itself for a prompt's claimed a 32-token prompt `run` refuses)."""
    import dataclasses

    from test_runtime_planted import TINY

    from neurobrix import tables

    decode = CONFIGS["attention_decode"][0][1]
    loaded = tables.load(write_tables(tmp_path / "t", {"attention_decode": [({"S": [1, 32]}, decode)]}))
    plan = warmup.plan_warmup(dataclasses.replace(TINY, max_positions=36), loaded, "interpreter", "fp32")
    assert plan.capacities == [(2, 32)] and plan.refused_capacities == [(33, 36)]
    assert plan.prompts == [(1, 31)]


@pytest.mark.parametrize(("max_prompt", "max_tokens"), [(None, None), (30, None), (None, 5), (100, None)])
def test_the_plan_reaches_the_longest_prompt_and_cache_a_run_can_have(tmp_path, max_prompt, max_tokens):
    """A run can have any prompt up to context - 1 tokens (or --max-prompt) and a cache up to the context (or
    prompt + --max-tokens): the plan takes each end as a length of its own and prefills and steps there. The
    coverage test above cannot see a plan stopping one short on its tables (context - 1 makes no binary that
    context - 17 does not); on tables whose entry ends at context - 2 it is another setting."""
    import dataclasses

    from test_runtime_planted import TINY

    from neurobrix import tables

    context = 48
    top = context - 1 if max_prompt is None else min(max_prompt, context - 1)
    edgy = {"linear": [({"M": [1, context - 2]}, CONFIGS["linear"][0][1]), ({"M": [context - 1, None]}, TILED)]}
    loaded = tables.load(write_tables(tmp_path / "t", edgy))
    cfg = dataclasses.replace(TINY, max_positions=context)
    plan = warmup.plan_warmup(cfg, loaded, "interpreter", "fp32", max_prompt=max_prompt, max_new=max_tokens)
    capacity = context if max_tokens is None else min(context, top + max_tokens)
    assert plan.prompts == [(1, top)] and plan.refused_prompts == []
    assert plan.capacities == [(2, capacity)] and plan.refused_capacities == []
    assert top in {p for prompts in plan.prefills.values() for p in prompts}
    assert capacity in plan.decodes
    if top == context - 1:  # the longest prompt's own setting is among those launched
        assert TILED in plan.settings.values()
