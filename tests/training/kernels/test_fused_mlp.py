"""The fused MLP: cuBLASLt's column-major view of our row-major products (checked everywhere, by emulating the
column-major product in NumPy), and on a GPU, the fused operators and model against PyTorch's own ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from train_helpers import bf16_losses, tiny_twins

from training.kernels.cublaslt import _OP_T, plan
from training.model import Fused

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="cuBLASLt runs only on a CUDA device")


def _column_major(memory: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    """The [rows, cols] column-major matrix with leading dimension ``ld`` that flat ``memory`` holds."""
    return np.lib.stride_tricks.as_strided(memory, (rows, cols), (memory.itemsize, ld * memory.itemsize))


@pytest.mark.parametrize("left_transposed", [False, True])
@pytest.mark.parametrize("right_transposed", [True, False])
@pytest.mark.parametrize(("rows", "inner", "cols"), [(6, 4, 8), (16, 8, 24), (3, 5, 7)])
def test_plan_computes_the_row_major_product(rows, inner, cols, right_transposed, left_transposed):
    generator = np.random.default_rng(rows * cols)
    left = generator.standard_normal((inner, rows) if left_transposed else (rows, inner))
    right = generator.standard_normal((cols, inner) if right_transposed else (inner, cols))
    shape = plan(rows, inner, cols, right_transposed, left_transposed)

    a = _column_major(right.ravel(), *shape.a)
    b = _column_major(left.ravel(), *shape.b)
    d_memory = np.zeros(rows * cols)
    product = (a.T if shape.transa == _OP_T else a) @ (b.T if shape.transb == _OP_T else b)
    _column_major(d_memory, *shape.d)[...] = product

    expected = (left.T if left_transposed else left) @ (right.T if right_transposed else right)
    assert np.allclose(d_memory.reshape(rows, cols), expected)


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def _reference_mlp(x, up_weight, up_bias, down_weight, down_bias):
    hidden = F.gelu(F.linear(x, up_weight, up_bias), approximate="tanh")
    return F.linear(hidden, down_weight, down_bias)


@needs_cuda
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("rows", "width"), [(4096, 768), (520, 64)])
def test_fused_mlp_matches_pytorch_forward_and_backward(rows, width, bias):
    from training.kernels.fused_mlp import _gelu_mlp

    generator = torch.Generator(device="cuda").manual_seed(rows)

    def random(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=generator) * scale).bfloat16()

    inputs = [
        random(rows, width),
        random(4 * width, width, scale=width**-0.5),
        random(4 * width, scale=0.1) if bias else None,
        random(width, 4 * width, scale=(4 * width) ** -0.5),
        random(width, scale=0.1) if bias else None,
    ]
    grad_y = random(rows, width)
    fused_inputs = [t.clone().requires_grad_() if t is not None else None for t in inputs]
    plain_inputs = [t.float().requires_grad_() if t is not None else None for t in inputs]

    fused, _, _ = _gelu_mlp(*fused_inputs)
    fused.backward(grad_y)
    plain = _reference_mlp(*plain_inputs)
    plain.backward(grad_y.float())

    assert fused.dtype == torch.bfloat16
    assert _relative(fused, plain) < 1e-2
    mine = [t for t in fused_inputs if t is not None]
    theirs = [t for t in plain_inputs if t is not None]
    assert len(mine) == (5 if bias else 3)
    for a, b in zip(mine, theirs, strict=True):
        assert _relative(a.grad, b.grad) < 2e-2


@needs_cuda
@pytest.mark.parametrize("bias", [True, False])
def test_model_with_fused_mlp_matches_the_plain_path_compiled(bias):
    from training.kernels.fused_mlp import gelu_mlp

    plain, fused = tiny_twins(64, "cuda", fused=Fused(mlp=gelu_mlp), bias=bias)
    losses = bf16_losses((plain, torch.compile(fused)), torch.randint(0, 256, (8, 65), device="cuda"))
    assert abs(losses[0] - losses[1]) / losses[0] < 2e-3
    names = ["mlp.up.weight", "mlp.down.weight", "ln2.weight"] + ["mlp.up.bias", "mlp.down.bias"] * bias
    for name in names:
        mine, theirs = fused.blocks[0].get_parameter(name), plain.blocks[0].get_parameter(name)
        assert mine.grad.dtype == torch.float32
        assert _relative(mine.grad, theirs.grad) < 3e-2, name
