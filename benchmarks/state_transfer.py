"""What recovering a rank's state costs on a real node, for issue 33's "state from a survivor, not the disk": the bytes
one data-parallel rank holds (model and AdamW state, as the job checkpoints them) and the seconds to bring them back
onto the GPU from the host's memory (pageable and pinned), beside today's path in the same run: the checkpoint read
back from disk (torch.load of the file the job writes) and moved to the GPU.

    python3 benchmarks/state_transfer.py --model gpt2 --repeats 5

Prints one JSON object. Needs a CUDA device (exit 2 without one). The state is built the way the job builds it
(training.model.GPT, fused AdamW over its parameter groups) and given one optimizer step so AdamW's moments exist.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cuda_timing import cuda_missing
from training import checkpoint
from training.config import TrainConfig
from training.model import GPT


def rank_state(model_name: str) -> dict:
    """A GPU rank's model and optimizer state after one step, as the job's checkpoint holds them."""
    cfg = TrainConfig(model=model_name)
    model = GPT.from_config(cfg, half=True).cuda()
    optimizer = torch.optim.AdamW(model.param_groups(cfg.weight_decay), lr=cfg.lr, fused=True)
    tokens = torch.randint(0, cfg.size.vocab_size, (2, cfg.seq_len), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        model(tokens, tokens).backward()
    optimizer.step()
    torch.cuda.synchronize()
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict()}


def tensors(state) -> list[torch.Tensor]:
    """Every distinct tensor of ``state`` (tied weights once): what a peer would send."""
    seen, found = set(), []

    def walk(value) -> None:
        if isinstance(value, torch.Tensor):
            key = (value.untyped_storage().data_ptr(), value.storage_offset(), value.shape)
            if key not in seen:
                seen.add(key)
                found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(state)
    return found


def to_gpu(host: list[torch.Tensor]) -> None:
    for tensor in host:
        tensor.to("cuda", non_blocking=True)
    torch.cuda.synchronize()


def seconds(run, repeats: int) -> float:
    """Median wall seconds of ``run()`` over ``repeats`` calls after one untimed call."""
    run()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 benchmarks/state_transfer.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gpt2", help="named model size (default gpt2, 124M)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of each path (median reported)")
    args = parser.parse_args(argv)
    if cuda_missing("benchmarks/state_transfer.py"):
        return 2
    state = rank_state(args.model)
    on_gpu = tensors(state)
    nbytes = sum(t.numel() * t.element_size() for t in on_gpu)
    snapshot_s = seconds(lambda: checkpoint.snapshot(state), args.repeats)
    pageable = tensors(checkpoint.snapshot(state))
    pinned = [t.pin_memory() for t in pageable]
    pageable_s = seconds(lambda: to_gpu(pageable), args.repeats)
    pinned_s = seconds(lambda: to_gpu(pinned), args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        path = checkpoint.save(Path(tmp) / "ckpt", 1, checkpoint.snapshot(state), keep=1) / checkpoint.STATE
        disk_s = seconds(lambda: to_gpu(tensors(torch.load(path, map_location="cpu", weights_only=False))),
                         args.repeats)
        file_bytes = path.stat().st_size
    print(json.dumps({
        "model": args.model, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "tensors": len(on_gpu), "state_bytes": nbytes, "checkpoint_file_bytes": file_bytes,
        "gpu_to_host_s": round(snapshot_s, 4), "host_pageable_to_gpu_s": round(pageable_s, 4),
        "host_pinned_to_gpu_s": round(pinned_s, 4), "disk_to_gpu_s (baseline)": round(disk_s, 4),
        "pinned_vs_disk": round(pinned_s / disk_s, 4), "pageable_vs_disk": round(pageable_s / disk_s, 4),
        "pinned_gb_per_s": round(nbytes / pinned_s / 1e9, 2),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
