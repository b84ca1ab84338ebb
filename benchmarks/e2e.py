"""End-to-end generation speed of a catalogue model shape (random bf16 weights) on each backend.

    PYTHONPATH=. python -m benchmarks.e2e [--model NAME ...] [--batch 1 8] [--prompt 128 512 2048] [--json out.json]

Without --model, every catalogue model. Backends: ``triton`` (this engine, certified kernels),
``torch`` (this engine on PyTorch's kernels), ``compile`` (the peer a PyTorch user picks: a gpt-fast-style
Llama with its decode step under torch.compile, benchmarks/peer.py, on the same weights; its compile time
is reported) and ``hf`` (transformers eager, at the first prompt length only). For every prompt length
(--prompt, default 128, 512 and 2,048 tokens): time to first token over --repeats prefills of the
prompt (min / median / max: the spread of the repeats) and prefill tok/s = batch x prompt / median
TTFT; at the first prompt length also decode tok/s and decode speed as a share of the HBM roofline
(weights plus the KV cache read per step, at the copy rate measured in the same run). At the end one
table with the ratios to the torch backend and to the compile peer, all measured side by side in this
one run.

Weights are random (N(0, 0.02)), built directly on the GPU in the engine's fused layout; the prompt
is random token ids. Both backends replay the decode step as a CUDA graph. The triton backend runs
only on certified settings: preflight refuses a shape the tables do not cover, before any weight.
Time to first token is the engine's own statistic (from the start of the prefill to the first token on
the host), after warm-up prefills at that length (which capture it as a CUDA graph, as a run does before
timing it: ``neurobrix.generate.PrefillGraphs``); "GPU ms" is that graph's replay timed by CUDA events,
so TTFT / GPU ms is what the host adds. The peer's is its eager prefill to its first token.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import time
from collections.abc import Iterator
from unittest import mock

import torch

from conformance.catalogue import load
from conformance.rank import random_weights
from neurobrix.generate import Sampling, generate_batch
from neurobrix.gpu import detect_class
from neurobrix.model import Transformer, Weights
from neurobrix.ops import TORCH
from neurobrix.plan import generation_calls, resolve
from neurobrix.tables import load as load_tables

# the class's launch features; PDL forced on; forced off; the decode loop before 2026-12-02e (see _host_argmax)
TRITONS = ("triton", "triton-pdl", "triton-serial", "triton-host")


REPEATS = 7  # time to first token: this many repeats of the prompt (one alone is the host's noise)


def spread(ttfts: list[float]) -> dict:
    """Min, median and max of the repeats' times to first token (ms), and every one."""
    return {
        "ttft_ms_min": round(min(ttfts), 2),
        "ttft_ms": round(statistics.median(ttfts), 2),
        "ttft_ms_max": round(max(ttfts), 2),
        "ttft_ms_all": [round(t, 2) for t in ttfts],
    }


def engine_run(
    cfg, weights: Weights, bk: str, prompts: list[list[int]], new: int, repeats: int = REPEATS, decode: bool = True
) -> dict:
    """This engine on one backend: preflight (triton), a warm-up at the measured shapes, then (``decode``)
    the run (decode speed), then the prompt ``repeats`` times more to the first token."""
    batch, seq = len(prompts), len(prompts[0])
    capacity = seq + new if decode else seq  # prefill alone needs only the prompt's positions
    ops = TORCH
    if bk in TRITONS:
        plan = resolve(generation_calls(cfg, batch, seq, capacity, "bf16"), load_tables(), detect_class().id)
        if bk in ("triton-pdl", "triton-serial"):  # the same settings, with programmatic dependent launch or not
            plan = dataclasses.replace(plan, pdl=bk == "triton-pdl")
        ops = plan.ops()
    model = Transformer(cfg, weights, ops, batch=batch, capacity=capacity)
    row: dict = {}
    pick = bk != "triton-host"  # the greedy token picked inside the decode graph
    if decode:
        with _host_argmax(bk == "triton-host"):
            generate_batch(model, prompts, min(8, new), Sampling(), set(), use_graph=True, device_pick=pick)  # warm up
            model = Transformer(cfg, weights, ops, batch=batch, capacity=capacity)
            torch.cuda.synchronize()
            start = time.perf_counter()
            outs, stats = generate_batch(model, prompts, new, Sampling(), set(), use_graph=True, device_pick=pick)
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        row = {
            "generated": sum(map(len, outs)),
            "decode_tok_s": round(stats.decode_tokens_per_s, 1),
            "decode_tok_s_per_sequence": round(stats.decode_tokens_per_s / batch, 1),
            "capture_s": round(stats.capture_s, 3),
            "total_s": round(total, 3),
        }
    else:
        for _ in range(2):  # compile (when no warmup did), warm up and capture at this length
            generate_batch(model, prompts, 1, Sampling(), set(), use_graph=True)
    ttfts = [
        generate_batch(model, prompts, 1, Sampling(), set(), use_graph=True)[1].time_to_first_token_s * 1000
        for _ in range(repeats)
    ]
    return {**row, **spread(ttfts), **prefill_gpu_ms(model, seq)}


@contextlib.contextmanager
def _host_argmax(on: bool) -> Iterator[None]:
    """With ``on``: the greedy pick as it was before 2026-12-02e, PyTorch's argmax in one pass (the
    ``triton-host`` backend, beside the current decode loop in the same run)."""
    if not on:
        yield
        return
    with mock.patch("neurobrix.generate.greedy_pick", lambda logits, out=None: logits.argmax(dim=-1, keepdim=True)):
        yield


def prefill_gpu_ms(model: Transformer, seq: int, replays: int = 20) -> dict:
    """The prefill's GPU time: its graph (captured by the runs above) replayed back to back, timed by CUDA
    events (median of ``replays``); a prompt prefilled in chunks has no graph and no figure."""
    held = model.graphs.get("prefill")
    if held is None or seq not in held.graphs:
        return {}
    graph = held.graphs[seq][0]
    times = []
    for _ in range(replays):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    return {"prefill_gpu_ms": round(statistics.median(times), 3)}


def hf_eager(name: str, prompt: list[int], new: int, repeats: int = REPEATS) -> dict:
    """Hugging Face transformers, eager, bf16, random weights of the same shape: prefill time, then
    greedy generation of ``new`` tokens (min_new_tokens forces the full length)."""
    import transformers
    import yaml

    from conformance.catalogue import CATALOGUE

    raw = dict(yaml.safe_load(CATALOGUE.read_text())["models"][name])
    arch = raw.pop("architectures")[0]
    model_type = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}[arch]
    config = transformers.AutoConfig.for_model(model_type, **raw)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    ids = torch.tensor([prompt], device="cuda")
    with torch.inference_mode():
        model.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False)  # warm up
        prefills = []
        for _ in range(repeats):
            torch.cuda.synchronize()
            start = time.perf_counter()
            model(ids)
            torch.cuda.synchronize()
            prefills.append(time.perf_counter() - start)
        prefill = statistics.median(prefills)
        start = time.perf_counter()
        model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)
        torch.cuda.synchronize()
        total = time.perf_counter() - start
    del model
    torch.cuda.empty_cache()
    return {
        "generated": new,
        **spread([t * 1000 for t in prefills]),
        "decode_tok_s": round((new - 1) / max(total - prefill, 1e-9), 1),
        "total_s": round(total, 3),
    }


def kv_bytes_per_step(cfg, batch: int, filled: float) -> float:
    """KV cache bytes one decode step reads (bf16), at ``filled`` positions per sequence."""
    return 2 * cfg.num_layers * batch * filled * cfg.num_kv_heads * cfg.head_dim * 2


def report(results: list[dict]) -> None:
    """One table: every model, batch and prompt length, the backends side by side (decode at the first
    prompt length, prefill at each)."""
    print(
        f"\n{'model':<36} {'batch':>5} {'prompt':>6} {'backend':>13} {'decode tok/s':>12} {'roofline':>8} "
        f"{'prefill tok/s':>13} {'TTFT ms min/median/max':>24} {'GPU ms':>7} {'decode x torch':>14} "
        f"{'decode x compile':>16} {'prefill x compile':>17} {'compile s':>9}"
    )
    by = {(r["model"], r["batch"], r["prompt"], r["backend"]): r for r in results}

    def ratio(r: dict, backend: str, key: str) -> str:
        base = by.get((r["model"], r["batch"], r["prompt"], backend))
        ok = base is not None and "error" not in base and key in r and key in base and r["backend"] != backend
        return f"{r[key] / base[key]:.2f}" if ok else ""

    for r in results:
        head = f"{r['model']:<36} {r['batch']:>5} {r['prompt']:>6} {r['backend']:>13}"
        if "error" in r:
            print(f"{head} ERROR {r['error'][:120]}")
            continue
        decode = (
            f"{r['decode_tok_s']:>12.1f} {r['roofline_pct']:>7.1f}%" if "decode_tok_s" in r else f"{'':>12} {'':>8}"
        )
        ttft = f"{r['ttft_ms_min']:.1f}/{r['ttft_ms']:.1f}/{r['ttft_ms_max']:.1f}"
        compile_s = f"{r['compile_s']:.0f}" if "compile_s" in r else ""
        gpu = f"{r['prefill_gpu_ms']:.2f}" if "prefill_gpu_ms" in r else ""
        print(
            f"{head} {decode} {r['prefill_tok_s']:>13.0f} {ttft:>24} {gpu:>7} {ratio(r, 'torch', 'decode_tok_s'):>14} "
            f"{ratio(r, 'compile', 'decode_tok_s'):>16} {ratio(r, 'compile', 'prefill_tok_s'):>17} {compile_s:>9}"
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="Needs a GPU of a certified class (the triton backend)."
    )
    parser.add_argument("--model", nargs="+", help="catalogue model names (default: all of them)")
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["triton", "torch", "compile", "hf"],
        choices=[*TRITONS, "torch", "compile", "hf"],
        help="triton, torch (this engine on either backend), compile (the gpt-fast-style peer under "
        "torch.compile) and hf (transformers eager, first prompt length only); triton-pdl and triton-serial: "
        "the certified settings with programmatic dependent launch forced on or off (triton: as the GPU "
        "class's launch features say, what a user gets); triton-host: the decode loop before 2026-12-02e, each "
        "greedy token picked by PyTorch's one-pass argmax on the host's side of the decode graph (triton: "
        "picked in the graph, in two passes for a long vocabulary)",
    )
    parser.add_argument(
        "--prompt",
        type=int,
        nargs="+",
        default=[128, 512, 2048],
        metavar="TOKENS",
        help="prompt lengths: prefill tok/s and time to first token at each, decode at the first "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        help="timed prefills per prompt length (min/median/max reported; default %(default)s)",
    )
    parser.add_argument("--new", type=int, default=256, help="tokens generated per run (default %(default)s)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1], help="batch sizes (e.g. 1 8)")
    parser.add_argument(
        "--hf-new",
        type=int,
        default=64,
        help="tokens transformers eager generates (it is ~50x slower; default %(default)s)",
    )
    parser.add_argument("--max-minutes", type=float, help="start no new model after about this long")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    models, _ = load()
    unknown = [m for m in args.model or [] if m not in models]
    if unknown:
        parser.error(f"not in the catalogue: {', '.join(unknown)}; it has: {', '.join(models)}")
    for name in ("prompt", "batch"):
        if any(v < 1 for v in getattr(args, name)):
            parser.error(f"--{name} values must be >= 1, got {getattr(args, name)}")
    if args.repeats < 1 or args.new < 1 or args.hf_new < 1:
        parser.error("--repeats, --new and --hf-new must be >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks.e2e needs a GPU of a certified class")
    from benchmarks.kernels import copy_bandwidth

    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    models, _ = load()
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s", flush=True)
    results = []
    for name in args.model or list(models):
        if deadline is not None and time.monotonic() > deadline:
            print(f"stopped at the time limit before {name}", flush=True)
            break
        cfg = models[name]
        weights = random_weights(cfg, torch.bfloat16, torch.device("cuda"))
        gb = (
            sum(
                t.numel() * t.element_size()
                for t in [weights.embed, weights.norm]
                + [x for l in weights.layers for x in (l.qkv, l.o, l.gate_up, l.down)]
            )
            / 1e9
        )
        if weights.lm_head is not weights.embed:
            gb += weights.lm_head.numel() * 2 / 1e9
        gen = torch.Generator().manual_seed(1)
        longest = torch.randint(0, cfg.vocab_size, (max(args.batch), max(args.prompt)), generator=gen).tolist()
        for n, seq in enumerate(args.prompt):
            decode = n == 0  # decode speed at the first prompt length, prefill at every one
            prompts = [p[:seq] for p in longest]
            for bk in args.backends:
                if bk == "hf" and not decode:
                    continue
                for batch in args.batch if bk != "hf" else [1]:
                    new = args.hf_new if bk == "hf" else args.new
                    row = {
                        "model": name,
                        "backend": bk,
                        "batch": batch,
                        "weights_gb": round(gb, 2),
                        "prompt": seq,
                        "new": new,
                    }
                    try:
                        if bk == "hf":
                            row.update(hf_eager(name, prompts[0], new, args.repeats))
                        elif bk == "compile":
                            from benchmarks import peer

                            row.update(
                                peer.run(cfg, weights, prompts[:batch], new, args.repeats)
                                if decode
                                else peer.prefill_only(cfg, weights, prompts[:batch], args.repeats)
                            )
                            row.update(spread(row["ttft_ms_all"]))
                        else:
                            row.update(engine_run(cfg, weights, bk, prompts[:batch], new, args.repeats, decode))
                        row["prefill_tok_s"] = round(batch * seq / (row["ttft_ms"] / 1000), 1)
                        row["prefill_tok_s_range"] = [
                            round(batch * seq / (row["ttft_ms_max"] / 1000), 1),
                            round(batch * seq / (row["ttft_ms_min"] / 1000), 1),
                        ]
                        if "decode_tok_s" in row:
                            step_bytes = gb * 1e9 + kv_bytes_per_step(cfg, batch, seq + new / 2)
                            row["roofline_pct"] = round(100 * row["decode_tok_s"] * step_bytes / batch / bandwidth, 1)
                    except Exception as exc:  # report and go on: one failing backend must not hide the others
                        row["error"] = f"{type(exc).__name__}: {exc}"[:2000]
                    print(json.dumps(row), flush=True)
                    results.append(row)
        del weights
        torch.cuda.empty_cache()
    report(results)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"copy_tb_s": round(bandwidth / 1e12, 3), "rows": results}, fh, indent=2)


if __name__ == "__main__":
    main()
