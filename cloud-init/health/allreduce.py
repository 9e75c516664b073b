"""The intra-node all-reduce as the gate has always run it (health_allreduce.py under `torchrun --standalone`, one
process per GPU), now with NCCL's log on, so the same run says which network NCCL selected.

The child inherits the gate's environment, which gpufleet-health sets up as every NCCL user on the node does
(gpufleet-lib.sh load_nccl_env: the plan's nccl.env and the fabric plugin's library path): the network NCCL picks
here is the one the job's NCCL will pick.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from health import nccl
from health.config import Fabric
from health.result import Check, failed, judge

SCRIPT = Path(__file__).resolve().parent.parent / "health_allreduce.py"


def run(processes: int, threshold: float | None, sizes_mib: tuple[int, ...], iters: int, fabric: Fabric,
        backend: str = "nccl", timeout_s: float = 600) -> list[Check]:
    """Rows: the busbw at the largest size against ``threshold``, and the NCCL network against the plan's."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-nccl-") as logs:
        child_env = {**os.environ, **nccl.DEBUG_ENV, "NCCL_DEBUG_FILE": f"{logs}/nccl.%h.%p.log"}
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
               str(SCRIPT), "--backend", backend, "--sizes-mib", ",".join(map(str, sizes_mib)), "--iters", str(iters),
               "--warmup", str(max(1, iters // 4)), "--dtype", "bfloat16" if backend == "nccl" else "float32"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=child_env, check=False)
        except subprocess.TimeoutExpired:
            return [failed("allreduce", "node", f"no result in {timeout_s:g} s")]
        log = nccl.read_logs(Path(logs))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        words = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        row = failed("allreduce", "node", f"torchrun exited {done.returncode}: {words[0]}")
        return [row, *nccl.checks(log, fabric)]
    report = json.loads(lines[-1])
    sizes = ", ".join(f"{r['size_bytes'] >> 20} MiB {r['busbw_gbps']:g}" for r in report["results"])
    row = judge("allreduce", "node", report["busbw_gbps"], "GB/s", threshold, ">=",
                f"busbw over {report['world_size']} {backend} ranks at {sizes}")
    return [row, *(nccl.checks(log, fabric) if backend == "nccl" else [])]
