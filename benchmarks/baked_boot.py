"""Power-on to the first step from a baked harness image against today's path (the stack's own image, installing the
matrix at boot), one run: per stack, the bake (`fleet image build --boot`'s), then the stack booted as written, then
booted from the baked image (`image: {baked: ID, base: ...}`), a head and a worker each. Prints one JSON object.
Needs root.

    sudo .venv/bin/python benchmarks/baked_boot.py --stack tencent-spot [--stack ...] [--job tiny]

--job tiny: the local cluster's tiny model for both boots and the bake (the job's packages are part of the matrix).
GF_BOOT_KEEP=1 keeps each boot's run directory (disks, journals, service logs) under GF_BOOT_CACHE/runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clouds.plans import bake_for  # noqa: E402
from fleet.stacks import facts_for, resolve, spec_and_plan  # noqa: E402
from here.boot import rehearsal  # noqa: E402
from here.boot.bake import build  # noqa: E402


def compare(name: str, args) -> dict:
    stack = resolve(name, None)
    if args.job == "tiny":
        stack = rehearsal.with_job(stack, rehearsal.TINY_JOB)
    spec, plan = spec_and_plan(stack, booted=True)
    started = time.monotonic()
    baked_spec, facts = facts_for(stack, spec)
    image = build(bake_for(baked_spec, stack.name, facts, booted=True), timeout=args.timeout)
    bake_s = round(time.monotonic() - started, 1)
    keep = bool(os.environ.get("GF_BOOT_KEEP"))
    today = rehearsal.rehearse(plan, timeout=args.timeout, keep=keep)
    baked_stack = rehearsal.with_setting(stack, "image", {"baked": image, "base": spec.image_base})
    from_image = rehearsal.rehearse(spec_and_plan(baked_stack, booted=True)[1], timeout=args.timeout, keep=keep)
    return {"image": image, "bake_s": bake_s, "today": today, "baked": from_image}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", action="append", required=True, help="a shipped stack (repeatable)")
    parser.add_argument("--job", choices=("stack", "tiny"), default="stack")
    parser.add_argument("--timeout", type=float, default=900, help="seconds the bake, or a boot, may take")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind the boots (and their cleanup) on SIGTERM
    print(json.dumps({"job": args.job, "stacks": {name: compare(name, args) for name in args.stack}}, indent=2))


if __name__ == "__main__":
    main()
