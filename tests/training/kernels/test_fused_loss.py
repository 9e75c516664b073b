"""The fused output layer + cross-entropy kernel against PyTorch's own ops: on the GPU where there is one, else on
the CPU through Triton's interpreter (CI installs Triton for that: the `kernels` extra)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from train_helpers import bf16_losses, tiny_twins

from training.model import Fused

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"  # on the CPU through Triton's interpreter (conftest.py)
pytest.importorskip("triton", reason="the fused loss is a Triton kernel; install the 'kernels' extra")

# (rows, vocab, width): GPT-2's vocabulary and odd ones; smaller on the CPU, where the interpreter is slow.
SHAPES = [(2048, 50304, 768), (300, 257, 64), (7, 4096, 32)] if CUDA else [(96, 50304, 64), (30, 257, 16)]
FP8_SHAPES = [(2048, 50304, 768), (4096, 256, 64)] if CUDA else [(96, 50304, 64), (48, 256, 32)]
"""Every dimension a multiple of 16, as FP8 products need."""


@pytest.fixture(autouse=True)
def _exact_fp8_casts_in_the_interpreter(monkeypatch):
    """Triton 3.9's interpreter rounds float32 -> fp8 wrongly: a rounding carry out of the mantissa is lost (8000
    becomes 4096, not 8192; triton-lang/triton#8322 and PR #11897). The GPU's conversion instruction is right, so on
    the CPU the interpreter's fp8 casts are done by PyTorch's (round to nearest even) instead."""
    if CUDA:
        return
    import triton.language as tl
    from triton.runtime import interpreter

    fp8 = {tl.float8e5: torch.float8_e5m2, tl.float8e4nv: torch.float8_e4m3fn}
    convert = interpreter._convert_float

    def torch_convert(values, from_dtype, to_dtype, rounding):
        if to_dtype in fp8 and from_dtype == tl.float32:
            floats = torch.from_numpy(np.ascontiguousarray(values).view(np.float32))
            return floats.to(fp8[to_dtype]).view(torch.uint8).numpy()
        return convert(values, from_dtype, to_dtype, rounding)

    monkeypatch.setattr(interpreter, "_convert_float", torch_convert)


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def _fused_and_plain(rows: int, vocab: int, width: int, fp8: bool) -> tuple[float, float, list, list]:
    """The fused head + loss and PyTorch's (bf16 products, fp32 cross-entropy) on the same random inputs, each
    backpropagated with an incoming gradient of 1/8: (fused loss, plain loss, fused inputs, plain inputs)."""
    from training.kernels.fused_loss import head_cross_entropy

    generator = torch.Generator(device=DEVICE).manual_seed(rows)
    hidden = torch.randn(rows, width, device=DEVICE, generator=generator)
    weight = torch.randn(vocab, width, device=DEVICE, generator=generator) * width**-0.5
    targets = torch.randint(0, vocab, (rows,), device=DEVICE, generator=generator)
    fused_inputs = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]
    plain_inputs = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]

    fused = head_cross_entropy(*fused_inputs, targets, fp8=fp8)
    (fused * 0.125).backward()
    logits = plain_inputs[0].bfloat16() @ plain_inputs[1].bfloat16().t()
    plain = F.cross_entropy(logits.float(), targets)
    (plain * 0.125).backward()
    assert torch.isfinite(fused)
    for mine in fused_inputs:
        assert mine.grad.dtype == torch.float32
    return fused.item(), plain.item(), fused_inputs, plain_inputs


@pytest.mark.parametrize(("rows", "vocab", "width"), SHAPES)
def test_loss_and_gradients_match_pytorch(rows, vocab, width):
    fused, plain, fused_inputs, plain_inputs = _fused_and_plain(rows, vocab, width, fp8=False)
    assert abs(fused - plain) / plain < 2e-3
    for mine, theirs in zip(fused_inputs, plain_inputs, strict=True):
        assert _relative(mine.grad, theirs.grad) < 2e-2


@pytest.mark.parametrize(("rows", "vocab", "width"), FP8_SHAPES)
def test_fp8_loss_and_gradients_match_pytorch_within_fp8_rounding(rows, vocab, width):
    """e4m3 inputs carry 3 mantissa bits and the e5m2 gradient 2: the loss moves by ~1e-3, gradients by ~3%."""
    fused, plain, fused_inputs, plain_inputs = _fused_and_plain(rows, vocab, width, fp8=True)
    assert abs(fused - plain) / plain < 3e-3
    for mine, theirs in zip(fused_inputs, plain_inputs, strict=True):
        assert 5e-3 < _relative(mine.grad, theirs.grad) < 5e-2  # above bf16's error: the FP8 path ran


def test_fp8_falls_back_to_bf16_where_a_dimension_is_not_a_multiple_of_16():
    fused, plain, fused_inputs, plain_inputs = _fused_and_plain(40, 272, 48, fp8=True)
    assert abs(fused - plain) / plain < 2e-3
    for mine, theirs in zip(fused_inputs, plain_inputs, strict=True):
        assert _relative(mine.grad, theirs.grad) < 2e-2


def test_fp8_gradient_is_the_exact_one_within_e5m2_rounding():
    from training.kernels.fused_loss import GRAD_SCALE, cross_entropy_rows_fp8

    rows, vocab = 45, 1000
    generator = torch.Generator(device=DEVICE).manual_seed(5)
    logits = (torch.randn(rows, vocab, device=DEVICE, generator=generator) * 3).bfloat16()
    targets = torch.randint(0, vocab, (rows,), device=DEVICE, generator=generator)
    reference = logits.float().requires_grad_()
    expected = F.cross_entropy(reference, targets, reduction="none")
    expected.sum().backward()

    losses, grad = cross_entropy_rows_fp8(logits, targets)
    assert torch.allclose(losses, expected, rtol=1e-4, atol=1e-4)
    assert grad.dtype == torch.float8_e5m2 and grad.shape == (rows, vocab)
    error = (grad.float() / GRAD_SCALE - reference.grad).abs()
    # Half a step of e5m2: 2**-3 relative for normal values, half its smallest subnormal (2**-16) below them.
    assert (error <= reference.grad.abs() * 2**-3 + 2**-17 / GRAD_SCALE).all()


def test_to_e4m3_maps_the_largest_magnitude_to_448_and_rounds_the_rest_to_nearest():
    from training.kernels.fused_loss import to_e4m3

    tensor = torch.randn(300, 64, device=DEVICE, generator=torch.Generator(device=DEVICE).manual_seed(9)) * 0.02
    tensor[17, 3] = -0.5
    quantized, scale = to_e4m3(tensor)
    assert quantized.dtype == torch.float8_e4m3fn and scale.shape == ()
    assert quantized.float().abs().max().item() == 448.0 and quantized[17, 3].item() == -448.0
    error = (quantized.float() * scale - tensor).abs()
    # Half a step of e4m3: 2**-4 relative for normal values, half its smallest subnormal (2**-9) below them.
    assert (error <= tensor.abs() * 2**-4 + 2**-10 * scale).all()
    zeros, zero_scale = to_e4m3(torch.zeros(4, 4, device=DEVICE))
    assert torch.isfinite(zero_scale) and not zeros.float().any()


@pytest.mark.parametrize(("rows", "cols"), [(64, 256), (100, 300), (1, 7)])
def test_transposed_copies_every_element_including_partial_tiles(rows, cols):
    from training.kernels.fused_loss import transposed

    matrix = torch.randint(0, 256, (rows, cols), device=DEVICE, dtype=torch.uint8).view(torch.float8_e5m2)
    result = transposed(matrix)
    assert result.shape == (cols, rows) and result.is_contiguous()
    assert torch.equal(result.view(torch.uint8), matrix.view(torch.uint8).t())


@pytest.mark.skipif(not CUDA, reason="the model's bf16 path runs on CUDA")
def test_model_with_fused_loss_matches_the_plain_path():
    from training.kernels.fused_loss import head_cross_entropy

    plain, fused = tiny_twins(64, "cuda", fused=Fused(head_loss=head_cross_entropy))
    losses = bf16_losses((plain, fused), torch.randint(0, 256, (8, 65), device="cuda"))
    assert abs(losses[0] - losses[1]) / losses[0] < 2e-3
    assert _relative(fused.wte.weight.grad, plain.wte.weight.grad) < 2e-2
    assert _relative(fused.blocks[0].mlp.up.weight.grad, plain.blocks[0].mlp.up.weight.grad) < 2e-2


@pytest.mark.skipif(
    not CUDA or torch.cuda.get_device_capability() < (8, 9), reason="FP8 products need a GPU with FP8 tensor cores"
)
def test_model_with_fp8_head_matches_the_plain_path_within_fp8_rounding():
    from training.kernels.fused_loss import head_cross_entropy

    plain, fp8 = tiny_twins(64, "cuda", fused=Fused(head_loss=head_cross_entropy, fp8_head=True))
    losses = bf16_losses((plain, fp8), torch.randint(0, 256, (8, 65), device="cuda"))
    assert abs(losses[0] - losses[1]) / losses[0] < 3e-3
    assert 5e-3 < _relative(fp8.wte.weight.grad, plain.wte.weight.grad) < 5e-2
