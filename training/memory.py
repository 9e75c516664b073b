"""Pre-flight memory estimate, so a run that cannot fit fails in seconds with advice
instead of minutes later with a CUDA out-of-memory error on every rank."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from training.config import ConfigError, TrainConfig

GIB = 1 << 30


@dataclass
class MemoryEstimate:
    params: int
    grads: int
    optimizer: int
    activations: int
    overhead: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer + self.activations + self.overhead


def estimate(
    cfg: TrainConfig, n_params: int, half_precision: bool, fused_loss: bool = False, fp8_head: bool = False
) -> MemoryEstimate:
    """Bytes for fp32 params, fp32 grads, AdamW's two moments and one micro-batch's activations.

    Activations follow Korthikanti et al. (2022): about 34 * tokens * width bytes per layer in
    16-bit with fused (flash) attention, doubled in fp32; with activation checkpointing only each
    block's input is kept plus one block's worth during recomputation. The output layer keeps
    the logits and their fp32 softmax and gradient: ~10 bytes per logit, or only the bf16 logits
    (their gradient overwrites them) with the fused loss; with its FP8 products, the bf16 logits and their
    FP8 gradient while the loss runs (backward then holds the gradient and its transposed copy: less).
    """
    size = cfg.size
    tokens = cfg.micro_batch * cfg.seq_len
    width_bytes = 2 if half_precision else 4
    per_layer = 17 * width_bytes * tokens * size.n_embd
    if cfg.activation_checkpointing:
        blocks = size.n_layer * width_bytes * tokens * size.n_embd + per_layer
    else:
        blocks = size.n_layer * per_layer
    logits = (3 if fp8_head else 2 if fused_loss else width_bytes + 8) * tokens * size.vocab_size
    return MemoryEstimate(
        params=4 * n_params,
        grads=4 * n_params,
        optimizer=8 * n_params,
        activations=blocks + logits,
        overhead=GIB // 2,
    )


def available_bytes(cfg: TrainConfig, device: torch.device) -> int | None:
    """The budget to check against: the configured limit, else free CUDA memory, else None (unchecked)."""
    if cfg.memory_limit_gb > 0:
        return int(cfg.memory_limit_gb * GIB)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free
    return None


def check_fits(
    cfg: TrainConfig,
    n_params: int,
    device: torch.device,
    half_precision: bool,
    fused_loss: bool = False,
    fp8_head: bool = False,
) -> MemoryEstimate:
    """Raise ConfigError with concrete advice when the estimate exceeds the device budget."""
    need = estimate(cfg, n_params, half_precision, fused_loss, fp8_head)
    budget = available_bytes(cfg, device)
    if budget is not None and need.total > budget:
        advice = [
            f"a smaller 'micro_batch' (now {cfg.micro_batch}; global_batch stays fixed through more accumulation)"
        ]
        if not cfg.activation_checkpointing:
            advice.append("'activation_checkpointing' true")
        advice.append(f"a smaller 'model' than '{cfg.model}'")
        raise ConfigError(
            f"Model '{cfg.model}' with micro_batch={cfg.micro_batch} and seq_len={cfg.seq_len} needs about "
            f"{need.total / GIB:.1f} GiB (params {need.params / GIB:.2f}, grads {need.grads / GIB:.2f}, "
            f"AdamW {need.optimizer / GIB:.2f}, activations {need.activations / GIB:.2f}) but only "
            f"{budget / GIB:.2f} GiB is available on {device}. Try " + ", or ".join(advice) + "."
        )
    return need
