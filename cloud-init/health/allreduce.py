"""The intra-node all-reduce as the gate has always run it (health_allreduce.py under `torchrun --standalone`, one
process per GPU), now with NCCL's log on, so the same run says which network NCCL selected.

The job's own NCCL settings (/etc/gpufleet/nccl.env, the planner's) are applied first: the network NCCL picks here is
the one the job's NCCL will pick.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from health import nccl
from health.result import Check, failed, judge

SCRIPT = Path(__file__).resolve().parent.parent / "health_allreduce.py"


def read_env_file(path: Path | None) -> dict[str, str]:
    """KEY=value lines (systemd EnvironmentFile syntax as components/bootstrap.py writes it: values shell-quoted)."""
    if path is None or not path.is_file():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, raw = line.partition("=")
            found[key.strip()] = " ".join(shlex.split(raw))
    return found


def run(processes: int, threshold: float | None, sizes_mib: tuple[int, ...], iters: int, fabric: str,
        env: dict[str, str], backend: str = "nccl", timeout_s: float = 600) -> list[Check]:
    """Rows: the busbw at the largest size against ``threshold``, and the NCCL network against the fabric's."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-nccl-") as logs:
        child_env = {**os.environ, **env, **nccl.DEBUG_ENV, "NCCL_DEBUG_FILE": f"{logs}/nccl.%h.%p.log"}
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
