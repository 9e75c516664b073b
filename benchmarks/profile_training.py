"""Where one training micro-step's GPU time goes, per kernel family, for the default model and a few variants.

Each variant runs in a fresh process: build the model as ``training.train`` does (bf16 autocast, torch.compile,
fused AdamW), warm up, time micro-steps (forward + backward) with CUDA events, then profile three of them and sum
kernel time by family (matmul, attention, fused elementwise, ...). Prints one JSON line per variant and a table,
with each variant's speed as a ratio against ``base`` from the same invocation::

    python3 benchmarks/profile_training.py --variants base,mb128 [--trace-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VARIANTS: dict[str, dict] = {
    "base": {},
    "fp32-residual": {"residual_stream": "fp32"},
    "unfused-loss": {"keep": (True, False, False)},
    "unfused-mlp": {"keep": (False, True, True)},
    "bf16-head": {"keep": (True, True, False)},
    "kernels-off": {"kernels": "off"},
    "bias": {"bias": True},
    "nanogpt-like": {"residual_stream": "fp32", "keep": (True, False, False)},
    "mb128": {"micro_batch": 128},
    "cudnn": {"sdpa_backend": "cudnn"},
    "flash": {"sdpa_backend": "flash"},
    "compiled-autograd": {},
}
"""Each variant's settings: TrainConfig fields, and 'keep': which of the fused kernels that pass their self-test the
variant keeps (MLP, loss, FP8 head; ``Fused.keep``). 'compiled-autograd' is not a setting: it compiles backward too, so
that AccumulateGrad's adds and casts join the backward graph (0.988x on an H200, ``benchmarks/TRAINING.md``)."""

FAMILIES: tuple[tuple[str, str], ...] = (
    ("attention", r"flash|fmha|sdpa|attn|attention|cudnn"),
    ("matmul", r"gemm|nvjet|cutlass|xmma|sm90|cublas|splitK|reduce_kernel"),
    ("optimizer", r"multi_tensor|adam|foreach"),
    ("fused elementwise (triton)", r"^triton_"),
    ("copy / fill", r"memcpy|memset|copy|fill|elementwise_kernel|vectorized"),
    ("index / embedding", r"index|scatter|gather|embedding"),
)


def family(kernel: str) -> str:
    for name, pattern in FAMILIES:
        if re.search(pattern, kernel, re.IGNORECASE):
            return name
    return "other"


def gpu_busy_ms(trace_path: Path) -> tuple[float, float]:
    """(span, busy) in ms of the device activity in a Chrome trace: busy is the union of kernel/memset/memcpy time."""
    events = json.loads(trace_path.read_text())["traceEvents"]
    spans = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    )
    if not spans:
        return 0.0, 0.0
    busy, (open_start, open_end) = 0.0, spans[0]
    for start, end in spans[1:]:
        if start > open_end:
            busy += open_end - open_start
            open_start, open_end = start, end
        else:
            open_end = max(open_end, end)
    busy += open_end - open_start
    return (spans[-1][1] - spans[0][0]) / 1e3, busy / 1e3


class ClockSampler(threading.Thread):
    """Reads the GPU's SM clock (MHz) and power draw (W) every 20 ms while the timed steps run: shows power or
    thermal throttling."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[int] = []
        self.watts: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        import torch

        while not self.done.wait(0.02):
            try:
                self.samples.append(torch.cuda.clock_rate())
                self.watts.append(torch.cuda.power_draw() / 1000)
            except Exception:  # pynvml missing or refused: no clock figures, the timing stands
                return


def run_variant(name: str, model_name: str, micro_batch: int, steps: int, trace_dir: str) -> dict:
    """Measure one variant in this process (on the CPU, a smoke run: no compile, no autocast, no fused loss)."""
    from training import compile_cache

    compile_cache.isolate()  # before torch._dynamo is imported: it fixes the cache directory on import

    import torch
    from torch.profiler import ProfilerActivity, profile

    from training.batching import StepSplit
    from training.config import TrainConfig
    from training.metrics import mfu, peak_tflops
    from training.model import GPT, Fused, select_attention_backend

    settings = {"model": model_name, "micro_batch": micro_batch, **VARIANTS[name]}
    keep = settings.pop("keep", (True, True, True))
    cfg = TrainConfig(**settings)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(cfg.seed)
    select_attention_backend(cfg.sdpa_backend)
    fused = Fused()
    if cfg.kernels == "auto":
        from training.kernels import select

        fused = select(device, cuda, cfg.bias)[0].keep(*keep)
    model = GPT.from_config(cfg, half=cuda, fused=fused).to(device)
    optimizer = torch.optim.AdamW(model.param_groups(cfg.weight_decay), lr=cfg.lr, fused=cuda)
    step_fn = torch.compile(model) if cuda else model
    compiled_backward = name == "compiled-autograd" and cuda
    if compiled_backward:
        import torch._dynamo.compiled_autograd as compiled_autograd

        torch._dynamo.config.compiled_autograd = True

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    vocab = cfg.size.data_vocab
    batches = [torch.randint(0, vocab, (cfg.micro_batch, cfg.seq_len + 1), device=device) for _ in range(4)]

    def micro_step(i: int) -> None:
        tokens = batches[i % len(batches)]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            loss = step_fn(tokens[:, :-1], tokens[:, 1:])
        if compiled_backward:
            with compiled_autograd._enable(torch.compile(dynamic=False)):
                loss.backward()
        else:
            loss.backward()

    def optimizer_step() -> None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    started = time.perf_counter()
    for i in range(3):
        micro_step(i)
    optimizer_step()
    micro_step(0)
    sync()
    compile_s = time.perf_counter() - started

    clocks = ClockSampler()
    if cuda:
        clocks.start()
    timed_from = time.perf_counter()
    for i in range(steps):
        micro_step(i)
    enqueued = time.perf_counter()
    sync()
    clocks.done.set()
    micro_ms = (time.perf_counter() - timed_from) * 1e3 / steps

    started = time.perf_counter()
    optimizer_step()
    sync()
    optimizer_ms = (time.perf_counter() - started) * 1e3

    accum = StepSplit(cfg.global_batch, 1, cfg.micro_batch).micro_steps
    full_steps = 2
    started = time.perf_counter()
    for _ in range(full_steps):
        for i in range(accum):
            micro_step(i)
        optimizer_step()
    sync()
    full_step_ms = (time.perf_counter() - started) * 1e3 / full_steps
    micro_step(0)

    profiled = 3
    kind = "CUDA" if cuda else "CPU"
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        for i in range(profiled):
            micro_step(i)
        sync()
    kernels: dict[str, float] = {}
    for event in prof.key_averages():
        if str(getattr(event, "device_type", "")).endswith(kind):
            self_us = event.self_device_time_total if cuda else event.self_cpu_time_total
            kernels[event.key] = kernels.get(event.key, 0.0) + self_us / (1e3 * profiled)
    trace = Path(trace_dir or tempfile.mkdtemp()) / f"{name}_trace.json"
    prof.export_chrome_trace(str(trace))
    span_ms, busy_ms = gpu_busy_ms(trace) if cuda else (0.0, 0.0)
    if not trace_dir:
        trace.unlink()
    families: dict[str, float] = {}
    for kernel, ms in kernels.items():
        families[family(kernel)] = families.get(family(kernel), 0.0) + ms
    tokens_per_s = cfg.micro_batch * cfg.seq_len / (micro_ms / 1e3)
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:20]
    return {
        "variant": name,
        "settings": settings,
        "compile_s": round(compile_s, 1),
        "micro_step_ms": round(micro_ms, 2),
        "cpu_enqueue_ms_per_micro_step": round((enqueued - timed_from) * 1e3 / steps, 2),
        "sm_clock_mhz": {"median": statistics.median(clocks.samples), "min": min(clocks.samples)}
        if clocks.samples
        else None,
        "power_w": {"median": round(statistics.median(clocks.watts)), "max": round(max(clocks.watts))}
        if clocks.watts
        else None,
        "optimizer_step_ms": round(optimizer_ms, 2),
        "full_step_ms": round(full_step_ms, 2),
        "full_step_beyond_micro_steps_ms": round(full_step_ms - accum * micro_ms, 2),
        "tokens_per_s_micro": round(tokens_per_s),
        "mfu_micro": mfu(model.flops_per_token(), tokens_per_s, 1, peak_tflops(device, 0.0)),
        "profiled_ms_per_micro_step": {
            "span": round(span_ms / profiled, 2),
            "gpu_busy": round(busy_ms / profiled, 2),
            "kernels": round(sum(kernels.values()), 2),
        },
        "families_ms": {k: round(v, 2) for k, v in sorted(families.items(), key=lambda kv: -kv[1])},
        "top_kernels_ms": [[k[:110], round(v, 3)] for k, v in top],
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1) if cuda else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="base", help=f"comma-separated, from: {', '.join(VARIANTS)}")
    parser.add_argument("--model", default="gpt2", help="named model size")
    parser.add_argument("--micro-batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10, help="timed micro-steps per variant")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per variant, compilation included")
    parser.add_argument("--trace-dir", default="", help="keep each variant's Chrome trace (3 micro-steps) here")
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_variant(args.one, args.model, args.micro_batch, args.steps, args.trace_dir)))
        return 0
    names = args.variants.split(",")
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant '{unknown[0]}'; choose from {', '.join(VARIANTS)}")
    results = []
    for name in names:
        command = [
            sys.executable,
            __file__,
            "--one",
            name,
            "--model",
            args.model,
            "--micro-batch",
            str(args.micro_batch),
            "--steps",
            str(args.steps),
            "--trace-dir",
            args.trace_dir,
        ]
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=args.timeout)
            lines = done.stdout.strip().splitlines()
            ok = done.returncode == 0 and lines
            result = json.loads(lines[-1]) if ok else {"variant": name, "error": f"exit {done.returncode}"}
        except subprocess.TimeoutExpired:
            result = {"variant": name, "error": f"not done in {args.timeout:.0f} s"}
        print(json.dumps(result), flush=True)
        results.append(result)
    base = next((r for r in results if r["variant"] == "base" and "error" not in r), None)
    print(
        f"{'variant':<16} {'micro ms':>9} {'tok/s':>10} {'MFU':>6} {'vs base':>8} {'compile s':>9} "
        f"{'matmul ms':>9} {'MHz':>5} {'W':>4}"
    )
    for r in results:
        if "error" in r:
            print(f"{r['variant']:<16} failed: {r['error']}")
            continue
        ratio = base["micro_step_ms"] / r["micro_step_ms"] if base else float("nan")
        clock, power = r["sm_clock_mhz"] or {"median": 0}, r["power_w"] or {"median": 0}
        print(
            f"{r['variant']:<16} {r['micro_step_ms']:>9.2f} {r['tokens_per_s_micro']:>10,} "
            f"{r['mfu_micro'] or 0:>6.1%} {ratio:>8.3f} {r['compile_s']:>9.1f} "
            f"{r['families_ms'].get('matmul', 0):>9.2f} {clock['median']:>5.0f} {power['median']:>4}"
        )
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
