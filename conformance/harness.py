"""One kernel call as a conformance case, for any op: its inputs, its run under a given setting, its verdict.

What is specific to an op (how a key shape becomes the engine's call, the float64 reference, the
bound) is its record in ``conformance.specs``; this module is the same for all of them. A setting is
handed straight to the op's launcher (``config=``), and so is the allocator (``empty=``): every
output and scratch buffer the launcher makes is a NaN-poisoned view inside NaN guard regions, and
every input lives inside guard regions too, so an out-of-bounds store is caught by the guards and an
out-of-bounds load turns the output into NaN. On the Triton interpreter the launch is also held to what a GPU
guarantees (``interpreter_memory``): a lane of a load or store outside every tensor it was given fails it even when
no stored result uses the value, and a masked load without a fill reads NaN in its masked lanes. No table, no
environment variable; of the engine, nothing patched.
"""

from __future__ import annotations

import inspect
import math
import os
import random
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from neurobrix.dtypes import torch_dtype
from neurobrix.ops import SPECS

from . import bounds, offsets
from .specs import RECORDS, Refused
from .strategies import GuardBandError, guarded_empty, make_values


def guard_size(shape: tuple[int, ...], device: torch.device | str) -> int:
    """NaN elements on each side of a buffer: enough to take a whole block of rows written past the end
    (up to 256 rows, the largest BLOCK_M is 128) or the buffer's own size again, within a cap."""
    numel = math.prod(shape) if shape else 1
    row = shape[-1] if shape else 1
    cap = 1 << (20 if torch.device(device).type == "cuda" else 22)
    return max(64, min(cap, max(numel, 256 * row)))


@dataclass
class Case:
    kernel: str
    dtype: str
    shape: dict[str, int]
    args: dict[str, Any]
    note: dict[str, Any] = field(default_factory=dict)  # how the key became arguments (for reports)
    # float64 results that depend on the inputs alone, kept across candidates judged on this case
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def describe(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        extra = ", ".join(f"{k}={v}" for k, v in self.note.items())
        return f"{self.kernel} {self.dtype} {dims}" + (f" ({extra})" if extra else "")


def _exponents(dtype: str) -> tuple[int, int]:
    # fp16 tops out at 65504: keep dot products of long rows in range
    return (-3, 1) if dtype == "fp16" else (-4, 4)


class Values:
    """Input tensors: kind and seed drawn by the caller (Hypothesis or a fixed seed), made in float64.

    ``timing``: inputs for certify's timer, which must time what the engine runs: the records' builders then
    lay every tensor out as the engine passes it (no NaN padding, no view of a fused projection where the engine
    passes a tensor of its own) and certify copies each out of its guard regions (``certify.timing_sets``)."""

    def __init__(
        self,
        dtype: str,
        device: torch.device | str,
        seed: int,
        kinds: tuple[str, ...] = ("normal",),
        timing: bool = False,
    ):
        self.dtype, self.device = torch_dtype(dtype), device
        self.rng = random.Random(seed)
        self.kinds = kinds
        self.exponents = _exponents(dtype)
        self.timing = timing

    def layout(self, drawn: Any, engine: Any) -> Any:
        """A layout choice: as ``drawn`` for checks, the engine's own for timing."""
        return engine if self.timing else drawn

    def __call__(self, shape: tuple[int, ...], scale: float = 1.0) -> torch.Tensor:
        kind = self.rng.choice(self.kinds)
        t = make_values(
            shape,
            self.dtype,
            kind,
            self.rng.randrange(2**32),
            self.exponents,
            self.rng.randrange(21),
            device=self.device,
        )
        if scale != 1.0:  # a power of two: exact, keeps every value representable
            t = (t.double() * scale).to(self.dtype)
        return guarded(t, self.device)


def guarded(t: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """A copy of ``t`` on ``device`` inside NaN guard regions (an out-of-bounds load reads NaN)."""
    shape = tuple(t.shape)
    buf = guarded_empty(shape, t.dtype, guard_size(shape, device), device)
    buf.view.copy_(t)
    buf.view.check_guards = buf.check_guards  # run_kernel checks inputs' guards too (a store past a cache)
    return buf.view


def padded(t: torch.Tensor, pad: int, device: torch.device | str) -> torch.Tensor:
    """A copy of ``t`` on ``device`` as a view whose innermost rows are each followed by ``pad`` NaN
    elements, inside NaN guard regions: every stride but the last differs from a contiguous tensor's (a
    kernel that takes one tensor's strides for another's, or assumes contiguity, reads or writes other
    elements), and a load past a row's end reads NaN in every row, not only past the buffer. Its
    ``check_guards`` (run after each launch) fails if a guard element or any padding element was written.
    ``pad`` 0: ``guarded(t)``."""
    if pad == 0:
        return guarded(t, device)
    n = t.shape[-1]
    shape = (*t.shape[:-1], n + pad)
    buf = guarded_empty(shape, t.dtype, guard_size(shape, device), device)
    view = buf.view[..., :n]
    view.copy_(t)

    def check_guards() -> None:
        buf.check_guards()
        written = ~torch.isnan(buf.view[..., n:])
        if written.any():
            raise GuardBandError(
                f"out-of-bounds write past the rows of a {list(t.shape)} {t.dtype} view (row padding of {pad}): "
                f"{int(written.sum())} padding elements overwritten"
            )

    view.check_guards = check_guards  # run_kernel checks it after each launch
    return view


def build(kernel: str, dtype: str, shape: Mapping[str, int], values: Values) -> Case:
    """The engine's call for this key shape, drawn with ``values`` (the op's record says how)."""
    args, note = RECORDS[kernel].build(shape, values)
    return Case(kernel, dtype, dict(shape), args, note)


class Allocations:
    """The allocator handed to a launcher: each buffer a NaN-poisoned view inside NaN guard regions."""

    def __init__(self) -> None:
        self.checks: list[Callable[[], None]] = []

    def empty(self, shape: Any, *, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
        shape = tuple(int(s) for s in shape)
        buf = guarded_empty(shape, dtype, guard_size(shape, device), device)
        self.checks.append(buf.check_guards)
        return buf.view


def interpreter_tf32() -> None:
    """On the Triton interpreter (TRITON_INTERPRET=1), make tl.dot round fp32 operands to tf32 where it is asked
    for input precision "tf32", Triton's default, as a GPU's tensor cores do; the interpreter's dot is NumPy's fp32
    matmul whatever the precision, so a kernel that leaves fp32 operands at the default (or asks for tf32) would
    pass there and be off by up to 2^-10 of each operand on a GPU. Operands rounded to nearest at 10 fraction bits
    (the interpreter's own rounding for TFLOAT32 tensor maps). fp16/bf16 operands, exact in tf32, are left alone,
    and so is every dot that asks for "ieee" (the kernels' fp32 contract). Installed once per process.

    Each dot's tiles are also held to a GPU's least sizes, which the interpreter does not enforce (FACTS.md): Triton's
    own NVIDIA rule (``min_dot_size``: K at least 16 for 16-bit operands, 8 for fp32); a kernel whose block falls
    below it computes the right values here and does not compile there."""

    def wrap(plain: Callable[..., Any]) -> Callable[..., Any]:
        import triton.language as tl
        from triton._C.libtriton import ir
        from triton.backends.nvidia.compiler import min_dot_size
        from triton.runtime import interpreter

        least = min_dot_size(None)  # type: ignore[arg-type]  # the target is not read

        def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
            (m, k), n = a.data.shape[-2:], b.data.shape[-1]
            need = least(a.dtype, b.dtype)
            if m < need[0] or n < need[1] or k < need[2]:
                raise ValueError(
                    f"tl.dot of [{m} x {k}] @ [{k} x {n}] {a.dtype.scalar}: below a GPU's least tile (M >= {need[0]}, "
                    f"N >= {need[1]}, K >= {need[2]}, triton's min_dot_size): the kernel does not compile there"
                )
            if input_precision == ir.INPUT_PRECISION.TF32:
                a, b = (
                    interpreter.TensorHandle(interpreter._round_f32_to_tf32(t.data), t.dtype.scalar)
                    if t.dtype.scalar == tl.float32
                    else t
                    for t in (a, b)
                )
            return plain(self, a, b, d, input_precision, max_num_imprecise_acc)

        return create_dot

    _patch_interpreter("create_dot", wrap)


def _patch_interpreter(
    method: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]], owner: str = "InterpreterBuilder"
) -> None:
    """Replace ``method`` of the interpreter's class ``owner`` (its builder unless named) by ``wrap(method)``, once per
    process, and only when the Triton interpreter runs (TRITON_INTERPRET=1)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    from triton.runtime import interpreter

    builder = getattr(interpreter, owner)
    if getattr(getattr(builder, method), "patched_by_conformance", False):
        return
    patched = wrap(getattr(builder, method))
    patched.patched_by_conformance = True  # type: ignore[attr-defined]
    setattr(builder, method, patched)


def interpreter_launch_order() -> None:
    """On the Triton interpreter (TRITON_INTERPRET=1), run a launch's programs in the order a GPU dispatches them,
    program_id(0) fastest, then 1, then 2, instead of the interpreter's nested loops (axis 2 fastest). No kernel may
    depend on the order of its programs, so a correct one gives the same result either way; but one whose programs
    share scratch they should not (a split-K arrival counter per column block instead of per tile) is right in the
    interpreter's order, where a tile's splits (axis 2) run back to back, and wrong on a GPU, where every tile's first
    split is dispatched before any second one. The same programs, each once: only their order changes. Installed once
    per process."""

    def wrap(plain: Callable[..., Any]) -> Callable[..., Any]:
        def set_grid_idx(self, x, y, z):
            nx, ny, nz = self.grid_dim
            n = (x * ny + y) * nz + z  # the interpreter's n-th program (axis 2 fastest) ...
            plain(self, n % nx, n // nx % ny, n // (nx * ny))  # ... runs as a GPU's n-th (axis 0 fastest)

        return set_grid_idx

    _patch_interpreter("set_grid_idx", wrap)


def _lang_modules(fn: Any) -> frozenset[int]:
    """The triton.language modules a kernel's globals hold (what the interpreter patches for it), by identity."""
    import triton.language as tl

    return frozenset(id(v) for v in fn.__globals__.values() if v is tl or v is tl.core)


# while a launch runs on the interpreter: the language modules its own patching covers (None outside a launch)
_launch_langs: frozenset[int] | None = None
# the language modules a helper's call has patched in this process: Triton never restores those (see below)
_helper_langs: set[int] = set()


def interpreter_device_calls() -> None:
    """On the Triton interpreter (TRITON_INTERPRET=1), a @triton.jit helper called from inside a kernel (the kernels'
    own helpers, and triton.language's, such as ``tl.zeros``) does not patch triton.language again when it is patched
    already. Triton's interpreter patches the language for a launch (its ``GridExecutor``, restored at the launch's
    end), then once more at every call of a helper: each call walks every member of the modules the helper's globals
    hold (``tl``, or ``triton.language.core`` for the language's own helpers) and sets its attributes, and nothing
    restores those. So after a helper's first call the modules it names stay patched for the process, and each later
    call sets the same state again; measured on 2026-12-07, that was about a quarter of a shipped setting's check (10
    of 39 s for an attention_decode split setting, 2.6 of 11 s for a linear skinny one). A helper's call skips it only
    inside a launch, where each module its globals hold is the launch's own or was patched by an earlier helper's call
    in this process; any other call runs the interpreter's own as before. The same kernels, values and programs: only
    the repeated patching goes. Installed once per process."""

    def wrap_launch(plain: Callable[..., Any]) -> Callable[..., Any]:
        def __call__(self, *args, **kwargs):
            global _launch_langs
            outer, _launch_langs = _launch_langs, _lang_modules(self.fn)  # the launch patches these first thing
            try:
                return plain(self, *args, **kwargs)
            finally:
                _launch_langs = outer

        return __call__

    def wrap_device_call(plain: Callable[..., Any]) -> Callable[..., Any]:
        from triton.runtime import interpreter

        def none(fn: Any) -> None:
            return None

        def __call__(self, *args, **kwargs):
            langs = _lang_modules(self.fn)
            if _launch_langs is None or not langs <= _launch_langs | _helper_langs:
                _helper_langs.update(langs)  # patched by the call below, for good
                return plain(self, *args, **kwargs)
            patch = interpreter._patch_lang
            interpreter._patch_lang = none  # for this call only: the state it would set is in place
            try:
                return plain(self, *args, **kwargs)
            finally:
                interpreter._patch_lang = patch

        return __call__

    _patch_interpreter("__call__", wrap_launch, owner="GridExecutor")
    _patch_interpreter("__call__", wrap_device_call, owner="InterpretedFunction")


def interpreter_dtypes() -> None:
    """On the Triton interpreter (TRITON_INTERPRET=1), the NumPy dtype of a Triton type is kept per type. The
    interpreter looks it up for every operation of every program through ``_get_np_dtype``, which builds a dict of 19
    types at each call: about a tenth of a shipped setting's check (measured on 2026-12-07 on one core: 10.5 s against
    9.1 s, the median of four runs each, for three shipped settings). The cache is keyed by the type's class and name
    (a block type, which is unhashable, is named by its shape and element type, a pointer type by what it points to),
    which fix the NumPy dtype; a type without a name is looked up as before. Installed once per process, on the
    interpreter's module function, which every caller in the interpreter reads."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    from triton.runtime import interpreter

    if getattr(interpreter._get_np_dtype, "patched_by_conformance", False):
        return
    plain, known = interpreter._get_np_dtype, {}

    def _get_np_dtype(tt_dtype: Any) -> Any:
        key = (type(tt_dtype), getattr(tt_dtype, "name", None))
        found = known.get(key) if key[1] is not None else None
        if found is None:
            found = plain(tt_dtype)
            if key[1] is not None:
                known[key] = found
        return found

    _get_np_dtype.patched_by_conformance = True  # type: ignore[attr-defined]
    interpreter._get_np_dtype = _get_np_dtype


def interpreter_values() -> None:
    """On the Triton interpreter (TRITON_INTERPRET=1), three of triton.language's constructors, run for every operation
    of every program, take shorter paths to the same objects: ``_unwrap_if_constexpr`` returns a value of a type it
    leaves alone (an int, a float, a bool, None, a string, a tensor) or the value of a constexpr without its chain of
    isinstance tests; a ``block_type`` of a shape of ints takes its shape's values and type, its size and its name from
    the first block type of the same element type and shape (a fresh shape tuple each time, as the constructor makes
    it); a ``tensor`` builds its shape tuple with its type given (the type the tuple would compute: each size's
    constexpr type). Every other input goes through the language's own code, which raises what it raised. The same
    objects, attribute for attribute, so the same kernels, values and programs; about a tenth of a shipped setting's
    check (CPU seconds on 2026-12-07, 25 examples, runs alternated, one thread: an attention_decode split setting
    7.49 and 7.49 without, 6.83 and 6.52 with; a linear skinny one 2.29 and 2.25, 1.98 and 2.10).
    ``tests/test_conformance.py`` holds the output bits of one shipped setting of every kernel equal with it and
    without. Installed once per process."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    import builtins

    from triton.language import core

    if getattr(core._unwrap_if_constexpr, "patched_by_conformance", False):
        return
    plain_unwrap, plain_block = core._unwrap_if_constexpr, core.block_type.__init__
    constexpr, tl_tuple, tuple_type = core.constexpr, core.tuple, core.tuple_type
    unchanged = frozenset({int, float, bool, type(None), str, core.tensor})  # what the plain code returns as it is

    def _unwrap_if_constexpr(o: Any) -> Any:
        kind = type(o)
        if kind in unchanged:
            return o
        if kind is constexpr:
            return o.value
        return plain_unwrap(o)  # lists and tuples (it unwraps their items through this function), subclasses

    blocks: dict[tuple[Any, ...], tuple[list[int], Any, int, str]] = {}

    def block_init(self: Any, element_ty: Any, shape: Any) -> None:
        kind = type(shape)
        sizes = shape if kind is list else shape.values if kind is tl_tuple else None
        name = getattr(element_ty, "name", None)
        if sizes is None or name is None or not all(type(s) is int for s in sizes):
            plain_block(self, element_ty, shape)
            return
        key = (type(element_ty), name, builtins.tuple(sizes))
        found = blocks.get(key)
        if found is None:
            plain_block(self, element_ty, shape)  # validates the shape (raises as before)
            blocks[key] = found = (list(self.shape.values), self.shape.type, self.numel, self.name)
            return
        values, shape_type, numel, block_name = found
        self.element_ty = element_ty
        self.shape = tl_tuple(values, shape_type)  # tuple copies the list: a fresh tuple of the same ints and type
        self.numel = numel
        self.name = block_name

    def tensor_init(self: Any, handle: Any, type: Any) -> None:  # noqa: A002 - the language's own parameter name
        self.handle = handle
        self.shape = sizes = type.shape if type.is_block() else ()  # (set twice, in the language's order)
        self.numel = constexpr(math.prod(sizes))
        self.type = type
        self.dtype = type.scalar
        dims = [constexpr(s) for s in sizes]
        self.shape = tl_tuple(dims, tuple_type([d.type for d in dims]))  # what tuple(dims) computes as its type

    _unwrap_if_constexpr.patched_by_conformance = True  # type: ignore[attr-defined]
    core._unwrap_if_constexpr = _unwrap_if_constexpr
    core.block_type.__init__ = block_init
    core.tensor.__init__ = tensor_init


class MemoryGuardError(RuntimeError):
    """A load or store of the interpreter touched an address outside every tensor the launch was given."""


# while a conformance launch runs on the interpreter: the spans [start, end) in bytes of the current kernel
# launch's tensor arguments and the kernel's name; None outside run_kernel (the guards then do nothing)
_launch: dict[str, Any] | None = None


def tensor_span(t: torch.Tensor) -> tuple[int, int] | None:
    """The bytes [start, end) a tensor (a view: its own elements, not its storage's) covers; None when empty."""
    if t.numel() == 0:
        return None
    last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return start, start + (last + 1) * t.element_size()


def interpreter_memory() -> None:
    """On the Triton interpreter (TRITON_INTERPRET=1), while ``run_kernel`` runs a launch, hold its memory accesses to
    what a GPU guarantees. (1) Every lane a load or store takes (its mask on, or no mask) must address an element of
    one of the launch's tensor arguments (the view's span, not its storage: guard regions and the padding after a
    padded view's last row are outside): a load past the end whose value no stored result uses is harmless on the
    interpreter, where it reads a guard region's NaN into a lane that is never stored, and an illegal access or a
    read of another allocation on a GPU. A lane outside raises ``MemoryGuardError``, naming the kernel. (2) A masked
    load without ``other=`` fills its masked lanes with NaN (integers: their dtype's largest value) where the
    interpreter fills 0 and a GPU leaves them undefined: a result that depends on them (0 x undefined in a dot or a
    sum) is NaN, beyond every bound, instead of right by the interpreter's luck. (3) No two programs of a launch
    store to the same element (atomics aside): on a GPU they run at once and which store lands is a race, while the
    interpreter runs them one after another, each program's reads after the earlier ones' writes (rows of a scratch
    buffer laid out too close, so one row's stores land in the next row's, come out right in its order). A clash
    raises ``MemoryGuardError`` at the launch's end, naming the kernel and both programs. Installed once per
    process."""

    def check(ptrs: Any, mask: Any, what: str) -> Any:
        """The addresses of the lanes taken (mask on), a flat uint64 array (None outside a launch), once each is
        shown to lie inside a tensor argument."""
        if _launch is None:
            return None
        import numpy as np

        addresses = np.broadcast_to(ptrs.data, np.broadcast_shapes(ptrs.data.shape, mask.data.shape))
        if not mask.data.all():
            addresses = addresses[np.broadcast_to(mask.data, addresses.shape)]
        addresses = addresses.astype(np.uint64, copy=False).ravel()
        if addresses.size == 0:
            return addresses
        size = np.uint64(ptrs.get_element_ty().primitive_bitwidth // 8)
        first, last = addresses.min(), addresses.max() + size
        if any(start <= first and last <= end for start, end in _launch["spans"]):
            return addresses  # every lane within one tensor's span (the common case: one comparison each way)
        inside = np.zeros(addresses.shape, dtype=bool)
        for start, end in _launch["spans"]:
            inside |= (addresses >= np.uint64(start)) & (addresses + size <= np.uint64(end))
        if not inside.all():
            outside = addresses[~inside]
            raise MemoryGuardError(
                f"out-of-bounds {what} in {_launch['kernel']}: {outside.size} of {addresses.size} lanes address no "
                f"element of any tensor argument (first at {int(outside[0]):#x}; the arguments span "
                + ", ".join(f"{s:#x}..{e:#x}" for s, e in _launch["spans"])
                + ")"
            )
        return addresses

    def wrap_load(plain: Callable[..., Any]) -> Callable[..., Any]:
        def create_masked_load(self, ptrs, mask, other, cache_policy, is_volatile):
            check(ptrs, mask, "read")
            if other is None and _launch is not None and not mask.data.all():
                import numpy as np
                from triton.runtime import interpreter

                element = ptrs.get_element_ty()
                dtype = interpreter._get_np_dtype(element)
                if np.issubdtype(dtype, np.floating):
                    poison = np.nan
                elif np.issubdtype(dtype, np.integer) and dtype != np.bool_:
                    poison = np.iinfo(dtype).max
                else:
                    poison = 0
                other = interpreter.TensorHandle(np.full(ptrs.data.shape, poison, dtype=dtype), element)
            return plain(self, ptrs, mask, other, cache_policy, is_volatile)

        return create_masked_load

    def wrap_store(plain: Callable[..., Any]) -> Callable[..., Any]:
        def create_masked_store(self, ptrs, value, mask, cache_policy):
            addresses = check(ptrs, mask, "write")
            if _launch is not None and addresses.size:  # (3): the elements this program stores, for the launch's end
                nx, ny, _ = self.grid_dim
                x, y, z = self.grid_idx
                # the lanes as `check` took them, repeats and all: each program's are made unique once, at the
                # launch's end (a copy: without a mask they may be a view of the interpreter's own pointer array)
                _launch.setdefault("stores", []).append((x + nx * (y + ny * z), addresses.copy()))
            return plain(self, ptrs, value, mask, cache_policy)

        return create_masked_store

    def wrap_restore(plain: Callable[..., Any]) -> Callable[..., Any]:
        def _restore_args_dev(self, args_dev, args_hst, kwargs, kwargs_hst):
            stores = _launch.pop("stores", []) if _launch is not None else []
            if len(stores) > 1:
                import numpy as np

                # each element once per program (a program may store one twice), then any element two programs store
                by_program: dict[int, list[Any]] = {}
                for program, addresses in stores:
                    by_program.setdefault(program, []).append(addresses)
                programs = [(p, np.unique(np.concatenate(a))) for p, a in by_program.items()]
                every = np.concatenate([a for _, a in programs])
                owner = np.concatenate([np.full(a.size, p, dtype=np.int64) for p, a in programs])
                order = np.argsort(every, kind="stable")
                every, owner = every[order], owner[order]
                clash = np.flatnonzero(every[1:] == every[:-1])
                if clash.size:
                    i = int(clash[0])
                    nx, ny, _ = interpreter_grid(self)
                    a, b = (int(owner[i]), int(owner[i + 1]))

                    def named(n: int) -> str:
                        return f"({n % nx}, {n // nx % ny}, {n // (nx * ny)})"

                    raise MemoryGuardError(
                        f"{_launch['kernel'] if _launch else 'a kernel'}: programs {named(a)} and {named(b)} both "
                        f"store to the element at {int(every[i]):#x} ({clash.size} such elements): on a GPU they run "
                        "at once and which store lands is a race"
                    )
            return plain(self, args_dev, args_hst, kwargs, kwargs_hst)

        return _restore_args_dev

    def wrap_args(plain: Callable[..., Any]) -> Callable[..., Any]:
        def _init_args_hst(self, args_dev, kwargs):
            args_hst, kwargs_hst = plain(self, args_dev, kwargs)
            if _launch is not None:
                from triton.runtime import interpreter

                spans: list[tuple[int, int]] = []

                def add(arg: Any) -> None:
                    if isinstance(arg, tuple):
                        for item in arg:
                            add(item)
                    elif hasattr(arg, "base") and hasattr(arg, "block_shape"):  # a host TensorDescriptor
                        add(arg.base)
                    elif hasattr(arg, "data_ptr"):
                        span = tensor_span(interpreter._unwrap_tensor(arg))
                        if span is not None:
                            spans.append(span)

                for arg in [*args_hst, *kwargs_hst.values()]:
                    add(arg)
                _launch["spans"] = spans
                _launch["stores"] = []
                _launch["kernel"] = getattr(self.fn, "__name__", "a kernel")
            return args_hst, kwargs_hst

        return _init_args_hst

    _patch_interpreter("create_masked_load", wrap_load)
    _patch_interpreter("create_masked_store", wrap_store)
    _patch_interpreter("_init_args_hst", wrap_args, owner="GridExecutor")
    _patch_interpreter("_restore_args_dev", wrap_restore, owner="GridExecutor")


def interpreter_grid(executor: Any) -> tuple[int, int, int]:
    """The grid of the launch the interpreter's builder last ran (three axes)."""
    from triton.runtime import interpreter

    return tuple(interpreter.interpreter_builder.grid_dim)  # type: ignore[return-value]


@contextmanager
def memory_guarded() -> Iterator[None]:
    """Within: the interpreter's launches are held by ``interpreter_memory``'s guards (installed here if not yet)."""
    global _launch
    interpreter_memory()
    outer, _launch = _launch, {"spans": [], "kernel": "a kernel"}
    try:
        yield
    finally:
        _launch = outer


def run_kernel(case: Case, config: Mapping[str, Any]) -> tuple[torch.Tensor, ...]:
    """The op's Triton launcher on the case with this setting, its memory accesses guarded on the interpreter
    (``interpreter_memory``); every guard region checked after. First each kernel it launches must start as PDL
    needs (``launch_switches``), or ``LaunchSwitchError``."""
    interpreter_tf32()
    interpreter_launch_order()
    interpreter_device_calls()
    interpreter_dtypes()
    interpreter_values()
    record = RECORDS[case.kernel]
    switches = launch_switches(case, config)  # how each kernel would start with PDL (nothing computed)
    if switches:
        raise LaunchSwitchError("\n".join(switches))
    if record.reset is not None:
        record.reset(case)
    allocations = Allocations()
    with memory_guarded(), warnings.catch_warnings():
        # NumPy's note of an IEEE overflow inside an interpreted kernel (exp of the large gates silu_mul's record
        # draws): two lines on stderr per launch, dozens per check or certify run, burying their output; the value
        # it made (inf, then the op's own result) is judged against float64 like any other
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"triton\.runtime\.interpreter")
        out = SPECS[case.kernel].launch(**case.args, config=config, empty=allocations.empty)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    for check in allocations.checks:
        check()
    for arg in case.args.values():  # inputs the kernel writes into (KV caches) or must only read
        if isinstance(arg, torch.Tensor) and hasattr(arg, "check_guards"):
            arg.check_guards()
    return out if isinstance(out, tuple) else (out,)


class LaunchSwitchError(RuntimeError):
    """A launcher starts a kernel with a ``PDL`` switch other than its ``launch_pdl``, or than what it was asked for."""


def launch_switches(case: Case, config: Mapping[str, Any]) -> list[str]:
    """The op's launcher run on the case with ``pdl`` off and on, every Triton launch recorded instead of run: how
    each kernel it launches would start, wrong where a kernel's ``PDL`` switch is not the launch's ``launch_pdl`` or
    either is not what the launcher was asked for. A kernel launched with PDL whose switch is off reads its inputs
    before its predecessor (the split-K or decode merge before the partials exist); one whose switch is on without
    the launch waits for nothing. No example on the interpreter launches with PDL, and ``split`` handing out the right
    pair (``check.switch_problems``) says nothing of a launcher that overrides it for one kernel: each launch's own
    arguments are what the GPU runs. Then each launch's tensors against the layouts the bounds of the launch lint's
    narrow offsets assume (``offsets.layout_problems``: a launcher passing a transposed, sliced or batch-folded tensor
    computes the same values here and wraps on a GPU). Nothing is computed (the kernels are skipped), so this costs a
    launcher's host code per example."""
    import triton.runtime.jit as jit

    classes = [jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:  # pragma: no cover - every Triton this project runs has the interpreter
        pass
    found: list[str] = []
    record, launcher = RECORDS[case.kernel], SPECS[case.kernel].launch
    if "pdl" not in inspect.signature(launcher).parameters:
        return found  # a launcher that cannot be asked for PDL (a test's stand-in): nothing to hold it to
    layouts: list[str] = []  # each launch's tensors against the layouts the bounds assume (offsets.layout_problems)
    for pdl in (False, True):
        launched: list[tuple[str, Any, Any]] = []

        def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> None:
            if not warmup:
                name = getattr(getattr(self, "fn", None), "__name__", "a kernel")
                launched.append((name, kwargs.get("PDL", "absent"), kwargs.get("launch_pdl", "absent")))
                fn = getattr(self, "fn", None)
                if fn is not None and not pdl:  # the same launches either way: their layouts read once
                    bound = {**dict(zip(inspect.signature(fn).parameters, args)), **kwargs}
                    layouts.extend(offsets.layout_problems(f"{fn.__module__}.{name}", bound))

        saved = [(c, c.__dict__["run"]) for c in classes if "run" in c.__dict__]
        for c, _ in saved:
            c.run = run  # type: ignore[method-assign,assignment]
        try:
            if record.reset is not None:
                record.reset(case)
            launcher(**case.args, config=config, empty=Allocations().empty, pdl=pdl)
        finally:
            for c, plain in saved:
                c.run = plain  # type: ignore[method-assign]
        for name, switch, launch in launched:
            if switch is not pdl or launch is not pdl:
                found.append(
                    f"the launcher with pdl={pdl} launches {name} with PDL={switch!r}, launch_pdl={launch!r}: a kernel "
                    "launched with PDL must wait for its predecessor (its switch on), and one without waits for nothing"
                )
    return found + layouts


@dataclass
class Verdict:
    ratio: float  # worst |error| / bound over every output
    explanation: str  # why, when ratio > 1
    relative: float = 0.0  # worst max|error| / max|float64| over the outputs (for reports)


def wrong_outputs(case: Case, outputs: tuple[torch.Tensor, ...]) -> str:
    """Why the kernel's outputs are not the op's (``OpSpec.outputs``: how many, their shapes and dtypes), or "".
    An output of another dtype is judged by nothing else: an fp32 result never rounded to the model's fp16 is
    closer to float64 than any fp16 one, and within every bound."""
    expected = SPECS[case.kernel].outputs(**case.args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    if len(outputs) != len(expected):
        return f"the op returns {len(expected)} outputs, the kernel's launcher {len(outputs)}"
    for n, (got, want) in enumerate(zip(outputs, expected)):
        if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):
            return (
                f"output {n} is {got.dtype} {list(got.shape)}; the op returns {want.dtype} {list(want.shape)} "
                f"(the inputs' dtype)"
            )
    return ""


def judge(case: Case, outputs: tuple[torch.Tensor, ...], config: Mapping[str, Any]) -> Verdict:
    """Compare the kernel's outputs with float64 under each output's bound (the op's record says which),
    after checking they are the op's outputs at all (``wrong_outputs``)."""
    wrong = wrong_outputs(case, outputs)
    if wrong:
        return Verdict(math.inf, wrong)
    try:
        pairs = RECORDS[case.kernel].judge(case, outputs, config)
    except Refused as exc:
        return Verdict(math.inf, str(exc))
    worst, why, relative = 0.0, "", 0.0
    for actual, ref, bound, *label in pairs:  # a pair may name what it compares (several outputs, a table)
        r, scale, largest = bounds.compare(actual, ref, bound)
        if scale > 0:
            relative = max(relative, largest / scale)
        if r > worst:
            worst = r
            why = (f"{label[0]}: " if label else "") + bounds.explain(actual, ref, bound) if r > 1 else ""
    return Verdict(worst, why, relative)
