"""The model's precision options on the CPU: a bf16 residual stream stays bf16 and close to fp32; the fused loss
(CUDA only) leaves the CPU path untouched."""

from __future__ import annotations

import torch
from train_helpers import tiny_twins

from training.config import MODEL_SIZES, TrainConfig
from training.model import GPT


def _tokens() -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(0, 256, (4, 33), generator=torch.Generator().manual_seed(1))
    return tokens[:, :-1], tokens[:, 1:]


def test_bf16_residual_stream_stays_bf16_and_close_to_fp32():
    plain, bf16 = tiny_twins(32, residual_dtype=torch.bfloat16)
    seen = []
    bf16.blocks[-1].register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    inputs, targets = _tokens()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = bf16(inputs, targets)
    reference = plain(inputs, targets)
    assert seen == [torch.bfloat16]
    assert abs(loss.item() - reference.item()) / reference.item() < 2e-2
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in bf16.parameters())


def test_fused_loss_is_not_used_on_cpu():
    plain, fused = tiny_twins(32, fused_loss=True)
    inputs, targets = _tokens()
    assert torch.equal(fused(inputs, targets), plain(inputs, targets))


def test_fused_mlp_is_not_used_on_cpu():
    plain, fused = tiny_twins(32, fused_mlp=True)
    inputs, targets = _tokens()
    assert torch.equal(fused(inputs, targets), plain(inputs, targets))


def test_biases_exist_only_when_asked_for_and_count_in_the_flops():
    size = MODEL_SIZES["gpt2"]
    plain, biased = GPT(size, seq_len=1024), GPT(size, seq_len=1024, bias=True)
    assert not [name for name, _ in plain.named_parameters() if name.endswith(".bias")]
    width = size.n_embd
    per_block = 3 * width + width + 4 * width + width + 2 * width  # qkv, proj, up, down, two LayerNorms
    assert biased.num_params() - plain.num_params() == size.n_layer * per_block + width  # + the final LayerNorm
    assert biased.flops_per_token() - plain.flops_per_token() == 6 * (size.n_layer * per_block + width)
    assert GPT.from_config(TrainConfig(bias=True), half=False, cuda=False).num_params() == biased.num_params()
