"""Throughput accounting (tokens/s, MFU) and metric sinks: JSON lines, TensorBoard, a progress bar.

Only rank 0 writes. Loss values reach the host only at log intervals, so
logging never forces a device sync on ordinary steps.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s from NVIDIA's datasheets, matched
# against torch.cuda.get_device_name; the most specific name is listed first. The A10G
# (AWS) has no published figure; the A10's is used. The planner overrides with peak_tflops.
GPU_PEAK_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),
    ("H200", 989.0),
    ("H800", 989.0),
    ("H20", 148.0),
    ("B200", 2250.0),
    ("A100", 312.0),
    ("A800", 312.0),
    ("L40S", 362.0),
    ("L40", 181.0),
    ("L4", 121.0),
    ("A10G", 125.0),
    ("A10", 125.0),
)


def peak_tflops(device: torch.device, configured: float) -> float | None:
    """Peak dense bf16 TFLOP/s of one device: the configured value, else the table, else None."""
    if configured > 0:
        return configured
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, value in GPU_PEAK_TFLOPS:
        if key in name:
            return value
    return None


def mfu(flops_per_token: int, tokens_per_s: float, world_size: int, peak: float | None) -> float | None:
    """Model FLOPs utilisation: achieved training FLOP/s over the peak of all devices."""
    if not peak:
        return None
    return flops_per_token * tokens_per_s / (world_size * peak * 1e12)


class MetricsWriter:
    """Rank 0's metric sinks; on other ranks every method is a no-op."""

    def __init__(self, run_dir: Path, enabled: bool, total_steps: int, start_step: int, progress: bool) -> None:
        self.enabled = enabled
        self.jsonl = None
        self.tensorboard = None
        self.bar = None
        if not enabled:
            return
        run_dir.mkdir(parents=True, exist_ok=True)
        self.jsonl = open(run_dir / "metrics.jsonl", "a", buffering=1)  # noqa: SIM115 (closed in close())
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tensorboard = SummaryWriter(log_dir=str(run_dir / "tensorboard"))
        except ImportError:
            self.tensorboard = None
        if progress and sys.stdout.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("step {task.completed}/{task.total}"),
                BarColumn(),
                TextColumn("{task.fields[info]}"),
                TimeRemainingColumn(),
            )
            self.task = self.bar.add_task("train", total=total_steps, completed=start_step, info="")
            self.bar.start()

    def log(self, step: int, values: dict) -> None:
        if not self.enabled:
            return
        self.jsonl.write(json.dumps({"step": step, "time": time.time(), **values}) + "\n")
        if self.tensorboard is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)):
                    self.tensorboard.add_scalar(f"train/{key}", value, step)
        if self.bar is not None and "loss" in values:
            info = f"loss {values['loss']:.4f}  {values['tokens_per_s']:,.0f} tok/s"
            if values.get("mfu") is not None:
                info += f"  MFU {100 * values['mfu']:.1f}%"
            self.bar.update(self.task, completed=step, info=info)

    def advance(self, step: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=step)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        if self.tensorboard is not None:
            self.tensorboard.close()
        if self.jsonl is not None:
            self.jsonl.close()
