"""The job's own GPU kernels, behind one entry: ``select`` says which of them this device runs.

- the fused MLP (``fused_mlp``, cuBLASLt epilogues through ctypes: GELU inside the up-projection, its derivative
  inside the backward product);
- the fused output layer + cross-entropy (``fused_loss``, a Triton kernel that writes the loss gradient in the
  forward pass), and its FP8 variant on GPUs with FP8 tensor cores.

Each runs a start-up self-test on small operands against PyTorch's own ops (forward and backward); a kernel that
fails it, or cannot even load (another PyTorch, Triton or driver than it was written for), is left out with a
warning and the job runs PyTorch's ops instead: a changed library never stops a job from starting. The job asks
for them with ``kernels: auto`` (``off`` never imports this package, and the node's code bundle then leaves it out).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from training.model import Fused

MLP_TOLERANCE = 2e-2
LOSS_TOLERANCE = 2e-2
FP8_TOLERANCE = 6e-2
"""Relative error (of outputs and gradients) within which a kernel passes its self-test: bf16 rounding for the bf16
kernels; FP8's 3 and 2 mantissa bits move the output layer's gradients by ~3% (tests/training/kernels)."""


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def _random(generator: torch.Generator, device: torch.device, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, device=device, generator=generator) * scale


def _check_mlp(device: torch.device, bias: bool) -> Callable:
    """The fused MLP, after its output and every gradient matched PyTorch's on a small MLP."""
    from torch import nn

    from training.kernels.fused_mlp import gelu_mlp

    generator = torch.Generator(device=device).manual_seed(0)
    width, rows = 64, 96
    up, down = nn.Linear(width, 4 * width, bias=bias).to(device), nn.Linear(4 * width, width, bias=bias).to(device)
    x = _random(generator, device, rows, width).bfloat16()
    grad = _random(generator, device, rows, width).bfloat16()
    fused = gelu_mlp(x.clone().requires_grad_(), up, down)
    fused_grads = torch.autograd.grad(fused, list(up.parameters()) + list(down.parameters()), grad)
    reference = down(F.gelu(up(x.float()), approximate="tanh"))
    reference_grads = torch.autograd.grad(reference, list(up.parameters()) + list(down.parameters()), grad.float())
    errors = [_relative(fused, reference)] + [_relative(a, b) for a, b in zip(fused_grads, reference_grads,
                                                                              strict=True)]
    if max(errors) > MLP_TOLERANCE:
        raise ValueError(f"its results differ from PyTorch's by up to {max(errors):.1%}")
    return gelu_mlp


def _check_loss(device: torch.device, fp8: bool) -> Callable:
    """The fused output layer + loss (in FP8 where ``fp8``), after its loss and gradients matched PyTorch's."""
    from training.kernels.fused_loss import head_cross_entropy

    generator = torch.Generator(device=device).manual_seed(1)
    rows, width, vocab = 128, 64, 1024  # multiples of 16: the FP8 products run
    hidden = _random(generator, device, rows, width)
    weight = _random(generator, device, vocab, width, scale=width**-0.5)
    targets = torch.randint(0, vocab, (rows,), device=device, generator=generator)
    fused_inputs = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]
    fused = head_cross_entropy(*fused_inputs, targets, fp8=fp8)
    fused_grads = torch.autograd.grad(fused, fused_inputs)
    plain_inputs = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]
    plain = F.cross_entropy(plain_inputs[0] @ plain_inputs[1].t(), targets)
    plain_grads = torch.autograd.grad(plain, plain_inputs)
    errors = [_relative(fused, plain)] + [_relative(a, b) for a, b in zip(fused_grads, plain_grads, strict=True)]
    if max(errors) > (FP8_TOLERANCE if fp8 else LOSS_TOLERANCE):
        raise ValueError(f"its results differ from PyTorch's by up to {max(errors):.1%}")
    return head_cross_entropy


def _tried(name: str, check: Callable[[], Callable], warnings: list[str]) -> Callable | None:
    try:
        return check()
    except Exception as error:  # any failure to load or to compute leaves the kernel out, never the job
        warnings.append(f"warning: the {name} is off: {type(error).__name__}: {str(error).splitlines()[0]}; "
                        "PyTorch's ops run instead")
        return None


def select(device: torch.device, half: bool, bias: bool) -> tuple[Fused, list[str]]:
    """The kernels that pass their self-test on ``device`` for a model in bf16 (``half``) with or without biases,
    and a warning for each that does not. Only CUDA in bf16 has any: elsewhere PyTorch's ops run, unwarned."""
    if device.type != "cuda" or not half:
        return Fused(), []
    warnings: list[str] = []
    with torch.random.fork_rng(devices=[device]):  # the self-tests leave the job's random streams as they were
        mlp = _tried("fused MLP (cuBLASLt epilogues)", lambda: _check_mlp(device, bias), warnings)
        loss = _tried("fused output layer and loss (Triton)", lambda: _check_loss(device, fp8=False), warnings)
        fp8 = None
        if loss is not None and torch.cuda.get_device_capability(device) >= (8, 9):
            fp8 = _tried("FP8 output layer", lambda: _check_loss(device, fp8=True), warnings)
    return Fused(mlp=mlp, head_loss=loss, fp8_head=fp8 is not None), warnings
