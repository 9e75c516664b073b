"""Output layer and cross-entropy as one autograd step, for CUDA, in bf16 or with FP8 matmuls.

The plain path writes [tokens, vocab] logits, reads them for the softmax, writes their gradient and reads it twice
more: at GPT-2's vocabulary that tensor is 6.6 GB per micro-batch of 64 x 1024, and PyTorch's two loss kernels
over it took 8% of an H200's step. Here one Triton kernel reads each row of logits twice (max/sum, then the
gradient) and writes the loss gradient in the forward pass, so backward is only the two matmuls. The incoming
gradient (1 / accumulation steps) scales the matmuls' outputs instead of the logits.

In bf16 the gradient overwrites the logits. With ``fp8`` the three matmuls of the output layer (a third of a GPT-2
124M step's matmul time) run on FP8 tensor cores: inputs and weights in e4m3 scaled by their maximum, the gradient
in e5m2 with a fixed scale (softmax minus one-hot lies in [-1, 1]), written by the kernel instead of the bf16 one.
Hopper's FP8 products take both operands K-major only, so the weight gradient's product reads a transposed copy of
the gradient, made by a tiled kernel in backward. Imported only where Triton is (PyTorch's CUDA builds bring it);
tests also run it in Triton's CPU interpreter.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _cross_entropy_rows(
    logits_ptr, targets_ptr, losses_ptr, grad_ptr, n_cols, logits_stride, grad_stride, scale, BLOCK: tl.constexpr
):
    """One program per row: loss = logsumexp(row) - row[target]; grad_ptr's row := (softmax(row) - onehot(target))
    * scale, in grad_ptr's dtype (the logits themselves in bf16). The running max is kept per block of columns, not
    per lane, so the first pass takes one exponential per logit instead of two: at two passes over the row,
    exponentials bound the kernel about as much as memory does."""
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * logits_stride
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
    out = grad_ptr + row * grad_stride
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(base + cols, mask=mask, other=0.0).to(tl.float32)
        grad = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * scale
        tl.store(out + cols, grad.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _transpose(source_ptr, target_ptr, n_rows, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    """target [cols, rows] := source [rows, cols].T, one ROWS x COLS tile per program."""
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)).to(tl.int64)
    cols = (tl.program_id(1) * COLS + tl.arange(0, COLS)).to(tl.int64)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(source_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask)
    tl.store(target_ptr + cols[None, :] * n_rows + rows[:, None], tile, mask=mask)


BLOCK = 4096
NUM_WARPS = 8
"""Launch shape of the loss kernel: columns per load and warps per row (``benchmarks/fused_loss.py`` compares
others)."""
TRANSPOSE_TILE = (64, 256, 8)
"""Rows, columns and warps per program of the transpose: 3.6 TB/s for the 3.3 GB FP8 gradient on an H200, where
``tensor.t().contiguous()`` took 12x longer."""
GRAD_SCALE = 2.0**15
"""The FP8 gradient is (softmax - onehot) * GRAD_SCALE: |values| <= 1 land within e5m2's finite range (57344) and
probabilities down to 2**-31 stay representable."""
E4M3_MAX = torch.finfo(torch.float8_e4m3fn).max


def _launch(logits: torch.Tensor, targets: torch.Tensor, grad: torch.Tensor, scale: float, block: int, warps: int):
    rows, cols = logits.shape
    losses = torch.empty(rows, device=logits.device, dtype=torch.float32)
    block = min(block, triton.next_power_of_2(cols))
    _cross_entropy_rows[(rows,)](
        logits, targets, losses, grad, cols, logits.stride(0), grad.stride(0), scale, BLOCK=block, num_warps=warps
    )
    return losses


def cross_entropy_rows_(
    logits: torch.Tensor, targets: torch.Tensor, block: int = BLOCK, num_warps: int = NUM_WARPS
) -> torch.Tensor:
    """Per-row losses of ``logits`` [rows, vocab] (bf16); overwrites ``logits`` with the mean loss's gradient."""
    return _launch(logits, targets, logits, 1.0 / logits.shape[0], block, num_warps)


def cross_entropy_rows_fp8(
    logits: torch.Tensor, targets: torch.Tensor, block: int = BLOCK, num_warps: int = NUM_WARPS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row losses of ``logits`` [rows, vocab], and the summed loss's gradient times GRAD_SCALE in e5m2."""
    grad = torch.empty(logits.shape, device=logits.device, dtype=torch.float8_e5m2)
    return _launch(logits, targets, grad, GRAD_SCALE, block, num_warps), grad


def transposed(matrix: torch.Tensor, tile: tuple[int, int, int] = TRANSPOSE_TILE) -> torch.Tensor:
    """``matrix.t().contiguous()`` for a contiguous 2-D tensor, in one tiled pass."""
    rows, cols = matrix.shape
    result = torch.empty(cols, rows, device=matrix.device, dtype=matrix.dtype)
    tile_rows, tile_cols, warps = tile
    grid = (triton.cdiv(rows, tile_rows), triton.cdiv(cols, tile_cols))
    _transpose[grid](matrix, result, rows, cols, ROWS=tile_rows, COLS=tile_cols, num_warps=warps)
    return result


def to_e4m3(tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``tensor`` scaled so that its largest magnitude is e4m3's largest, in e4m3, and the scale that undoes it.
    No clamp is needed: the largest scaled value is within an fp32 rounding of 448, and rounds to it."""
    amax = torch.linalg.vector_norm(tensor.detach(), float("inf"), dtype=torch.float32).clamp_min(1e-12)
    return (tensor.detach().float() * (E4M3_MAX / amax)).to(torch.float8_e4m3fn), amax / E4M3_MAX


def fp8_shapes_fit(hidden: torch.Tensor, weight: torch.Tensor) -> bool:
    """FP8 products need every dimension of their operands to be a multiple of 16."""
    return all(n % 16 == 0 for n in (*hidden.shape, weight.shape[0]))


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


class _HeadCrossEntropyFp8(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        hidden8, hidden_scale = to_e4m3(hidden)
        weight8, weight_scale = to_e4m3(weight)
        logits = torch._scaled_mm(
            hidden8, weight8.t(), hidden_scale, weight_scale, out_dtype=torch.bfloat16, use_fast_accum=True
        )
        losses, grad = cross_entropy_rows_fp8(logits, targets)
        del logits
        ctx.save_for_backward(transposed(hidden8), hidden_scale, transposed(weight8), weight_scale, grad)
        ctx.dtypes = hidden.dtype, weight.dtype
        return losses.mean()

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor):
        hidden8_t, hidden_scale, weight8_t, weight_scale, grad = ctx.saved_tensors
        grad_scale = grad_loss.float() / (GRAD_SCALE * grad.shape[0])
        grad_hidden = torch._scaled_mm(grad, weight8_t.t(), grad_scale, weight_scale, out_dtype=ctx.dtypes[0])
        grad_weight = torch._scaled_mm(
            transposed(grad), hidden8_t.t(), grad_scale, hidden_scale, out_dtype=ctx.dtypes[1]
        )
        return grad_hidden, grad_weight, None


@torch.compiler.disable
def head_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, fp8: bool = False
) -> torch.Tensor:
    """Mean cross-entropy of ``hidden @ weight.T`` against ``targets``, with fp32 softmax arithmetic.

    hidden: [tokens, width]; weight: [vocab, width]; targets: [tokens] int64. The products run in bf16 (fp32
    master weights are cast here, as autocast would), or with ``fp8`` in FP8 where every dimension is a multiple
    of 16. Kept out of torch.compile's graph: the kernel is already fused.
    """
    targets = targets.contiguous()
    with torch.autocast(hidden.device.type, enabled=False):
        if fp8 and fp8_shapes_fit(hidden, weight):
            return _HeadCrossEntropyFp8.apply(hidden, weight, targets)
        return _HeadCrossEntropy.apply(hidden.to(torch.bfloat16), weight.to(torch.bfloat16), targets)
