"""Preflight: every kernel call a generation will make, each resolved to its certified setting, before
any weight is read.

The calls are not a hand-kept list: ``forward_calls`` runs the model's own forward pass on meta tensors
(shapes only: no memory, no arithmetic) with a recording backend, so what preflight checks is what the
forward pass does, by construction. ``resolve`` then finds each call's entry in the class's settings
indexes and returns a :class:`Plan`; one missing entry or more stop the run with one error listing all
of them and the certify command. The model launches every call with the setting the plan holds
(``neurobrix.ops.certified``): no lookup, no file and no environment is read at launch time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .buckets import bucket_of
from .config import ModelConfig
from .dtypes import NAMES as DTYPES
from .errors import CompilerStackError, MissingEntryError, NeuroBrixError, TablesError, UsageError, expect
from .ops import SPECS, PlannedCall, certified
from .ops.spec import Config
from .schema import INTERPRETER, PDL_MAJOR, pdl_capable
from .tables import Tables, certify_command, index_path


def forward_calls(
    cfg: ModelConfig,
    batch: int,
    seq: int,
    capacity: int,
    prefill: bool,
    dtype: str = "bf16",
    layers: int | None = None,
    chunk: int | None = None,
) -> set[PlannedCall]:
    """The kernel calls of a prefill of ``seq`` tokens per sequence (every chunk of it), or of one decode
    step, recorded from the model's own passes.

    ``layers``: record a model of that many layers (the catalogue's walk, over thousands of shapes, uses
    2: every layer after the first makes the same calls); ``None`` records the model as it is.
    ``chunk``: the model's prefill chunk (default: the engine's, ``neurobrix.model.chunk_length``).
    """
    import torch

    from .dtypes import torch_dtype
    from .model import Transformer, meta_weights
    from .ops import recording

    # a program's own lengths and dtype: a prompt of 0 tokens failed in prefill_chunks' ValueError, a negative one in
    # torch's RuntimeError, a dtype such as "fp8" in a KeyError
    expect("the prompt length" if prefill else "the decode step's length", seq, "an integer")
    if seq < 1:
        raise UsageError(f"the prompt length must be an integer >= 1, got {seq}")
    if dtype not in DTYPES:
        raise UsageError(f"the dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if layers is not None:
        cfg = dataclasses.replace(cfg, num_layers=min(cfg.num_layers, layers))
    calls: set[PlannedCall] = set()
    model = Transformer(
        cfg, meta_weights(cfg, torch_dtype(dtype)), recording(calls), batch=batch, capacity=capacity, chunk=chunk
    )
    shape = (batch, seq)
    tokens = torch.zeros(shape, dtype=torch.long, device="meta")
    if prefill:
        model.prefill(tokens)
    else:
        positions = torch.zeros(shape, dtype=torch.long, device="meta")
        logits = model.forward(tokens, positions, torch.zeros((batch,), dtype=torch.int32, device="meta"))
        # a greedy step ends picking its token on the device (neurobrix.generate.GreedyDecoder)
        state = torch.zeros((2, batch), dtype=torch.long, device="meta")
        model.ops.greedy_pick(logits, torch.zeros((batch, 1), dtype=torch.long, device="meta"), state)
    return calls


def generation_calls(
    cfg: ModelConfig,
    batch: int,
    prompt_len: int,
    capacity: int,
    dtype: str = "bf16",
    layers: int | None = None,
    chunk: int | None = None,
) -> set[PlannedCall]:
    """Every call of generating with this prompt length and KV-cache capacity: the prefill, then decode."""
    return forward_calls(cfg, batch, prompt_len, capacity, True, dtype, layers, chunk) | forward_calls(
        cfg, batch, 1, capacity, False, dtype, layers, chunk
    )


@dataclass(frozen=True)
class Plan:
    """Every planned call with its certified setting, on one class."""

    class_id: str
    settings: Mapping[PlannedCall, Config]
    pdl: bool = False  # the class's launch features say programmatic dependent launch pays
    tables: Tables | None = dataclasses.field(default=None, compare=False, repr=False)  # resolved from these

    def ops(self) -> Any:
        """The Triton ops launching each call with its planned setting (and the class's launch features), once
        this machine is found to be of the plan's class, on its stack (``neurobrix.stack.require_runnable``):
        planning for any class is free, launching is not."""
        from .stack import require_runnable
        from .tables import load

        require_runnable(self.class_id, self.tables)
        settings = certified_settings(self.settings, self.pdl, self.tables, self.class_id, "this plan")
        ops = certified(settings, self.pdl, admit=device_of_class(self.class_id, self.tables))
        ops.origin = Plan(self.class_id, settings, self.pdl, self.tables if self.tables is not None else load())
        return ops


def require_current(ops: Any) -> None:
    """Refuse (UsageError) to generate with ops a plan made (a loaded model's) whose settings the tables found now
    no longer certify: the tables re-certified on disk since it was loaded, or NEUROBRIX_TABLES pointed at another
    folder, where a fresh process refuses the model (or runs other settings). A long-lived program's model ran on the
    old settings. Tables unchanged cost a stat; changed, the model's settings are resolved in them once again and the
    ops go on with them where every one is what they certify (a re-certification that kept them). Refuse
    (CompilerStackError) ops whose kernels were changed in the process since they were made (``neurobrix.kernel_code``):
    a kernel, a spec, or the model's own op rebound after the model was loaded."""
    from .kernel_code import ops_problem
    from .stack import require_runnable
    from .tables import current

    held = getattr(ops, "origin", None)
    if not isinstance(held, Plan) or held.tables is None:
        return  # PyTorch's ops, or a program's own (neurobrix.ops.certified): no plan to hold them to
    problem = ops_problem(ops)  # a kernel, a spec or the model's own op replaced since the plan's ops were made
    if problem:
        raise CompilerStackError(f"{problem} (nothing was generated).")
    now = current(held.tables)
    if now is held.tables:
        return
    try:
        require_runnable(held.class_id, now)
        certified_settings(held.settings, held.pdl, now, held.class_id, "this model")
    except NeuroBrixError as exc:
        why = str(exc).split("\n")[0].rstrip(":")
        for said in (" (nothing was loaded)", " (nothing was launched)."):
            why = why.replace(said, "")
        if isinstance(exc, MissingEntryError) and len(exc.lines) > 2:  # the calls, less the certify command's lines
            why += f" ({'; '.join(' '.join(line.split('(')[0].split()) for line in exc.lines[1:-2])})"
        raise UsageError(
            f"the tables this model's settings were resolved from ({held.tables.root}) are not the tables found now "
            f"({now.root}, {now.location.origin}: re-certified since the model was loaded, or another folder named), "
            f"and these refuse them: {why}. Load the model again (nothing was generated)"
        ) from exc
    ops.origin = dataclasses.replace(held, tables=now)


def device_of_class(class_id: str, tables: Tables | None) -> Callable[[Any], None]:
    """What a plan's ops check of each device their calls run on, before its first launch: a GPU of the plan's class
    (``neurobrix.stack.require_runnable`` checked the GPU current when the ops were made; a program may make another
    current afterwards, ``torch.cuda.set_device(1)``, and Triton launches on the current GPU)."""
    from .stack import require_class_device
    from .tables import load

    loaded = tables if tables is not None else load()
    return lambda device: require_class_device(class_id, device, loaded)


def certified_settings(
    settings: Any, pdl: Any, tables: Tables | None, class_id: str, what: str
) -> dict[PlannedCall, Config]:
    """``settings`` (call -> setting) and ``pdl`` as launched, copied, once each setting is found to be the one the
    class's table certifies for its call and ``pdl`` the class's launch features (UsageError naming the call, the
    table and what differs, else). A plan is a plain object a program may build or change itself (``Plan(...)``,
    ``dataclasses.replace``, a WarmupPlan's settings): what it launches must still be what resolve finds."""
    from .tables import load

    loaded = tables if tables is not None else load()
    if not isinstance(settings, Mapping):
        raise UsageError(f"{what}'s settings must be a mapping of kernel calls to settings, got {settings!r}")
    if class_id not in loaded.classes:
        raise UsageError(f"unknown GPU class {class_id!r}; classes here: {', '.join(sorted(loaded.classes))}")
    klass = loaded.classes[class_id]
    # PDL off is the launch every proof ran (conformance checks launch without it), so a plan may always turn it
    # off (benchmarks.e2e's triton-serial, the GPU test that PDL changes no result); on, it needs a GPU that has
    # it, as class.yaml's launch does: CONTRIBUTING measures whether it pays before a class lists it
    if type(pdl) is not bool or (pdl and not pdl_capable(klass)):
        raise UsageError(
            f"{what} launches with pdl={pdl!r}, where class {class_id}'s {klass.path} is not a CUDA class of compute "
            f"capability {PDL_MAJOR}.0 or later (programmatic dependent launch needs one; pdl must be true or false); "
            "nothing was launched"
        )
    # bf16 on the interpreter class, whatever its tables hold: run and warmup refuse it, certify does not write it (the
    # Triton interpreter computes bf16 on bit patterns), so an entry there was never proven; Plan.ops and
    # warmup.launch launched it for a program that resolved such calls itself
    bf16 = sorted(describe(call).strip() for call in settings if _is_call(call) and call[1] == "bf16")
    if class_id == INTERPRETER and bf16:
        raise UsageError(
            f"{what} launches bf16 calls on the interpreter class ({bf16[0]}{' and more' if len(bf16) > 1 else ''}): "
            "the Triton interpreter computes bf16 wrongly (an upstream bug), so no bf16 setting is certified there "
            "whatever its tables hold; plan fp32 or fp16 there, bf16 on a GPU class (nothing was launched)"
        )
    # a call that is none, or without a certified setting, is refused as resolve refuses it
    found = resolve(list(settings), loaded, class_id).settings
    copied: dict[PlannedCall, Config] = {}
    for call, config in settings.items():
        if not isinstance(config, Mapping) or _typed(config) != _typed(found[call]):
            index = loaded.index(class_id, call[0])
            raise UsageError(
                f"{what} holds {config!r} for {describe(call).strip()}, not the setting "
                f"{index.path if index is not None else class_id} certifies for that call ({found[call]}): a plan "
                "launches the settings neurobrix.plan.resolve finds, and nothing else (nothing was launched)"
            )
        copied[call] = dict(config)
    return copied


def _is_call(call: Any) -> bool:
    """Whether ``call`` is shaped as a kernel call (op, dtype, key values) of an op this neurobrix has."""
    return (
        isinstance(call, tuple)
        and len(call) == 3
        and isinstance(call[0], str)
        and call[0] in SPECS
        and isinstance(call[2], tuple)
        and len(call[2]) == len(SPECS[call[0]].key)
        and all(type(v) is int for v in call[2])
    )


def _typed(config: Mapping[str, Any]) -> dict[str, tuple[type, Any]]:
    """A setting with each value's type beside it: True == 1 == 1.0 in Python, not to Triton."""
    return {name: (type(value), value) for name, value in config.items()}


def _pow2(value: Any) -> bool:
    return type(value) is int and value >= 1 and value & (value - 1) == 0


# What each meta-parameter or launch option of a setting may be, whatever its kernel: the values certify's candidates
# take (neurobrix/ops/*: candidates). A table holding another value (a block of 48 or 0, a split of 0, True for a
# block, 3 warps) was never certified by this neurobrix: its launch fails inside Triton (a traceback after the weights
# were loaded), divides by zero, or runs a setting nobody proved (BLOCK_K true is a block of 1).
VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "num_warps": (lambda v: _pow2(v) and v <= 32, "a power of two from 1 to 32"),
    "num_stages": (lambda v: type(v) is int and v >= 1, "an integer >= 1"),
    "SPLITS": (lambda v: type(v) is int and v >= 1, "an integer >= 1"),
    "SPLIT_K": (lambda v: type(v) is int and v >= 1, "an integer >= 1"),
    "GROUP_M": (lambda v: type(v) is int and v >= 1, "an integer >= 1"),
    "SUBTILE": (lambda v: type(v) is int and v in (0, 1), "0 or 1"),
    "WARP_SPECIALIZE": (lambda v: type(v) is bool, "true or false"),
    "MERGE": (lambda v: v in ("kernel", "last"), '"kernel" or "last"'),
}
BLOCK = (_pow2, "a power of two >= 1")  # every BLOCK_*: a tl.arange's length


def value_problem(config: Mapping[str, Any]) -> str | None:
    """Why a setting's values are none that its kernel was certified with (None: they may be): see VALUES."""
    for name, value in config.items():
        check, what = BLOCK if name.startswith("BLOCK_") else VALUES.get(name, (lambda v: True, ""))
        if not check(value):
            return f"has {name}={value!r}, where this neurobrix's kernels take {what}"
    return None


# What no kernel can run, from the limits of what runs it (each a fact of Triton or the GPU, not a choice here):
# - Triton's largest tensor, TRITON_MAX_TENSOR_NUMEL elements: a BLOCK_* is a tl.arange's length, and every op's
#   kernel makes a 2-D tile of every two blocks of its setting (linear's N x K, M x N and M x K, attention's queries
#   x keys, silu_mul's rows x columns), so each block, and each product of two, must be within it;
# - SPLIT_K and SPLITS are a grid axis other than the first (linear's split-K axis z, attention_decode's y), whose
#   programs a GPU counts to 65,535 at most (CUDA's maxGridSize[1] and [2], on every compute capability);
# - every other count is a C int of Triton's compiler options or a program id: below 2**31;
# - the shared memory a setting needs at a call's shape (the op's own lower estimate, its spec's shared_memory:
#   pipelined tiles times num_stages) must fit a block's opt-in shared memory on the class's GPU (SHARED_MEMORY by
#   compute capability), or on any GPU listed there for a class without one (the interpreter's).
# A table holding more was never certified by this neurobrix: Triton fails at its launch (a traceback after the
# weights were loaded), the interpreter ignores it or runs for ever, and nobody proved it.
GRID_AXIS = 65_535
INT32 = 2**31 - 1
SPLIT_COUNTS = ("SPLIT_K", "SPLITS")
# opt-in shared memory per block, bytes, by CUDA compute capability (the CUDA C++ Programming Guide's table)
SHARED_MEMORY = {
    (7, 0): 98_304,
    (7, 5): 65_536,
    (8, 0): 166_912,
    (8, 6): 101_376,
    (8, 7): 166_912,
    (8, 9): 101_376,
    (9, 0): 232_448,
    (10, 0): 232_448,
    (12, 0): 101_376,
}


def config_problem(kernel: str, config: Mapping[str, Any]) -> str | None:
    """Why this neurobrix's ``kernel`` would not run ``config`` as it was certified, whatever the call (None: it
    would): a variant it lacks, a meta-parameter it lacks or does not know, a value no kernel takes. The one rule that
    run's preflight (:func:`resolve`), ``doctor``, ``python -m conformance check`` and certify's writes apply, so that
    no setting passes a check on the interpreter (which ignores a parameter its kernel does not have) that run refuses.
    """
    spec = SPECS[kernel]
    variant = config.get("variant")
    if spec.variants and variant not in spec.variants:
        known = ", ".join(spec.variants)
        return f"names variant {variant!r}, which this neurobrix's '{kernel}' kernel does not have ({known})"
    return spec.setting_problem(config) or value_problem(config)


def max_tensor_numel() -> int:
    """Triton's largest tensor, in elements (what tl.arange and tl.zeros refuse beyond)."""
    from triton.language import TRITON_MAX_TENSOR_NUMEL

    return int(TRITON_MAX_TENSOR_NUMEL)


def shared_memory_limit(gpu_class: Any) -> tuple[int, str]:
    """(a block's shared memory on the class's GPU, what it is): by its compute capability, else the most any
    listed GPU has (the interpreter's class, or a compute capability not listed)."""
    cc = getattr(gpu_class.match, "compute_capability", None) if gpu_class is not None else None
    if cc in SHARED_MEMORY:
        return SHARED_MEMORY[cc], f"a block's on compute capability {cc[0]}.{cc[1]}"
    return max(SHARED_MEMORY.values()), "the most a block has on any GPU"


def limit_problem(kernel: str, config: Mapping[str, Any], call: PlannedCall, gpu_class: Any = None) -> str | None:
    """Why no kernel can run ``config`` for ``call`` (None: within every limit): see SHARED_MEMORY's comment."""
    numel = max_tensor_numel()
    blocks = sorted((name, value) for name, value in config.items() if name.startswith("BLOCK_"))
    for i, (name, value) in enumerate(blocks):
        if value > numel:
            return f"has {name}={value}, beyond Triton's largest tensor (TRITON_MAX_TENSOR_NUMEL {numel} elements)"
        for other, second in blocks[i + 1 :]:
            if value * second > numel:
                return (
                    f"has {name}={value} and {other}={second}, a tile of {value * second} elements in its kernel, "
                    f"beyond Triton's largest tensor (TRITON_MAX_TENSOR_NUMEL {numel})"
                )
    for name, value in config.items():
        if name in SPLIT_COUNTS and value > GRID_AXIS:
            return f"has {name}={value}, a grid axis of more programs than a GPU launches ({GRID_AXIS})"
        if type(value) is int and value > INT32:
            return f"has {name}={value}, beyond the 32-bit integers Triton compiles it as ({INT32})"
    spec = SPECS[kernel]
    dtype, key = call[1], call[2]
    from .dtypes import torch_dtype

    need = spec.shared_memory(config, dict(zip(spec.key, key)), torch_dtype(dtype).itemsize)
    limit, what = shared_memory_limit(gpu_class)
    if need > limit:
        return f"needs at least {need} bytes of shared memory, more than {what} ({limit})"
    return None


def _pow2_at_least(value: int) -> int:
    """triton.next_power_of_2: the block a launcher makes to cover ``value`` lanes."""
    return 1 << max(0, value - 1).bit_length()


# The blocks a launcher derives from the call's shape rather than from its setting (its tl.arange lengths), and the 2-D
# tiles its kernels make of them with the setting's: rms_norm's row block next_pow2(N) (neurobrix/ops/rms_norm.py),
# attention's head-dim block max(16, next_pow2(D)) and decode's group block max(16, next_pow2(G)) and merge block
# next_pow2(SPLITS) (attention.py), rotary's 2 x next_pow2(D / 2) for v's copy (rotary.py), greedy_pick's parts
# next_pow2(ceil(V / BLOCK_V)) (pick.py). A setting certified over a domain with no upper end (the interpreter class's
# one domain per kernel) reaches shapes whose tiles Triton cannot make: a model of hidden size 16,385 resolved the
# interpreter's rms_norm setting (BLOCK_M 64: a 64 x 32,768 tile), loaded its weights, and failed at the first launch
# in Triton's own error (a traceback).
def _derived_blocks(kernel: str, config: Mapping[str, Any], dims: Mapping[str, int]) -> dict[str, int]:
    if kernel == "rms_norm":
        return {"BLOCK_N": _pow2_at_least(dims["N"])}
    if kernel.startswith("attention_"):
        blocks = {"BLOCK_D": max(16, _pow2_at_least(dims["D"]))}
        if kernel == "attention_decode":
            blocks |= {"BLOCK_G": max(16, _pow2_at_least(dims["G"])), "BLOCK_S": _pow2_at_least(config["SPLITS"])}
        return blocks
    if kernel == "rotary":
        return {"BLOCK_E": 2 * _pow2_at_least(dims["D"] // 2)}
    if kernel == "greedy_pick":
        return {"PARTS": _pow2_at_least(-(-dims["V"] // config["BLOCK_V"]))}
    return {}


TILES: dict[str, tuple[tuple[str, str], ...]] = {
    "rms_norm": (("BLOCK_M", "BLOCK_N"),),
    "attention_prefill": (("BLOCK_M", "BLOCK_D"), ("BLOCK_N", "BLOCK_D")),
    "attention_chunk": (("BLOCK_M", "BLOCK_D"), ("BLOCK_N", "BLOCK_D")),
    "attention_decode": (
        ("BLOCK_G", "BLOCK_D"),
        ("BLOCK_G", "BLOCK_N"),
        ("BLOCK_N", "BLOCK_D"),
        ("BLOCK_S", "BLOCK_D"),
    ),
    "rotary": (("BLOCK_H", "BLOCK_E"),),
}


def shape_problem(kernel: str, config: Mapping[str, Any], call: PlannedCall) -> str | None:
    """Why ``config``, runnable as such (:func:`limit_problem`), cannot run ``call``: a block its launcher derives
    from the call's shape, alone or in a tile with another, beyond Triton's largest tensor (None: it can)."""
    numel = max_tensor_numel()
    derived = _derived_blocks(kernel, config, dict(zip(SPECS[kernel].key, call[2])))
    blocks = {**{k: v for k, v in config.items() if k.startswith("BLOCK_")}, **derived}
    for name, value in derived.items():
        if value > numel:
            return f"makes {name}={value}, beyond Triton's largest tensor ({numel} elements)"
    for first, second in TILES.get(kernel, ()):
        tile = blocks[first] * blocks[second]
        if tile > numel and (first in derived or second in derived):
            return (
                f"makes a {first}={blocks[first]} x {second}={blocks[second]} tile ({tile} elements), "
                f"beyond Triton's largest tensor ({numel})"
            )
    return None


def describe(call: PlannedCall) -> str:
    kernel, dtype, key = call
    return f"{kernel:<18} {dtype} " + ", ".join(f"{d}={v}" for d, v in zip(SPECS[kernel].key, key))


def entry_problem(kernel: str, config: Mapping[str, Any], domain: Any, gpu_class: Any = None) -> str | None:
    """Why this neurobrix runs ``config`` nowhere in ``domain`` (a :class:`~neurobrix.schema.Domain`), None when it
    runs it at least at the domain's smallest call in each of its dtypes: :func:`config_problem`, then
    :func:`limit_problem` and :func:`shape_problem` at that call (:func:`smallest_call_problem`), the test
    :func:`resolve` applies before it calls a refused setting the tables' fault (exit 3) rather than the call's.
    ``doctor`` and ``python -m conformance check`` hold every entry to it, so that neither passes a table run refuses
    (the interpreter ignores num_stages and the GPU's shared memory: a setting of num_stages 10**6 passed its check
    there, and doctor said ready)."""
    return config_problem(kernel, config) or smallest_call_problem(kernel, config, domain, gpu_class)


def smallest_call_problem(kernel: str, config: Mapping[str, Any], domain: Any, gpu_class: Any = None) -> str | None:
    """:func:`entry_problem` of a setting :func:`config_problem` passes."""
    for dtype in domain.dtypes:
        smallest = (kernel, dtype, tuple(lo for _, lo, _ in domain.ranges))
        problem = limit_problem(kernel, config, smallest, gpu_class) or shape_problem(kernel, config, smallest)
        if problem:
            return f"{problem} at the smallest call of its domain ({' '.join(describe(smallest).split())})"
    return None


def resolve(calls: Iterable[PlannedCall], tables: Tables, class_id: str, certify_hint: str = "") -> Plan:
    """Each call's certified setting on ``class_id``; one MissingEntryError listing every call without one.

    ``certify_hint``: extra certify arguments that cover exactly this run (e.g. its config and lengths).
    """
    # the Python API's other arguments: a list as the class died in a TypeError, tables=None in an AttributeError
    if not isinstance(tables, Tables):
        raise UsageError(f"resolve's tables must be a neurobrix.tables.Tables (tables.load()), got {tables!r}")
    expect("resolve's class_id", class_id, "a string")
    expect("resolve's certify_hint", certify_hint, "a string")
    if class_id not in tables.classes:
        raise UsageError(f"unknown GPU class {class_id!r}; classes here: {', '.join(sorted(tables.classes))}")
    settings: dict[PlannedCall, Config] = {}
    missing: list[str] = []
    kernels: set[str] = set()
    dtypes: set[str] = set()
    calls = list(calls)
    for call in calls:  # the Python API's calls: what a recorded forward pass gives (op, dtype name, its key)
        if not _is_call(call) or call[1] not in DTYPES:
            raise UsageError(
                f"not a kernel call: {call!r}; a call is (op, dtype, key values), the op one of {', '.join(SPECS)}, "
                f"the dtype one of {', '.join(DTYPES)}, one integer per dimension of the op's key"
            )
    for call in sorted(calls):
        kernel, dtype, key = call
        spec = SPECS[kernel]
        index = tables.index(class_id, kernel)
        if index is not None and (index.key, index.rules) != (spec.key, spec.buckets):
            raise TablesError(
                f"{index.path}: keyed by {list(zip(index.key, index.rules))} but this neurobrix's '{kernel}' kernel "
                f"is keyed by {list(zip(spec.key, spec.buckets))}; these tables were certified for another "
                f"neurobrix. Re-certify: {certify_command(class_id, [kernel], again=True)}"
            )
        entry = index.lookup(dtype, key) if index is not None else None
        if entry is None:
            where = index.path if index is not None else f"{index_path(tables.root, class_id, kernel)}: no table"
            missing.append(f"  {describe(call)}   ({where})")
            kernels.add(kernel)
            dtypes.add(dtype)
        else:
            assert index is not None  # the entry is the index's
            klass = tables.classes[class_id]
            problem = config_problem(kernel, entry.config) or limit_problem(kernel, entry.config, call, klass)
            problem = problem or shape_problem(kernel, entry.config, call)
            if problem:  # refused before loading, not at its launch (nor ignored by the interpreter)
                # a setting that cannot run even the smallest call of its entry's domain was never certified by this
                # neurobrix (the tables' fault); one that runs there but not at this call's shape (a model's head dim
                # of 512, or a hidden size of 16,385, in a domain with no upper end: the interpreter's) leaves this
                # call without a certified setting, which re-certifying the class would not change
                smallest = (kernel, dtype, tuple(lo for _, lo, _ in entry.domain.ranges))
                if (
                    config_problem(kernel, entry.config)
                    or limit_problem(kernel, entry.config, smallest, klass)
                    or shape_problem(kernel, entry.config, smallest)
                ):
                    again = certify_command(class_id, [kernel], again=True)
                    raise TablesError(
                        f"{index.path}: the setting for {describe(call).strip()} {problem}; these tables were "
                        f"certified for another neurobrix. Re-certify: {again}"
                    )
                raise MissingEntryError(
                    f"this model cannot run on GPU class {class_id}: the setting {index.path} certifies for "
                    f"{describe(call).strip()} ({dict(entry.config)}) {problem} at this call's shape, so no certified "
                    "setting runs that call (nothing was loaded)"
                )
            settings[call] = dict(entry.config)
    if missing:
        raise MissingEntryError(
            f"this model cannot run on GPU class {class_id} in {', '.join(sorted(dtypes))}: {len(missing)} kernel "
            "call(s) have no certified setting (nothing was loaded):",
            *missing,
            f"  certify them (from a source checkout of neurobrix, on a machine of class {class_id}):",
            f"    {certify_command(class_id, sorted(kernels), sorted(dtypes), certify_hint)}",
        )
    return Plan(class_id, settings, "pdl" in tables.classes[class_id].launch, tables)


def length_segments(tables: Tables, class_id: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi] cut into the longest runs of lengths that every certified lookup treats alike.

    A cut falls at every bucket edge of the ops' length rules (the non-``exact`` ones of their specs, by
    which :func:`resolve` finds an entry) and at every edge of the class's entry domains in those
    dimensions (a wide entry need not end on a bucket edge). At batch 1 a length-like key value of a call
    is the prompt length, the KV-cache capacity or 1, so within one segment every prompt (or every
    capacity) resolves to the same settings: how ``neurobrix warmup`` lists the buckets a run can hit.
    (A prompt prefilled in chunks also makes its first pass's calls, those of a shorter prompt with
    segments of its own: see neurobrix.warmup.)
    """
    if lo > hi:
        return []
    starts = {lo}
    for spec in SPECS.values():
        index = tables.index(class_id, spec.name)
        for dim, rule in zip(spec.key, spec.buckets):
            if rule == "exact":
                continue
            value = lo
            while value <= hi:
                first, last = bucket_of(rule, value)
                starts.add(first)
                value = last + 1
            for entry in index.entries if index is not None else ():
                for name, first, last in entry.domain.ranges:
                    if name == dim:
                        starts.update({first} if last is None else {first, last + 1})
    cuts = sorted(s for s in starts if lo <= s <= hi)
    return [(first, nxt - 1) for first, nxt in zip(cuts, [*cuts[1:], hi + 1])]
