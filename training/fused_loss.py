"""Output layer and cross-entropy as one autograd step, for CUDA.

The plain path writes [tokens, vocab] logits, reads them for the softmax, writes their gradient and reads it twice
more: at GPT-2's vocabulary that tensor is 6.6 GB per micro-batch of 64 x 1024, and PyTorch's two loss kernels
over it took 8% of an H200's step. Here one Triton kernel reads each row of logits twice (max/sum, then the
gradient) and writes the loss gradient over the logits in place, in the forward pass, so backward is only the two
matmuls. The incoming gradient (1 / accumulation steps) scales the matmuls' small outputs instead of the logits.
Imported only where Triton is (PyTorch's CUDA builds bring it); tests also run it in Triton's CPU interpreter.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _cross_entropy_rows(logits_ptr, targets_ptr, losses_ptr, row_stride, n_cols, scale, BLOCK: tl.constexpr):
    """One program per row: loss = logsumexp(row) - row[target]; row := (softmax(row) - onehot(target)) * scale.
    The running max is kept per block of columns, not per lane, so the first pass takes one exponential per logit
    instead of two: at two passes over the row, exponentials bound the kernel about as much as memory does."""
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * row_stride
    target = tl.load(targets_ptr + row)
    row_max = float("-inf")
    row_sum = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, 0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), 0)
        row_max = new_max
    lse = row_max + tl.log(row_sum)
    tl.store(losses_ptr + row, lse - tl.load(base + target).to(tl.float32))
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(base + cols, mask=mask, other=0.0).to(tl.float32)
        grad = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * scale
        tl.store(base + cols, grad.to(base.dtype.element_ty), mask=mask)


BLOCK = 4096
NUM_WARPS = 8
"""Launch shape of the kernel: columns per load and warps per row (``benchmarks/fused_loss.py`` compares others)."""


def cross_entropy_rows_(
    logits: torch.Tensor, targets: torch.Tensor, block: int = BLOCK, num_warps: int = NUM_WARPS
) -> torch.Tensor:
    """Per-row losses of ``logits`` [rows, vocab] (bf16); overwrites ``logits`` with the mean loss's gradient."""
    rows, cols = logits.shape
    losses = torch.empty(rows, device=logits.device, dtype=torch.float32)
    block = min(block, triton.next_power_of_2(cols))
    _cross_entropy_rows[(rows,)](
        logits, targets, losses, logits.stride(0), cols, 1.0 / rows, BLOCK=block, num_warps=num_warps
    )
    return losses


class _HeadCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = hidden @ weight.t()
        losses = cross_entropy_rows_(logits, targets)
        ctx.save_for_backward(hidden, weight, logits)
        return losses.mean()

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor):
        hidden, weight, grad_logits = ctx.saved_tensors
        scale = grad_loss.to(hidden.dtype)
        grad_hidden = (grad_logits @ weight).mul_(scale)
        grad_weight = (grad_logits.t() @ hidden).mul_(scale)
        return grad_hidden, grad_weight, None


@torch.compiler.disable
def head_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``hidden @ weight.T`` against ``targets``, in bf16 with fp32 softmax arithmetic.

    hidden: [tokens, width]; weight: [vocab, width] (fp32 master weights are cast here, as autocast would);
    targets: [tokens] int64. Kept out of torch.compile's graph: the kernel is already fused.
    """
    with torch.autocast("cuda", enabled=False):
        return _HeadCrossEntropy.apply(hidden.to(torch.bfloat16), weight.to(torch.bfloat16), targets.contiguous())
