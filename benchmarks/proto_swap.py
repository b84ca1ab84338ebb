"""Prototype (2026-12-03): decode projections with the operands swapped, before any of it is certified.

The ``skinny`` variant computes y [M, N] = x [M, K] @ W^T as ``tl.dot(x_tile, w_tile^T)``: the rows of x are
the MMA's M side, padded to 16. On Hopper the warpgroup MMA (wgmma) needs 64 rows a warpgroup, so a 16-row
dot compiles to the older mma.sync path, its weight tile brought from shared memory into registers by every
warp. Swapped, y^T [N, M] = W [N, K] @ x^T: the weight tile is the MMA's 64- or 128-row A operand and the few
decode rows its N side (16 columns), the shape wgmma takes straight from shared memory, and the weight tile
can be moved by a TMA tensor descriptor (``TMA`` 1) instead of per-thread loads. The 8B shape's decode step
at batch 8 spends 89 % of its time in these projections, at 91 % of the copy rate (2026-12-02h call 6).

For each model and batch: every decode projection of the engine's plan (q/k/v, o, gate/up, down, the head)
timed with certify's timer (a CUDA graph over input sets rotated past L2) for cuBLAS, the certified setting
and a grid of swapped settings; then the engine's own decode step (``GreedyDecoder``, a CUDA graph replay, PDL
as the class says) beside the same step with each projection swapped for its fastest swapped setting, rounds
interleaved, logits compared with the engine's:

    PYTHONPATH=. python -m benchmarks.proto_swap [--model NAME ...] [--batch 1 8] [--json out.json]
    TRITON_INTERPRET=1 PYTHONPATH=. python -m benchmarks.proto_swap --check-only   # the kernel on CPU
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from typing import Any

import torch
import triton
import triton.language as tl

from benchmarks.proto_fuse import captured_steps, decode_setup, interleaved, report, summary
from neurobrix.ops import SPECS
from neurobrix.ops._common import dependent_launch, dot_precision
from neurobrix.ops.linear import _merge_if_last, tile_counters


@triton.jit
def _linear_swap_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, counter_ptr,
    M, N, K,
    stride_xm, stride_wn, stride_ym,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
    TMA: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    """y^T tile [BLOCK_N, BLOCK_M] = W tile [BLOCK_N, K slice] @ x^T [K slice, BLOCK_M]; split K merged by the
    tile's last program in split order (MERGE "last")."""
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_k = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    in_m = offs_m < M
    in_n = offs_n < N
    steps = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)  # a slice is whole steps; steps past K read zeros
    k_first = pid_k * steps * BLOCK_K
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    if TMA:
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[stride_wn, 1], block_shape=[BLOCK_N, BLOCK_K])
        x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_K])
        for step in range(steps):
            w = w_desc.load([(pid_n * BLOCK_N).to(tl.int32), k_first + step * BLOCK_K])
            x = x_desc.load([(pid_m * BLOCK_M).to(tl.int32), k_first + step * BLOCK_K])
            acc = tl.dot(w, x.T, acc, input_precision=PRECISION)
    else:
        for step in range(steps):
            offs_k = k_first + step * BLOCK_K + tl.arange(0, BLOCK_K)
            in_k = offs_k < K
            w = tl.load(
                w_ptr + offs_n[:, None] * stride_wn + offs_k[None, :], mask=in_n[:, None] & in_k[None, :], other=0.0
            )
            x = tl.load(
                x_ptr + offs_m[None, :] * stride_xm + offs_k[:, None], mask=in_k[:, None] & in_m[None, :], other=0.0
            )
            acc = tl.dot(w, x, acc, input_precision=PRECISION)
    in_y = in_n[:, None] & in_m[None, :]
    y_ptrs = y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None]
    if SPLIT_K == 1:
        if HAS_BIAS:
            acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[:, None]
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=in_y)
    else:
        tl.store(part_ptr + (pid_k * M + offs_m[None, :]) * N + offs_n[:, None], acc, mask=in_y)
        _merge_if_last(
            acc,
            part_ptr + offs_m[None, :] * N + offs_n[:, None],
            M * N,
            in_y,
            counter_ptr + pid_m * tl.num_programs(0) + pid_n,
            b_ptr + offs_n[:, None],
            in_n[:, None],
            y_ptrs,
            HAS_BIAS,
            SPLIT_K,
        )


def swap_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, setting: dict[str, Any], pdl: bool):
    (M, K), N = x.shape, w.shape[0]
    bm, bn, split_k = max(16, triton.next_power_of_2(M)), setting["BLOCK_N"], setting["SPLIT_K"]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    programs = (triton.cdiv(N, bn), triton.cdiv(M, bm), split_k)
    part = torch.empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y
    counters = tile_counters(x.device, programs[0] * programs[1]) if split_k > 1 else y
    if setting["TMA"]:
        device = x.device
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))
    dtype = {torch.float32: "fp32"}.get(x.dtype, "bf16")
    _linear_swap_kernel[programs](
        x, w, b if b is not None else y, y, part, counters, M, N, K, x.stride(0), w.stride(0), y.stride(0),
        HAS_BIAS=b is not None, PRECISION=dot_precision(dtype), BLOCK_M=bm, BLOCK_N=bn,
        BLOCK_K=setting["BLOCK_K"], SPLIT_K=split_k, TMA=setting["TMA"], PDL=pdl, launch_pdl=pdl,
        num_warps=setting["num_warps"], num_stages=setting["num_stages"],
    )  # fmt: skip
    return y


def settings_grid() -> list[dict[str, Any]]:
    return [
        {"BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": sk, "TMA": tma, "num_warps": 4, "num_stages": st}
        for bn, bk, sk, tma, st in itertools.product((64, 128), (128, 256), (1, 2, 4, 8), (0, 1), (3, 5))
    ]


def time_projection(
    key: tuple[int, int, int], certified: dict[str, Any], pdl: bool, grid: list[dict[str, Any]], keep: int = 0
):
    """Microseconds of one call at this (M, N, K): cuBLAS, the certified setting, every swapped setting."""
    from benchmarks.kernels import bench
    from conformance.certify import Task, timing_sets

    M, N, K = key
    sets = timing_sets(Task("linear", "bf16", (("M", M, M), ("N", N, N), ("K", K, K))))
    row: dict[str, Any] = {"key": list(key), "certified": certified}
    row["cublas_us"] = round(bench(SPECS["linear"].torch, sets), 2)
    row["certified_us"] = round(bench(lambda **a: SPECS["linear"].launch(**a, config=certified, pdl=pdl), sets), 2)
    swapped = []
    for setting in grid:
        try:
            us = bench(lambda x, weight, bias=None, s=setting: swap_linear(x, weight, bias, s, pdl), sets)
        except Exception as exc:  # out of shared memory and the like: not a candidate
            swapped.append({"setting": setting, "error": type(exc).__name__})
            continue
        swapped.append({"setting": setting, "us": round(us, 2)})
    timed = [s for s in swapped if "us" in s]
    best = min(timed, key=lambda s: s["us"])
    best_ptr = min((s for s in timed if not s["setting"]["TMA"]), key=lambda s: s["us"])
    row.update(best=best, best_pointer=best_ptr, failed=len(swapped) - len(timed))
    if keep:
        row["fastest"] = sorted(timed, key=lambda s: s["us"])[:keep]
    row["certified_over_best"] = round(row["certified_us"] / best["us"], 3)
    row["cublas_over_best"] = round(row["cublas_us"] / best["us"], 3)
    return row


class Swapped:
    """The engine's certified ops with each decode projection timed above swapped for its fastest setting."""

    def __init__(self, base, chosen: dict[tuple[int, int, int], dict[str, Any]], pdl: bool) -> None:
        self.base, self.chosen, self.pdl = base, chosen, pdl

    def __getattr__(self, name: str):
        return getattr(self.base, name)

    def linear(self, x, w, b=None):
        setting = self.chosen.get((x.shape[0], w.shape[0], x.shape[1]))
        if setting is None:
            return self.base.linear(x, w, b)
        return swap_linear(x, w, b, setting, self.pdl)


def measure(name: str, batch: int, filled: int, steps: int, deadline: float) -> dict:
    cfg, weights, capacity, plan, base, tokens = decode_setup(name, batch, filled, steps)
    grid = settings_grid()
    rows = []
    for (kernel, dtype, key), setting in sorted(plan.settings.items(), key=str):
        if kernel == "linear" and dtype == "bf16" and key[0] == batch and time.monotonic() < deadline:
            rows.append(time_projection(tuple(key), dict(setting), plan.pdl, grid))
            print(f"  {name} b{batch} {rows[-1]['key']}: cuBLAS {rows[-1]['cublas_us']} us, certified "
                  f"{rows[-1]['certified_us']} us, best swapped {rows[-1]['best']}", flush=True)  # fmt: skip
    chosen = {tuple(r["key"]): r["best"]["setting"] for r in rows}
    pointer = {tuple(r["key"]): r["best_pointer"]["setting"] for r in rows}
    ops = {"engine": base, "swap": Swapped(base, chosen, plan.pdl), "swap-pointer": Swapped(base, pointer, plan.pdl)}
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    ref = logits["engine"]
    scale = float(ref.abs().max())
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        **summary(interleaved(decoders, tokens, filled, steps, rounds=7)),
        "max_logit_diff_rel": {v: round(float((logits[v] - ref).abs().max()) / scale, 5) for v in ops},
        "same_token": {v: bool((logits[v].argmax(-1) == ref.argmax(-1)).all()) for v in ops},
        "projections": rows,
    }


def sweep(name: str, batch: int, filled: int, steps: int, deadline: float, top: int = 3) -> dict:
    """Each decode projection swapped alone, with each of its ``top`` fastest swapped settings when timed alone,
    in the engine's step; then every projection swapped at once for the setting that was fastest in the step (where
    it beat the engine's), against the engine again."""
    cfg, weights, capacity, plan, base, tokens = decode_setup(name, batch, filled, steps)
    grid = settings_grid()
    rows, ops = [], {"engine": base}
    for (kernel, dtype, key), setting in sorted(plan.settings.items(), key=str):
        if kernel == "linear" and dtype == "bf16" and key[0] == batch and time.monotonic() < deadline:
            row = time_projection(tuple(key), dict(setting), plan.pdl, grid, keep=top)
            rows.append(row)
            for i, s in enumerate(row["fastest"]):
                ops[f"{key[1]}x{key[2]}#{i}"] = Swapped(base, {tuple(key): s["setting"]}, plan.pdl)
    decoders, _ = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    alone = summary(interleaved(decoders, tokens, filled, steps, rounds=5))
    del decoders
    chosen = {}
    for row in rows:
        key = tuple(row["key"])
        name_i = max((f"{key[1]}x{key[2]}#{i}" for i in range(len(row["fastest"]))), key=alone["vs_engine"].get)
        if alone["vs_engine"][name_i] > 1.002:
            chosen[key] = ops[name_i].chosen[key]
    both = {"engine": base, "swap-where-faster": Swapped(base, chosen, plan.pdl)}
    decoders, logits = captured_steps(cfg, weights, both, batch, filled, capacity, tokens)
    ref = logits["engine"]
    together = summary(interleaved(decoders, tokens, filled, steps, rounds=7))
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        "alone": alone,
        "chosen": {str(k): v for k, v in chosen.items()},
        **together,
        "max_logit_diff_rel": round(float((logits["swap-where-faster"] - ref).abs().max() / ref.abs().max()), 5),
        "projections": rows,
    }


def neighbour(name: str, batch: int, sweep_json: str) -> dict:
    """Does a small kernel before each call make the timer agree with the step? For each projection of a --sweep
    run (its certified setting and the swapped settings it tried in the step), certify's timer alone and with the
    engine's rms_norm (its certified setting, PDL as the class says) launched before every call, the norm's own
    time taken off; beside each, the step's ratio from the sweep."""
    import json

    from benchmarks.kernels import bench
    from conformance.catalogue import load
    from conformance.certify import Task, timing_sets
    from neurobrix.gpu import detect_class
    from neurobrix.plan import generation_calls, resolve
    from neurobrix.tables import load as load_tables

    run = next(r for r in json.load(open(sweep_json)) if r["model"] == name and r["batch"] == batch)
    cfg = load()[0][name]
    plan = resolve(generation_calls(cfg, batch, 128, 344, "bf16"), load_tables(), detect_class().id)
    norm_setting = plan.settings[("rms_norm", "bf16", (batch, cfg.hidden_size))]
    hn = torch.randn(batch, cfg.hidden_size, device="cuda", dtype=torch.bfloat16)
    gn = torch.ones(cfg.hidden_size, device="cuda", dtype=torch.bfloat16)

    def norm() -> None:
        SPECS["rms_norm"].launch(hn, gn, 1e-5, config=norm_setting, pdl=plan.pdl)

    rows = []
    for row in run["projections"]:
        M, N, K = row["key"]
        sets = timing_sets(Task("linear", "bf16", (("M", M, M), ("N", N, N), ("K", K, K))))
        norm_us = bench(lambda **a: norm(), sets)

        def ours(x, weight, bias=None):
            return SPECS["linear"].launch(x, weight, bias, config=row["certified"], pdl=plan.pdl)

        tried = {"certified": ours}
        for i, s in enumerate(row["fastest"]):
            tried[f"{N}x{K}#{i}"] = lambda x, weight, bias=None, s=s["setting"]: swap_linear(
                x, weight, bias, s, plan.pdl
            )
        times = {}
        for label, op in tried.items():
            alone = bench(op, sets)

            def chained(op=op, **a):
                norm()
                return op(**a)

            times[label] = {"alone_us": round(alone, 2), "after_norm_us": round(bench(chained, sets) - norm_us, 2)}
        base = times["certified"]
        for label, t in times.items():
            t["alone_vs_certified"] = round(base["alone_us"] / t["alone_us"], 3)
            t["after_norm_vs_certified"] = round(base["after_norm_us"] / t["after_norm_us"], 3)
            t["step_vs_engine"] = run["alone"]["vs_engine"].get(label, 1.0)
        rows.append({"key": row["key"], "norm_us": round(norm_us, 2), "times": times})
        print(json.dumps(rows[-1]), flush=True)
    return {"model": name, "batch": batch, "projections": rows}


def kernel_profile(name: str, batch: int, sweep_json: str, filled: int, steps: int) -> dict:
    """Where the step's time moves when one projection is swapped: each projection's fastest swapped setting of
    a --sweep run swapped alone, with PDL as the class says and without (each kernel waiting for the previous
    one to end: its own work), the steps timed side by side, and each kernel's duration per step (by name) from
    the PyTorch profiler over 10 replays."""
    import dataclasses
    import json

    run = next(r for r in json.load(open(sweep_json)) if r["model"] == name and r["batch"] == batch)
    cfg, weights, capacity, plan, _, tokens = decode_setup(name, batch, filled, steps)
    results: dict[str, Any] = {"model": name, "batch": batch, "filled": filled}
    for pdl in (plan.pdl, False) if plan.pdl else (False,):
        base = dataclasses.replace(plan, pdl=pdl).ops()
        ops: dict[str, Any] = {"engine": base}
        for row in run["projections"]:
            M, N, K = row["key"]
            if N < 100_000:  # not the head
                ops[f"{N}x{K}#0"] = Swapped(base, {(M, N, K): row["fastest"][0]["setting"]}, pdl)
        decoders, _ = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
        timed = summary(interleaved(decoders, tokens, filled, steps, rounds=5))
        by_kernel: dict[str, dict[str, float]] = {}
        for variant, decoder in decoders.items():
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    decoder.start(tokens, filled)
                    decoder.step()
                torch.cuda.synchronize()
            sums: dict[str, float] = {}
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    label = e.name.split("(")[0][:60]
                    sums[label] = sums.get(label, 0.0) + e.time_range.elapsed_us() / 10
            by_kernel[variant] = {k: round(v, 1) for k, v in sorted(sums.items(), key=lambda kv: -kv[1])[:10]}
        results["pdl" if pdl else "serial"] = {**timed, "kernel_us_per_step": by_kernel}
        print(json.dumps(results), flush=True)
        del decoders
    return results


def timer_probe(name: str, batch: int, sweep_json: str, all_inputs: bool = False) -> dict:
    """Why certify's timer and the step disagree: each projection's certified setting and fastest swapped setting
    timed alone on certify's input sets as they are (inside NaN guard regions), on the same values copied into
    plain tensors, and (``all_inputs``) on plain weights drawn as the step's are (N(0, 0.02^2)) and as N(0, 1); each
    launched with PDL (where the class has it) and without. Call 5 (PDL only, all inputs) is this at e170318."""
    import json

    from benchmarks.kernels import bench
    from conformance.certify import Task, timing_sets

    run = next(r for r in json.load(open(sweep_json)) if r["model"] == name and r["batch"] == batch)
    pdl = decode_plan(name, batch).pdl
    rows = []
    for row in run["projections"]:
        M, N, K = row["key"]
        sets = timing_sets(Task("linear", "bf16", (("M", M, M), ("N", N, N), ("K", K, K))))

        def replaced(make) -> list:
            out = []
            for case in sets:
                args = dict(case.args)
                args["x"], args["weight"] = make(args["x"]), make(args["weight"], weight=True)
                out.append(type(case)(case.kernel, case.dtype, case.shape, args))
            return out

        inputs = {
            "certify's sets": sets,
            "same values, plain": replaced(lambda t, weight=False: t.clone()),
            "N(0, 0.02^2), plain": replaced(
                lambda t, weight=False: (torch.randn_like(t, dtype=torch.float32) * 0.02).to(t.dtype)
            ),
            "N(0, 1), plain": replaced(lambda t, weight=False: torch.randn_like(t, dtype=torch.float32).to(t.dtype)),
        }
        if not all_inputs:
            inputs = {k: v for k, v in inputs.items() if k in ("certify's sets", "same values, plain")}
        settings = {"certified": row["certified"], "swap#0": row["fastest"][0]["setting"]}
        times = {}
        for label, setting in settings.items():
            for how, cases in inputs.items():
                for p in (pdl, False) if pdl else (False,):

                    def op(x, weight, bias=None, s=setting, p=p, certified=label == "certified"):
                        if certified:
                            return SPECS["linear"].launch(x, weight, bias, config=s, pdl=p)
                        return swap_linear(x, weight, bias, s, p)

                    times[f"{label} on {how}{', PDL' if p else ''}"] = round(bench(op, cases), 2)
        rows.append({"key": row["key"], "sets": len(sets), "us": times})
        print(json.dumps(rows[-1]), flush=True)
    return {"model": name, "batch": batch, "projections": rows}


def timer_modes(name: str, batch: int, sweep_json: str) -> dict:
    """Which timer ranks settings as the engine's step does? Each projection of a --sweep run, its certified setting
    and the swapped settings the sweep put in the step, timed alone on plain copies of certify's input sets three
    ways: without PDL; with PDL, back to back (certify's way since bf224dd); with PDL and the engine's rms_norm
    (its certified setting) launched between calls, as a small kernel sits between projections in the step (the
    norm's own time, so launched alone, taken off). Beside each: the step's ratio (engine over variant) from the
    sweep."""
    import json

    from benchmarks.kernels import bench
    from conformance.catalogue import load
    from conformance.certify import Task, timing_sets

    run = next(r for r in json.load(open(sweep_json)) if r["model"] == name and r["batch"] == batch)
    plan = decode_plan(name, batch)
    hidden = load()[0][name].hidden_size
    norm_setting = plan.settings[("rms_norm", "bf16", (batch, hidden))]
    hn = torch.randn(batch, hidden, device="cuda", dtype=torch.bfloat16)
    gn = torch.ones(hidden, device="cuda", dtype=torch.bfloat16)
    rows = []
    for row in run["projections"]:
        M, N, K = row["key"]
        sets = []
        for case in timing_sets(Task("linear", "bf16", (("M", M, M), ("N", N, N), ("K", K, K)))):
            args = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in case.args.items()}
            sets.append(type(case)(case.kernel, case.dtype, case.shape, args))
        spacer_us = bench(lambda **a: SPECS["rms_norm"].launch(hn, gn, 1e-5, config=norm_setting, pdl=True), sets)
        tried = {"certified": row["certified"], **{f"{N}x{K}#{i}": s["setting"] for i, s in enumerate(row["fastest"])}}
        times = {}
        for label, setting in tried.items():

            def op(x, weight, bias=None, s=setting, pdl=False, spacer=False, certified=label == "certified"):
                if spacer:
                    SPECS["rms_norm"].launch(hn, gn, 1e-5, config=norm_setting, pdl=True)
                if certified:
                    return SPECS["linear"].launch(x, weight, bias, config=s, pdl=pdl)
                return swap_linear(x, weight, bias, s, pdl)

            times[label] = {
                "no_pdl_us": round(bench(op, sets), 2),
                "pdl_us": round(bench(lambda s=setting, **a: op(**a, pdl=True), sets), 2),
                "pdl_spacer_us": round(
                    bench(lambda s=setting, **a: op(**a, pdl=True, spacer=True), sets) - spacer_us, 2
                ),
                "step_vs_engine": run["alone"]["vs_engine"].get(label, 1.0),
            }
        rows.append({"key": row["key"], "sets": len(sets), "spacer_us": round(spacer_us, 2), "times": times})
        print(json.dumps(rows[-1]), flush=True)
    return {"model": name, "batch": batch, "projections": rows}


def decode_plan(name: str, batch: int):
    from conformance.catalogue import load
    from neurobrix.gpu import detect_class
    from neurobrix.plan import generation_calls, resolve
    from neurobrix.tables import load as load_tables

    return resolve(generation_calls(load()[0][name], batch, 128, 344, "bf16"), load_tables(), detect_class().id)


def check_kernel() -> None:
    """The swapped kernel against float64 on small shapes (pointer loads on CPU under the interpreter; both
    ways on a GPU), with and without a bias, split K with a ragged last slice, rows not a multiple of 16."""
    device = "cpu" if triton.knobs.runtime.interpret else "cuda"
    dtype = torch.float16 if device == "cpu" else torch.bfloat16  # the interpreter has no bf16 arithmetic
    gen = torch.Generator().manual_seed(0)
    for M, N, K, split_k, bias in ((1, 72, 64, 1, False), (3, 40, 96, 2, True), (8, 64, 160, 3, True),
                                   (19, 48, 224, 4, False)):  # fmt: skip
        x = torch.randn(M, K, generator=gen).to(dtype).to(device)
        w = (torch.randn(N, K, generator=gen) / K**0.5).to(dtype).to(device)
        b = torch.randn(N, generator=gen).to(dtype).to(device) if bias else None
        want = x.double() @ w.double().T + (b.double() if b is not None else 0)
        for tma in (0, 1) if device == "cuda" else (0,):
            setting = {"BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": split_k, "TMA": tma, "num_warps": 4, "num_stages": 2}
            for _ in range(2):  # twice: the arrival counters must be back at zero
                y = swap_linear(x, w, b, setting, False)
                err = float((y.double() - want).abs().max() / want.abs().max())
                assert err < 2**-6, (M, N, K, split_k, tma, err)
            print(f"swap_linear M={M} N={N} K={K} split {split_k} tma {tma}: max error {err:.2e} of max|y|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", nargs="+", default=["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"]
    )
    parser.add_argument("--batch", nargs="+", type=int, default=[8, 1])
    parser.add_argument("--filled", type=int, default=128, help="cache positions filled before the step")
    parser.add_argument("--steps", type=int, default=200, help="replays a timed round")
    parser.add_argument("--minutes", type=float, default=6.0, help="stop timing new projections after this long")
    parser.add_argument("--sweep", action="store_true", help="each projection swapped alone in the step (sweep())")
    parser.add_argument("--neighbour", metavar="SWEEP_JSON", help="time a --sweep run's settings after a norm")
    parser.add_argument("--profile", metavar="SWEEP_JSON", help="profile the step with a sweep's settings")
    parser.add_argument("--timer-probe", metavar="SWEEP_JSON", help="time a sweep's settings on other inputs")
    parser.add_argument("--timer-modes", metavar="SWEEP_JSON", help="rank a sweep's settings with three timers")
    parser.add_argument("--check-only", action="store_true", help="check the kernel on small shapes and stop")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not triton.knobs.runtime.interpret and not torch.cuda.is_available():
        print("proto_swap: needs a GPU of a certified class (or TRITON_INTERPRET=1 with --check-only)", file=sys.stderr)
        return 1
    check_kernel()
    if args.check_only:
        return 0
    deadline = time.monotonic() + 60 * args.minutes
    if args.timer_modes:
        runs = (timer_modes(name, batch, args.timer_modes) for name in args.model for batch in args.batch)
        return report(runs, args.json)
    if args.timer_probe:
        runs = (timer_probe(name, batch, args.timer_probe) for name in args.model for batch in args.batch)
        return report(runs, args.json)
    if args.profile:
        runs = (
            kernel_profile(name, batch, args.profile, args.filled, args.steps)
            for name in args.model
            for batch in args.batch
        )
        return report(runs, args.json)
    if args.neighbour:
        runs = (neighbour(name, batch, args.neighbour) for name in args.model for batch in args.batch)
        return report(runs, args.json)
    how = sweep if args.sweep else measure
    runs = (how(name, batch, args.filled, args.steps, deadline) for name in args.model for batch in args.batch)
    return report(runs, args.json)


if __name__ == "__main__":
    sys.exit(main())
