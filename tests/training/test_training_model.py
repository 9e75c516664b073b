"""The model on the CPU: a bf16 residual stream stays bf16 and close to fp32; fused kernels run where they are given
(training.kernels picks them), and a job with kernels off never loads them."""

from __future__ import annotations

import subprocess
import sys

import torch
from train_helpers import REPO, tiny_twins

from training.config import MODEL_SIZES, TrainConfig
from training.model import GPT, Fused


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


def test_the_model_runs_the_fused_kernels_it_is_given():
    calls = []

    def mlp(x, up, down):
        calls.append("mlp")
        return down(torch.nn.functional.gelu(up(x), approximate="tanh"))

    def head_loss(hidden, weight, targets, fp8):
        calls.append(("loss", fp8))
        return torch.nn.functional.cross_entropy(hidden @ weight.t(), targets)

    plain, fused = tiny_twins(32, fused=Fused(mlp=mlp, head_loss=head_loss, fp8_head=True))
    inputs, targets = _tokens()
    assert torch.allclose(fused(inputs, targets), plain(inputs, targets))
    assert calls == ["mlp", "mlp", ("loss", True)]  # two blocks, one output layer
    assert Fused(mlp=mlp, head_loss=head_loss, fp8_head=True).keep(True, True, False).names() == ["mlp", "loss"]
    assert Fused(mlp=mlp, head_loss=head_loss, fp8_head=True).keep(True, False, True).names() == ["mlp"]


def test_a_job_with_kernels_off_never_imports_them(tmp_path):
    code = (
        "import sys; from training import train; "
        f"code = train.main(['--model', 'tiny', '--seq-len', '16', '--device', 'cpu', '--steps', '1', '--kernels', "
        f"'off', '--run-dir', '{tmp_path}', '--progress', 'false']); "
        "print([m for m in sys.modules if m.startswith('training.kernels')], file=sys.stderr); sys.exit(code)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_biases_exist_only_when_asked_for_and_count_in_the_flops():
    size = MODEL_SIZES["gpt2"]
    plain, biased = GPT(size, seq_len=1024), GPT(size, seq_len=1024, bias=True)
    assert not [name for name, _ in plain.named_parameters() if name.endswith(".bias")]
    width = size.n_embd
    per_block = 3 * width + width + 4 * width + width + 2 * width  # qkv, proj, up, down, two LayerNorms
    assert biased.num_params() - plain.num_params() == size.n_layer * per_block + width  # + the final LayerNorm
    assert biased.flops_per_token() - plain.flops_per_token() == 6 * (size.n_layer * per_block + width)
    assert GPT.from_config(TrainConfig(bias=True), half=False).num_params() == biased.num_params()
