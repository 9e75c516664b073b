"""All-reduce bus bandwidth across this node's GPUs: the health gate's check, and how its baseline is measured.

A bad NVLink/NVSwitch, a throttled GPU or a missing fabric manager would slow every rank of the job.
    torchrun --standalone --nproc-per-node=8 health_allreduce.py --min-busbw 300
Rank 0 prints JSON; GB/s as nccl-tests: algbw = bytes/time, busbw = algbw * 2(n-1)/n. It exits 1 (torchrun fails)
when the busbw of the largest size is below --min-busbw. `--backend gloo` runs on CPU for tests.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist


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

    def timed(x: torch.Tensor, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(x)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()
        return time.perf_counter() - start

    results = []
    for mib in map(int, args.sizes_mib.split(",")):
        size = mib << 20
        x = torch.ones(size * 8 // torch.finfo(dtype).bits, dtype=dtype, device=device)
        timed(x, args.warmup)
        seconds = timed(x, args.iters) / args.iters
        algbw = size / seconds / 1e9
        busbw = algbw * 2 * (world - 1) / world
        results.append({"size_bytes": size, "time_ms": round(seconds * 1e3, 3), "algbw_gbps": round(algbw, 2),
                        "busbw_gbps": round(busbw, 2)})  # fmt: skip
    busbw = results[-1]["busbw_gbps"]
    ok = busbw >= args.min_busbw
    if rank == 0:
        report = {"world_size": world, "backend": args.backend, "dtype": args.dtype, "results": results,
                  "busbw_gbps": busbw, "min_busbw_gbps": args.min_busbw, "ok": ok}  # fmt: skip
        print(json.dumps(report))
    dist.destroy_process_group()
    return 0 if ok or rank != 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
