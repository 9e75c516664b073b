"""Seconds from power-on to each boot phase (cloud-init done, bundle fetched, gate passed, rendezvous, first training
step) of shipped stacks booted in the boot harness (components/boot), a head and a worker each, with the node's
outcome; against the baseline of the same run, a bare machine of the same kind reaching systemd's "running" with
cloud-init off. Prints one JSON object. Needs root.

    sudo .venv/bin/python benchmarks/boot_harness.py [--stack aws-g4dn-dev ...] [--driver pinned] [--job tiny]

--driver pinned: the fake GPU stack reports the plan's pinned driver instead of the image's (the DLAMI's 580.x
fails the gate today), so the phases after the gate can be measured. --job tiny: the stack's job as the local
cluster's tiny model, so a CPU-only harness host reaches the first step in seconds instead of GPT-2's minutes.
Both are labelled in the output; neither changes how the plan renders anything else. GF_BOOT_KEEP=1 keeps each
run's directory (disks, service logs) under GF_BOOT_CACHE/runs.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.boot import report, rootfs  # noqa: E402
from components.boot.cluster import Boot, node_settings  # noqa: E402
from components.boot.machine import Machine, MachineConfig  # noqa: E402
from components.stackfile import CLUSTER_KEY  # noqa: E402
from fleet.stacks import resolve, spec_and_plan  # noqa: E402

STACKS = ("aws-g4dn-dev", "ali-spot", "tencent-spot")
TINY_JOB = {"model": "tiny", "steps": 20, "seqLen": 128, "globalBatch": 24, "microBatch": 4, "checkpointEvery": 10,
            "logEvery": 1}


def machine_boot_seconds(directory: Path) -> float:
    """The baseline: a plain machine, no cloud-init, from power-on to systemd's start-up finished."""
    name = "gfbb" + secrets.token_hex(2)
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        config = MachineConfig(name=name, namespace=name, lower=rootfs.tree(rootfs.PLAIN), directory=directory,
                               dmi={}, files={"/etc/cloud/cloud-init.disabled": (b"", 0o644)})
        with Machine(config) as machine:
            machine.wait_booted()
            return time.monotonic() - machine.started
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def stack_plan(name: str, job: dict | None, work: Path):
    stack = resolve(name, None)
    if job:
        config = dict(stack.config)
        config[CLUSTER_KEY] = {**config[CLUSTER_KEY], "job": job}
        path = work / f"Pulumi.{stack.name}.yaml"
        path.write_text(yaml.safe_dump({"config": config}))
        stack = resolve(None, str(path))
    return spec_and_plan(stack)[1]


def boot_stack(name: str, args, work: Path) -> dict:
    plan = stack_plan(name, TINY_JOB if args.job == "tiny" else None, work)
    driver = node_settings(plan.head.user_data)["GF_DRIVER_VERSION"] if args.driver == "pinned" else None
    with Boot(plan, driver=driver, keep=bool(os.environ.get("GF_BOOT_KEEP"))) as boot:
        outcomes = {node.name: report.wait_outcome(node, args.timeout) for node in boot.nodes}
        if set(outcomes.values()) == {"training"}:
            _wait_first_step(boot, args.timeout)
        nodes = {}
        for node in boot.nodes:
            collected = report.collect(node)
            nodes[node.name] = {"outcome": outcomes[node.name],
                                "phases": {k: None if v is None else round(v, 1) for k, v in collected.phases.items()}}
    cluster = {phase: min((n["phases"][phase] for n in nodes.values() if n["phases"][phase] is not None),
                          default=None) for phase in report.PHASES}
    return {"cloud": plan.cloud, "instance_type": plan.instance.name, "nodes": nodes, "cluster_phases": cluster}


def _wait_first_step(boot: Boot, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(report.collect(node).phases["first-step"] is not None for node in boot.nodes):
            return
        time.sleep(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", action="append", help="a shipped stack (repeatable); default: one per cloud")
    parser.add_argument("--driver", choices=("image", "pinned"), default="image")
    parser.add_argument("--job", choices=("stack", "tiny"), default="stack")
    parser.add_argument("--timeout", type=float, default=900, help="seconds each node may take to its outcome")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind the boots (and their cleanup) on SIGTERM
    with tempfile.TemporaryDirectory(prefix="gpufleet-boot-bench-", dir=rootfs.CACHE) as tmp:
        work = Path(tmp)
        baseline = machine_boot_seconds(work / "baseline")
        stacks = {name: boot_stack(name, args, work) for name in args.stack or STACKS}
    for result in stacks.values():
        result["cluster_phases_vs_machine_boot"] = {
            phase: None if at is None else round(at / baseline, 1) for phase, at in result["cluster_phases"].items()}
    print(json.dumps({"driver": args.driver, "job": args.job, "machine_boot_s": round(baseline, 2),
                      "stacks": stacks}, indent=2))


if __name__ == "__main__":
    main()
