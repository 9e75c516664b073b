"""All-reduce bandwidth across this node's GPUs, for the health gate and for setting its baseline.

A node whose GPUs cannot reach the expected bus bandwidth (bad NVLink/NVSwitch, a GPU stuck at low clocks, a missing
fabric manager) would slow every rank of the job, so the gate measures it before the node joins.

    torchrun --standalone --nproc-per-node=8 health_allreduce.py --min-busbw 300
    torchrun --standalone --nproc-per-node=2 health_allreduce.py --backend gloo --sizes-mib 1,4   # CPU smoke test

Rank 0 prints one JSON object. Bandwidths are in GB/s (1e9 bytes/s), as nccl-tests reports them:
algbw = bytes / time, busbw = algbw * 2(n-1)/n for all-reduce. The gate compares the busbw of the largest size.
Rank 0 exits 1 when that busbw is below --min-busbw, which makes torchrun fail.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes-mib", default="64,128,256,512,1024", help="comma-separated message sizes in MiB")
    p.add_argument("--iters", type=int, default=20, help="timed all-reduces per size")
    p.add_argument("--warmup", type=int, default=5, help="untimed all-reduces per size")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"], help="gloo runs on CPU tensors")
    p.add_argument(
        "--min-busbw", type=float, default=0.0, help="GB/s the largest size must reach (0: report only)"
    )
    return p.parse_args(argv)


def bus_factor(world: int) -> float:
    """All-reduce moves 2(n-1)/n of the buffer over the busiest link (nccl-tests PERFORMANCE.md)."""
    return 2 * (world - 1) / world


def measure(size_bytes: int, dtype: torch.dtype, device: torch.device, iters: int, warmup: int) -> float:
    """Seconds per all-reduce of size_bytes, averaged over iters after warmup."""
    x = torch.ones(size_bytes * 8 // torch.finfo(dtype).bits, dtype=dtype, device=device)
    for _ in range(warmup):
        dist.all_reduce(x)
    sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    sync(device)
    return (time.perf_counter() - start) / iters


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dtype = getattr(torch, args.dtype)
    results = []
    for mib in (int(s) for s in args.sizes_mib.split(",")):
        size = mib << 20
        seconds = measure(size, dtype, device, args.iters, args.warmup)
        algbw = size / seconds / 1e9
        results.append(
            {
                "size_bytes": size,
                "time_ms": round(seconds * 1e3, 3),
                "algbw_gbps": round(algbw, 2),
                "busbw_gbps": round(algbw * bus_factor(world), 2),
            }
        )
    busbw = results[-1]["busbw_gbps"]
    ok = busbw >= args.min_busbw
    if rank == 0:
        print(
            json.dumps(
                {
                    "world_size": world,
                    "backend": args.backend,
                    "dtype": args.dtype,
                    "results": results,
                    "busbw_gbps": busbw,
                    "min_busbw_gbps": args.min_busbw,
                    "ok": ok,
                }
            )
        )
    dist.destroy_process_group()
    return 0 if ok or rank != 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
