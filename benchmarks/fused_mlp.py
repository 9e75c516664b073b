"""The fused MLP (``training/kernels/fused_mlp.py``) at GPT-2 124M's shape against PyTorch's MLP, forward +
backward, measured in the same run; then its two cuBLASLt products alone against the plain products they replace.
CUDA only. Prints one JSON line per variant and a table, with each time as a ratio against the variant's baseline.

    python3 benchmarks/fused_mlp.py [--rows 65536] [--width 768] [--bias]
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
from training.kernels import cublaslt
from training.kernels.fused_mlp import _gelu_mlp


def plain_mlp(x, up_weight, up_bias, down_weight, down_bias):
    return F.linear(F.gelu(F.linear(x, up_weight, up_bias), approximate="tanh"), down_weight, down_bias)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=65536, help="tokens per micro-batch (64 x 1024)")
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--bias", action="store_true", help="with biases (GPT-2's; the job's default has none)")
    args = parser.parse_args(argv)
    if cuda_timing.cuda_missing("benchmarks/fused_mlp.py"):
        return 2
    rows, width, hidden = args.rows, args.width, 4 * args.width
    generator = torch.Generator(device="cuda").manual_seed(0)

    random = functools.partial(cuda_timing.random_bf16, generator)

    inputs = [
        random(rows, width),
        random(hidden, width, scale=width**-0.5),
        random(hidden, scale=0.1) if args.bias else None,
        random(width, hidden, scale=hidden**-0.5),
        random(width, scale=0.1) if args.bias else None,
    ]
    leaves = [tensor.requires_grad_() for tensor in inputs if tensor is not None]
    grad_y = random(rows, width)
    compiled_plain = torch.compile(plain_mlp)
    compiled_fused = torch.compile(lambda *tensors: _gelu_mlp(*tensors)[0])

    def step(mlp):
        def run():
            for tensor in leaves:
                tensor.grad = None
            mlp(*inputs).backward(grad_y)

        return run

    x, up_weight, up_bias, down_weight, _ = (None if t is None else t.detach() for t in inputs)
    bias = "bias + " if args.bias else ""
    pre = F.linear(x, up_weight, up_bias)
    groups = {
        "mlp forward + backward": [
            ("pytorch compiled", step(compiled_plain)),
            ("pytorch eager", step(plain_mlp)),
            ("fused eager", step(lambda *tensors: _gelu_mlp(*tensors)[0])),
            ("fused compiled", step(compiled_fused)),
        ],
        "up-projection": [
            (f"torch linear ({bias}no GELU)", lambda: F.linear(x, up_weight, up_bias)),
            (f"cuBLASLt {bias}GELU + aux", lambda: cublaslt.linear_gelu(x, up_weight, up_bias)),
        ],
        "hidden gradient": [
            ("torch matmul (no GELU')", lambda: grad_y @ down_weight),
            ("cuBLASLt GELU'", lambda: cublaslt.matmul_gelu_grad(grad_y, down_weight, pre)),
        ],
    }
    results = []
    for group, variants in groups.items():
        base = None
        for name, fn in variants:
            ms = cuda_timing.timed_ms(fn, repeats=20, warmup=3)
            base = base or ms
            results.append({"group": group, "variant": name, "ms": round(ms, 3), "vs_first": round(base / ms, 3)})
            print(json.dumps(results[-1]), flush=True)
    for result in results:
        print(f"{result['group']:<24} {result['variant']:<32} {result['ms']:>8.3f} ms {result['vs_first']:>6.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
