"""Train a GPT-style language model with PyTorch DDP: the job every gpufleet node starts.

The same entry point runs as one process, on one node, or elastically across nodes::

    python -m training.train --model tiny --steps 40
    torchrun --standalone --nproc-per-node=8 -m training.train --model gpt2
    torchrun --nnodes=1:4 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HEAD:29400 \\
        -m training.train --model gpt2 --checkpoint-dir /var/lib/gpufleet/checkpoints

Every optimizer step trains on exactly ``global_batch`` sequences, the same ones at any world size
(``training.batching``), so the job runs at any number of ranks up to ``global_batch`` and a resume after the world
size changed goes on as if it had not. NCCL is used on GPUs and gloo on CPU.

Exit codes: 0 when the run is done, or when SIGTERM / SIGUSR1 (the spot watcher) reached this rank's node and the
job stopped at a step boundary with a checkpoint; 75 on the other ranks of that stop (they stopped only because a
rank elsewhere was signalled: a spot node leaving), so their elastic agent restarts them and the job goes on without
it; 2 for settings that cannot run (a one-paragraph message on stderr) and for a run whose loss or gradient norm
stopped being finite (the checkpoints written before stay the newest). When a node joins the running job, torchrun
stops the workers with SIGTERM to re-form the job: the same stop, so the re-formed job goes on from that step.
Every node keeps its own copy of each checkpoint in its local checkpoint directory (no shared storage needed); a
resume starts from the newest copy any node holds. The last stdout line on rank 0 is a JSON summary (also written
to ``<run_dir>/summary.json``).

The steps are modules of their own, in the order ``run`` takes them: set-up (``training.prepare``), resume
(``training.resume``), the step loop (``training.loop``) with its checkpoints and stops (``training.stopping``), and
the summary (``training.summary``). ``main(argv, form_world)`` takes the hook that forms the job's world: a gpufleet
node passes one that runs the cluster acceptance first (cloud-init/health/run_job.py); the job itself imports nothing
outside training/.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from training import compile_cache, resume, watchdog
from training.config import ConfigError, TrainConfig, parse_args
from training.data import ShardedBatches, TokenFileError
from training.distributed import Dist, setup
from training.loop import StepLoop
from training.metrics import MetricsWriter, peak_tflops
from training.preflight import MissingPeers, UnreachablePeers
from training.prepare import announce, prepare
from training.stopping import StopFlag, ignore_stops
from training.summary import summary

# EX_TEMPFAIL: stopped with a checkpoint because another node is leaving; torchrun restarts this rank to go on.
EXIT_PEER_STOPPED = 75


def run(cfg: TrainConfig, d: Dist, started: float) -> dict:
    """Set up, resume, train, summarise; ``started``: when the process started, for the time to the first step."""
    stop = StopFlag()
    job = prepare(cfg, d)
    step, position = resume.restore(cfg, d, job.resumed, job.model, job.optimizer) if job.resumed else (0, 0)
    data = ShardedBatches(job.source, job.split, d.rank, position, d.device, prefetch=True,
                          sequence_log=cfg.sequence_log)
    writer = MetricsWriter(Path(cfg.run_dir), d.is_main, cfg.steps, step, cfg.progress)
    peak = peak_tflops(d.device, cfg.peak_tflops)
    announce(cfg, d, job)
    loop = StepLoop(cfg, d, job, data, writer, stop, step, started, peak)
    loop.run()
    return summary(cfg, d, loop)


def _own_world(cfg: TrainConfig) -> Dist:
    return setup(cfg.device)


def main(argv: list[str] | None = None, form_world: Callable[[TrainConfig], Dist] = _own_world) -> int:
    """Run the job on the command line ``argv``; ``form_world(cfg)`` forms its world (by default
    training.distributed.setup; a gpufleet node's runs the cluster acceptance in it). Returns the exit code."""
    started = time.perf_counter()
    compile_cache.isolate()  # before anything imports torch._dynamo, which fixes the cache directory on import
    try:
        cfg = parse_args(argv)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        d = form_world(cfg)
    except (UnreachablePeers, MissingPeers) as err:
        if os.environ.get("LOCAL_RANK", "0") == "0":
            print(f"error: {err}", file=sys.stderr)
        return 1
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    watch = watchdog.start(d, cfg.peer_timeout)
    try:
        result = run(cfg, d, started)
    except ConfigError as err:
        if d.is_main or isinstance(err, TokenFileError):
            print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        ignore_stops()
        if watch is not None:
            watch.stop()
        d.close()
    result["peer_heartbeat_max_gap_s"] = watch.max_gap if watch is not None else None
    if d.is_main:
        (Path(cfg.run_dir) / "summary.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result), flush=True)
    return EXIT_PEER_STOPPED if result["stopped_by_signal"] and result["signal"] is None else 0


if __name__ == "__main__":
    sys.exit(main())
