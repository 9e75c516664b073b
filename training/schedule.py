"""The learning-rate schedule: a pure function of the step and the settings, so a resume (with the same or changed
settings) needs no saved scheduler state, and the rate logged for a step is the one it used."""

from __future__ import annotations

import math

from training.config import TrainConfig


def lr_factor(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up over warmup_steps, then cosine decay to min_lr_ratio at the last step (0-based steps)."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def learning_rate(cfg: TrainConfig, step: int) -> float:
    return cfg.lr * lr_factor(cfg, step)
