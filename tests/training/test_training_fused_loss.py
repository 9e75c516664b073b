"""The fused output layer + cross-entropy kernel against PyTorch's own ops: on the GPU where there is one, else on
the CPU through Triton's interpreter (CI installs Triton for that: the `kernels` extra)."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
from train_helpers import bf16_losses, tiny_twins

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
if not CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when the kernel is defined, on first import below
pytest.importorskip("triton", reason="the fused loss is a Triton kernel; install the 'kernels' extra")

# (rows, vocab, width): GPT-2's vocabulary and odd ones; smaller on the CPU, where the interpreter is slow.
SHAPES = [(2048, 50304, 768), (300, 257, 64), (7, 4096, 32)] if CUDA else [(96, 50304, 64), (30, 257, 16)]


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize(("rows", "vocab", "width"), SHAPES)
def test_loss_and_gradients_match_pytorch(rows, vocab, width):
    from training.fused_loss import head_cross_entropy

    generator = torch.Generator(device=DEVICE).manual_seed(rows)
    hidden = torch.randn(rows, width, device=DEVICE, generator=generator)
    weight = torch.randn(vocab, width, device=DEVICE, generator=generator) * width**-0.5
    targets = torch.randint(0, vocab, (rows,), device=DEVICE, generator=generator)
    fused_inputs = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]
    plain_inputs = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]

    fused = head_cross_entropy(*fused_inputs, targets)
    (fused * 0.125).backward()
    logits = plain_inputs[0].bfloat16() @ plain_inputs[1].bfloat16().t()
    plain = F.cross_entropy(logits.float(), targets)
    (plain * 0.125).backward()

    assert torch.isfinite(fused)
    assert abs(fused.item() - plain.item()) / plain.item() < 2e-3
    for mine, theirs in zip(fused_inputs, plain_inputs, strict=True):
        assert mine.grad.dtype == torch.float32
        assert _relative(mine.grad, theirs.grad) < 2e-2


def test_rows_of_very_different_scale_and_a_target_in_the_last_block():
    from training.fused_loss import cross_entropy_rows_

    vocab = 50304
    logits = torch.zeros(3, vocab, device=DEVICE)
    logits[0] = torch.linspace(-30, 30, vocab, device=DEVICE)
    logits[1, 123] = 80.0
    logits[2] = torch.randn(vocab, device=DEVICE, generator=torch.Generator(device=DEVICE).manual_seed(3)) * 0.01
    logits = logits.bfloat16()
    targets = torch.tensor([vocab - 1, 123, vocab // 2], device=DEVICE)
    reference = logits.float().requires_grad_()
    expected = F.cross_entropy(reference, targets, reduction="none")
    expected.mean().backward()

    grad = logits.clone()
    losses = cross_entropy_rows_(grad, targets)
    assert torch.allclose(losses, expected, rtol=1e-4, atol=1e-4)
    assert _relative(grad, reference.grad) < 1e-2


@pytest.mark.skipif(not CUDA, reason="the model takes the fused path only for CUDA tensors")
def test_model_with_fused_loss_matches_the_plain_path():
    plain, fused = tiny_twins(64, "cuda", fused_loss=True)
    losses = bf16_losses((plain, fused), torch.randint(0, 256, (8, 65), device="cuda"))
    assert abs(losses[0] - losses[1]) / losses[0] < 2e-3
    assert _relative(fused.wte.weight.grad, plain.wte.weight.grad) < 2e-2
    assert _relative(fused.blocks[0].mlp.up.weight.grad, plain.blocks[0].mlp.up.weight.grad) < 2e-2
