"""The fused cross-entropy kernel (``training/fused_loss.py``) at GPT-2 124M's shape, for several launch shapes,
against PyTorch's cross-entropy forward + backward over the same bf16 logits, measured in the same run. CUDA only.
Prints one JSON line per variant and a table; bandwidth counts each logit read once and its gradient written once.

    python3 benchmarks/fused_loss.py [--rows 65536] [--vocab 50304]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cuda_timing

SHAPES = ((4096, 4), (4096, 8), (4096, 16), (8192, 8), (8192, 16), (16384, 16))
"""(columns per load, warps per row) to try."""


def timed_ms(fn, logits_pool: list[torch.Tensor]) -> float:
    """Median of 10 per-call device times; each call gets a fresh copy of the logits (the kernel overwrites them)."""
    return cuda_timing.timed_ms(
        fn, repeats=10, warmup=2, prepare=lambda i: (logits_pool[i % len(logits_pool)].clone(),)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=65536, help="tokens per micro-batch (64 x 1024)")
    parser.add_argument("--vocab", type=int, default=50304)
    args = parser.parse_args(argv)
    if cuda_timing.cuda_missing("benchmarks/fused_loss.py"):
        return 2
    from training.fused_loss import cross_entropy_rows_  # needs Triton, which CUDA builds of PyTorch bring

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
    moved = 2 * 2 * args.rows * args.vocab
    base = results[1]["ms"]
    for result in results:
        result["tb_per_s"] = round(moved / result["ms"] / 1e9, 2)
        result["speedup_vs_compiled"] = round(base / result["ms"], 3)
        print(json.dumps(result))
    for result in results:
        print(
            f"{result['variant']:<32} {result['ms']:>8.3f} ms {result['tb_per_s']:>6.2f} TB/s "
            f"{result['speedup_vs_compiled']:>6.3f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
