"""Seconds from power-on to each boot phase (cloud-init done, bundle fetched, gate passed, rendezvous, first training
step) of shipped stacks booted in the boot harness (here/boot), a head and a worker each, with the node's
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleet.stacks import resolve, spec_and_plan  # noqa: E402
from here.boot import rehearsal, rootfs  # noqa: E402
from here.boot.cluster import node_settings  # noqa: E402
from here.boot.machine import Machine, MachineConfig  # noqa: E402

STACKS = ("aws-g4dn-dev", "ali-spot", "tencent-spot")


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


def boot_stack(name: str, args) -> dict:
    stack = resolve(name, None)
    if args.job == "tiny":
        stack = rehearsal.with_job(stack, rehearsal.TINY_JOB)
    plan = spec_and_plan(stack, booted=True)[1]
    driver = node_settings(plan.head.user_data)["GF_SOFTWARE_DRIVER"] if args.driver == "pinned" else None
    return rehearsal.rehearse(plan, driver=driver, timeout=args.timeout, keep=bool(os.environ.get("GF_BOOT_KEEP")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", action="append", help="a shipped stack (repeatable); default: one per cloud")
    parser.add_argument("--driver", choices=("image", "pinned"), default="image")
    parser.add_argument("--job", choices=("stack", "tiny"), default="stack")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a stack's boot may take to the first step")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind the boots (and their cleanup) on SIGTERM
    rootfs.CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpufleet-boot-bench-", dir=rootfs.CACHE) as tmp:
        baseline = machine_boot_seconds(Path(tmp) / "baseline")
    stacks = {name: boot_stack(name, args) for name in args.stack or STACKS}
    for result in stacks.values():
        result["cluster_phases_vs_machine_boot"] = {
            phase: None if at is None else round(at / baseline, 1) for phase, at in result["cluster_phases"].items()}
    print(json.dumps({"driver": args.driver, "job": args.job, "machine_boot_s": round(baseline, 2),
                      "stacks": stacks}, indent=2))


if __name__ == "__main__":
    main()
