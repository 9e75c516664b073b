"""The fused output layer + cross-entropy kernel against PyTorch's own ops (CUDA only: it is a Triton kernel)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from training.config import MODEL_SIZES

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="the fused loss is a CUDA (Triton) kernel")


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize(("rows", "vocab", "width"), [(2048, 50304, 768), (300, 257, 64), (7, 4096, 32)])
def test_loss_and_gradients_match_pytorch(rows, vocab, width):
    from training.fused_loss import head_cross_entropy

    generator = torch.Generator(device="cuda").manual_seed(rows)
    hidden = torch.randn(rows, width, device="cuda", generator=generator)
    weight = torch.randn(vocab, width, device="cuda", generator=generator) * width**-0.5
    targets = torch.randint(0, vocab, (rows,), device="cuda", generator=generator)
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


def test_model_with_fused_loss_matches_the_plain_path():
    from training.model import GPT

    torch.manual_seed(0)
    plain = GPT(MODEL_SIZES["tiny"], seq_len=64).cuda()
    fused = GPT(MODEL_SIZES["tiny"], seq_len=64, fused_loss=True).cuda()
    fused.load_state_dict(plain.state_dict())
    tokens = torch.randint(0, 256, (8, 65), device="cuda")
    losses = []
    for model in (plain, fused):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        losses.append(loss.item())
    assert abs(losses[0] - losses[1]) / losses[0] < 2e-3
    assert _relative(fused.wte.weight.grad, plain.wte.weight.grad) < 2e-2
    assert _relative(fused.blocks[0].mlp.up.weight.grad, plain.blocks[0].mlp.up.weight.grad) < 2e-2
