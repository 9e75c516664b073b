"""The fused output layer + cross-entropy (``training/kernels/fused_loss.py``) at GPT-2 124M's shape. CUDA only.

Groups, each against a baseline measured in the same run: the bf16 loss kernel at several launch shapes against
PyTorch's cross-entropy forward + backward over the same logits; the kernel writing an e5m2 gradient instead, against
the bf16 one; the FP8 gradient's transposed copy, tiled, against PyTorch's ``.t().contiguous()``; the output layer's
three products in bf16 against FP8; and the whole head (products and loss, forward and backward) in bf16 against FP8.
Prints one JSON line per variant and a table; bandwidth counts each logit read once and its gradient written once
(bf16: 2 + 2 bytes, FP8: 2 + 1), and for the transposes the gradient read and written once.

    python3 benchmarks/fused_loss.py [--rows 65536] [--vocab 50304] [--width 768]
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

SHAPES = ((4096, 4), (4096, 8), (4096, 16), (8192, 8), (8192, 16), (16384, 16))
"""(columns per load, warps per row) to try."""
TRANSPOSE_TILES = ((64, 64, 4), (64, 256, 8), (128, 128, 8), (32, 128, 4), (128, 256, 8))
"""(rows, columns, warps) per program to try for the transpose."""


def timed_ms(fn, logits_pool: list[torch.Tensor]) -> float:
    """Median of 10 per-call device times; each call gets a fresh copy of the logits (the kernel overwrites them)."""
    return cuda_timing.timed_ms(
        fn, repeats=10, warmup=2, prepare=lambda i: (logits_pool[i % len(logits_pool)].clone(),)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=65536, help="tokens per micro-batch (64 x 1024)")
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--width", type=int, default=768, help="hidden size, for the output layer's products")
    args = parser.parse_args(argv)
    if cuda_timing.cuda_missing("benchmarks/fused_loss.py"):
        return 2
    # needs Triton, which CUDA builds of PyTorch bring
    from training.kernels.fused_loss import BLOCK, NUM_WARPS, cross_entropy_rows_, cross_entropy_rows_fp8, transposed

    generator = torch.Generator(device="cuda").manual_seed(0)
    pool = [(torch.randn(args.rows, args.vocab, device="cuda", generator=generator) * 2).bfloat16() for _ in range(2)]
    targets = torch.randint(0, args.vocab, (args.rows,), device="cuda", generator=generator)
    reference_losses = F.cross_entropy(pool[0].float(), targets, reduction="none")

    def pytorch(logits: torch.Tensor) -> None:
        logits.requires_grad_()
        F.cross_entropy(logits.float(), targets).backward()

    compiled = torch.compile(pytorch)
    results = [
        {"variant": "pytorch eager", "ms": timed_ms(pytorch, pool)},
        {"variant": "pytorch compiled", "ms": timed_ms(compiled, pool)},
    ]
    for block, warps in SHAPES:
        losses = cross_entropy_rows_(pool[0].clone(), targets, block, warps)
        error = ((losses - reference_losses).abs().max() / reference_losses.abs().max()).item()
        ms = timed_ms(lambda logits, b=block, w=warps: cross_entropy_rows_(logits, targets, b, w), pool)
        results.append({"variant": f"fused block {block} warps {warps}", "ms": ms, "max_rel_error": error})
    cells = args.rows * args.vocab
    report(results, 1, moved=2 * 2 * cells)

    bf16_kernel = next(r for r in results if r["variant"] == f"fused block {BLOCK} warps {NUM_WARPS}")
    results = [dict(bf16_kernel, variant=f"bf16 kernel (block {BLOCK} warps {NUM_WARPS})")]
    for block, warps in SHAPES:
        losses = cross_entropy_rows_fp8(pool[0], targets, block, warps)[0]
        error = ((losses - reference_losses).abs().max() / reference_losses.abs().max()).item()
        ms = timed_ms(lambda logits, b=block, w=warps: cross_entropy_rows_fp8(logits, targets, b, w), pool)
        results.append(
            {"variant": f"fp8 kernel block {block} warps {warps}", "ms": ms, "max_rel_error": error, "bytes": 3 * cells}
        )
    report(results, 0, moved=2 * 2 * cells)

    grad = cross_entropy_rows_fp8(pool[0], targets)[1]
    results = [
        {"variant": "pytorch .t().contiguous()", "ms": cuda_timing.timed_ms(lambda: grad.t().contiguous(), 5, 1)}
    ]
    for tile in TRANSPOSE_TILES:
        assert torch.equal(transposed(grad, tile).view(torch.uint8), grad.view(torch.uint8).t())
        ms = cuda_timing.timed_ms(functools.partial(transposed, grad, tile), repeats=10, warmup=2)
        results.append({"variant": "tiled transpose {} x {} warps {}".format(*tile), "ms": ms})
    report(results, 0, moved=2 * cells)

    hidden = cuda_timing.random_bf16(generator, args.rows, args.width)
    weight = cuda_timing.random_bf16(generator, args.vocab, args.width, scale=0.02)
    for trio in product_results(hidden, weight, generator):
        report(trio, 0)
    report(head_results(hidden, weight, generator), 0)
    return 0


def report(results: list[dict], baseline: int, moved: int = 0) -> None:
    """Print each result as JSON and as a table row, with its speed against ``results[baseline]`` and, given the
    bytes it ``moved`` (or its own "bytes"), its bandwidth."""
    for result in results:
        if moved:
            result["tb_per_s"] = round(result.pop("bytes", moved) / result["ms"] / 1e9, 2)
        result["speedup"] = round(results[baseline]["ms"] / result["ms"], 3)
        print(json.dumps(result))
    print(f"-- against '{results[baseline]['variant']}'")
    for result in results:
        rate = f"{result['tb_per_s']:>6.2f} TB/s" if moved else f"{result.get('tflop_per_s', ''):>6} TFLOP/s"
        print(f"{result['variant']:<44} {result['ms']:>8.3f} ms {rate} {result['speedup']:>6.3f}x")


def product_results(hidden: torch.Tensor, weight: torch.Tensor, generator: torch.Generator) -> list[list[dict]]:
    """The output layer's products (forward, input gradient, weight gradient), each in bf16 and in FP8 without
    and with fast accumulation (the FP8 kernels' cheaper, less exact summation)."""
    one = torch.ones((), device="cuda")
    grad = cuda_timing.random_bf16(generator, hidden.shape[0], weight.shape[0], scale=1e-3)
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2
    products = {
        "forward": (hidden, weight.t(), hidden.to(e4m3), weight.to(e4m3).t()),
        "input gradient": (grad, weight, grad.to(e5m2), weight.to(e4m3).t().contiguous().t()),
        "weight gradient": (grad.t(), hidden, grad.to(e5m2).t().contiguous(), hidden.to(e4m3).t().contiguous().t()),
    }
    trios = []
    for name, (a, b, a8, b8) in products.items():
        flop = 2 * a.shape[0] * a.shape[1] * b.shape[1]
        trio = [{"variant": f"{name} bf16", "ms": cuda_timing.timed_ms(functools.partial(torch.matmul, a, b), 10, 2)}]
        for fast in (False, True):
            product = functools.partial(
                torch._scaled_mm, a8, b8, one, one, out_dtype=torch.bfloat16, use_fast_accum=fast
            )
            ms = cuda_timing.timed_ms(product, repeats=10, warmup=2)
            trio.append({"variant": f"{name} fp8{' fast accum' if fast else ''}", "ms": ms})
        for result in trio:
            result["tflop_per_s"] = round(flop / result["ms"] / 1e9)
        trios.append(trio)
    return trios


def head_results(hidden: torch.Tensor, weight: torch.Tensor, generator: torch.Generator) -> list[dict]:
    """The whole head, products and loss, forward and backward, in bf16 and with FP8 products."""
    from training.kernels.fused_loss import head_cross_entropy

    results = []
    targets = torch.randint(0, weight.shape[0], (hidden.shape[0],), device="cuda", generator=generator)
    master = weight.float().requires_grad_()
    source = hidden.detach().requires_grad_()
    for fp8 in (False, True):

        def step(fp8=fp8) -> None:
            head_cross_entropy(source, master, targets, fp8=fp8).backward()
            source.grad = master.grad = None

        results.append(
            {
                "variant": f"head forward + backward {'fp8' if fp8 else 'bf16'}",
                "ms": cuda_timing.timed_ms(step, repeats=10, warmup=2),
            }
        )
    return results


if __name__ == "__main__":
    sys.exit(main())
