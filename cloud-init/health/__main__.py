"""`python -m health`: the node's health gate (with cloud-init/ on PYTHONPATH, as gpufleet-health runs it).

    python -m health --config /etc/gpufleet/node.json \\
        --out /var/lib/gpufleet/health/gate.json --metrics /var/lib/gpufleet/metrics/health-gate.prom \\
        --reason-file /run/gpufleet/health-reason [--level deep] [--dcgm-level 3] [--devices cpu:2 [--stand-in]]

The config is the node plan, node.json (the GPU count, the fabric and the network NCCL must log, the thresholds, the
level; README.md beside this file). NCCL's settings come from the environment, as for every NCCL user on the node:
gpufleet-health loads /etc/gpufleet/nccl.env first (gpufleet-lib.sh load_nccl_env). Exit 0: healthy; 1: a check
failed (the reason file holds the first failed figure, e.g. "matmul:gpu3=412.3:min=593.4"); 2: bad arguments or
config, nothing measured.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from health import gate, result
from health.config import LEVELS, UsageError, load_config


def _devices(text: str) -> tuple[torch.device, ...]:
    """"cuda": every visible GPU; "cpu" or "cpu:N": N CPU stand-ins (tests, machines without GPUs)."""
    kind, _, count = text.partition(":")
    if kind == "cuda" and not count:
        return tuple(torch.device("cuda", i) for i in range(torch.cuda.device_count()))
    if kind == "cpu" and (not count or count.isdigit()):
        return (torch.device("cpu"),) * int(count or 1)
    raise UsageError(f"--devices {text}: write cuda, cpu or cpu:N")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m health", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", type=Path, required=True, help="the node plan, node.json")
    p.add_argument("--level", choices=LEVELS, help="override the config's level")
    p.add_argument("--dcgm-level", type=int, choices=[1, 2, 3], help="override the config's DCGM diagnostic level")
    p.add_argument("--devices", default="cuda", help="cuda (default), cpu or cpu:N")
    p.add_argument("--stand-in", action="store_true",
                   help="the devices stand in for the node's GPUs: judge their count, not the GPU thresholds")
    p.add_argument("--out", type=Path, help="write the report as JSON here")
    p.add_argument("--metrics", type=Path, help="write node-exporter textfile metrics here")
    p.add_argument("--reason-file", type=Path, help="write the first failed figure here (removed when healthy)")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        node = load_config(args.config)
        config = gate.GateConfig(node=node, level=args.level or node.level,
                                 dcgm_level=args.dcgm_level or node.dcgm_level, devices=_devices(args.devices),
                                 stand_in=args.stand_in)
    except UsageError as error:
        print(f"gpufleet health: {error}", file=sys.stderr)
        return result.EXIT_USAGE
    report = gate.run(config)
    for row in report.failed:
        print(f"gpufleet health: FAILED {row.check} {row.subject}: {row.figure} {row.unit} "
              f"(threshold {row.rule} {row.threshold}) {row.detail}", file=sys.stderr)
    return result.write(report, args.out, args.metrics, args.reason_file)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
