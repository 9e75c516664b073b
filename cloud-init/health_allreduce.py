"""All-reduce bus bandwidth across this node's GPUs: the health gate's check, and how its baseline is measured.

A bad NVLink/NVSwitch, a throttled GPU or a missing fabric manager would slow every rank of the job.
    torchrun --standalone --nproc-per-node=8 health_allreduce.py --min-busbw 300
Rank 0 prints JSON; GB/s as nccl-tests: algbw = bytes/time, busbw = algbw * 2(n-1)/n. It exits 1 (torchrun fails)
when the busbw of the largest size is below --min-busbw. `--backend gloo` runs on CPU for tests. `busbw` is also
what the cluster acceptance (health/acceptance.py) times across nodes and pairs of nodes.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def busbw(size_bytes: int, dtype: torch.dtype, device: torch.device, iters: int, warmup: int,
          group: dist.ProcessGroup | None = None) -> dict:
    """One size's all-reduce over ``group`` (the world by default): time per call, algbw and busbw in GB/s."""
    world = dist.get_world_size(group)

    def timed(x: torch.Tensor, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(x, group=group)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier(group=group)
        return time.perf_counter() - start

    x = torch.ones(size_bytes * 8 // torch.finfo(dtype).bits, dtype=dtype, device=device)
    timed(x, warmup)
    seconds = timed(x, iters) / iters
    algbw = size_bytes / seconds / 1e9
    return {"size_bytes": size_bytes, "time_ms": seconds * 1e3, "algbw_gbps": algbw,
            "busbw_gbps": algbw * 2 * (world - 1) / world}  # fmt: skip


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes-mib", default="64,128,256,512,1024")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    p.add_argument("--min-busbw", type=float, default=0.0, help="GB/s; 0 reports only")
    args = p.parse_args(argv)

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if args.backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    dtype = getattr(torch, args.dtype)

    results = [busbw(mib << 20, dtype, device, args.iters, args.warmup) for mib in map(int, args.sizes_mib.split(","))]
    results = [{**r, "time_ms": round(r["time_ms"], 3), "algbw_gbps": round(r["algbw_gbps"], 2),
                "busbw_gbps": round(r["busbw_gbps"], 2)} for r in results]  # fmt: skip
    figure = results[-1]["busbw_gbps"]
    ok = figure >= args.min_busbw
    if rank == 0:
        report = {"world_size": world, "backend": args.backend, "dtype": args.dtype, "results": results,
                  "busbw_gbps": figure, "min_busbw_gbps": args.min_busbw, "ok": ok}  # fmt: skip
        print(json.dumps(report))
    dist.destroy_process_group()
    return 0 if ok or rank != 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
