"""Every matrix product of one training micro-step of a named model, PyTorch's matmul against each algorithm that
cuBLASLt's heuristics propose for the same shape, in the same run. CUDA only.

Per linear layer there are three products: forward (x @ W.T), the input's gradient (dy @ W) and the weight's
gradient (dy.T @ x). Shows how far PyTorch's choice is from the fastest algorithm on this GPU, per shape and summed
over a micro-step (each block's four layers times the layer count, plus the output layer). Then the fused MLP's two
epilogue products (bias + GELU in the up-projection, GELU's derivative in the hidden gradient), whose candidates
differ from the plain product's. Prints one JSON line per product and a table::

    python3 benchmarks/matmul_shapes.py [--model gpt2] [--tokens 65536] [--candidates 16]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cuda_timing
from training.config import MODEL_SIZES
from training.kernels import cublaslt

RUNS = 10
"""Products run back to back per timing, for PyTorch and for each cuBLASLt candidate alike."""


def layers(model: str) -> list[tuple[str, int, int, int]]:
    """(name, fan_in, fan_out, count per micro-step) of the model's linear layers."""
    size = MODEL_SIZES[model]
    width = size.n_embd
    return [
        ("qkv", width, 3 * width, size.n_layer),
        ("proj", width, width, size.n_layer),
        ("up", width, 4 * width, size.n_layer),
        ("down", 4 * width, width, size.n_layer),
        ("head", width, size.vocab_size, 1),
    ]


def torch_ms(run) -> float:
    """ms per product, PyTorch's matmul, ``RUNS`` back to back (median of 5 such timings)."""
    return cuda_timing.timed_ms(lambda: [run() for _ in range(RUNS)], repeats=5, warmup=1) / RUNS


def measure(layer: tuple[str, int, int, int], tokens: int, candidates: int, generator: torch.Generator) -> list[dict]:
    """The layer's three products, PyTorch against each cuBLASLt candidate."""
    name, fan_in, fan_out, count = layer

    random = functools.partial(cuda_timing.random_bf16, generator)

    x, weight, grad_y = random(tokens, fan_in), random(fan_out, fan_in), random(tokens, fan_out)
    products = [
        ("forward", lambda: F.linear(x, weight), (x, weight, True, False), {}),
        ("input grad", lambda: grad_y @ weight, (grad_y, weight, False, False), {}),
        ("weight grad", lambda: grad_y.t() @ x, (grad_y, x, False, True), {}),
    ]
    if name == "up":
        bias, pre = random(fan_out), random(tokens, fan_out)
        gelu = {"epilogue": cublaslt.GELU_AUX_BIAS, "bias": bias, "aux": pre}
        products.append(
            ("forward + GELU", lambda: F.gelu(F.linear(x, weight, bias), approximate="tanh"), products[0][2], gelu)
        )
    if name == "down":
        pre = random(tokens, fan_in)
        dgelu = {"epilogue": cublaslt.DGELU, "aux": pre}
        products.append(("input grad + GELU'", lambda: grad_y @ weight, products[1][2], dgelu))
    gflop = 2 * tokens * fan_in * fan_out / 1e9
    results = []
    for product, run, operands, epilogue in products:
        pytorch = torch_ms(run)
        times = cublaslt.algorithm_times(*operands, candidates=candidates, runs=RUNS, **epilogue)
        ran = [ms for ms in times if ms is not None]
        best = min(ran)
        results.append(
            {
                "layer": name,
                "product": product,
                "count": count,
                "pytorch_ms": round(pytorch, 4),
                "first_choice_ms": round(ran[0], 4),
                "fastest_ms": round(best, 4),
                "fastest_rank": times.index(best),
                "candidates": len(times),
                "pytorch_tflops": round(gflop / pytorch),
                "fastest_tflops": round(gflop / best),
                "pytorch_vs_fastest": round(best / pytorch, 3),
                "epilogue": bool(epilogue),
            }
        )
        print(json.dumps(results[-1]), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gpt2", choices=list(MODEL_SIZES), help="named model size")
    parser.add_argument("--tokens", type=int, default=65536, help="tokens per micro-batch (64 x 1024)")
    parser.add_argument("--candidates", type=int, default=32, help="algorithms asked of cuBLASLt's heuristics")
    args = parser.parse_args(argv)
    if cuda_timing.cuda_missing("benchmarks/matmul_shapes.py"):
        return 2
    generator = torch.Generator(device="cuda").manual_seed(0)
    results = [r for layer in layers(args.model) for r in measure(layer, args.tokens, args.candidates, generator)]
    print(f"{'product':<18} {'x':>3} {'pytorch ms':>10} {'first ms':>9} {'fastest ms':>10} {'rank':>4} {'TFLOP/s':>13}")
    for r in results:
        print(
            f"{r['layer'] + ' ' + r['product']:<18} {r['count']:>3} {r['pytorch_ms']:>10.4f} "
            f"{r['first_choice_ms']:>9.4f} {r['fastest_ms']:>10.4f} {r['fastest_rank']:>4} "
            f"{r['pytorch_tflops']:>6}/{r['fastest_tflops']:<6}"
        )
    plain = [r for r in results if not r["epilogue"]]
    pytorch = sum(r["count"] * r["pytorch_ms"] for r in plain)
    fastest = sum(r["count"] * r["fastest_ms"] for r in plain)
    summary = {
        "micro_step_pytorch_ms": round(pytorch, 2),
        "micro_step_fastest_ms": round(fastest, 2),
        "speedup_available": round(pytorch / fastest, 3),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
