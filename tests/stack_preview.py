"""Shared by the realizer tests of every cloud: load a shipped stack exactly as the tools do, and write the
five-line stack of a cloud where its shipped stacks live."""

from __future__ import annotations

from pathlib import Path

from clouds import CLOUDS
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan.paths import PROJECT_ROOT
from spec.stackfile import CLUSTER_KEY, load_stack_file

SHIPPED = sorted((PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml"))


def preview_stack(path: Path):
    """A shipped stack as the tests see it: its spec, its plan, and the program's recorded resources and outputs."""
    stack_file = load_stack_file(path)
    spec, plan = spec_and_plan(stack_file)
    return spec, plan, run_program(stack_file)


def shipped_where(cloud: str) -> dict:
    """The region key and zone of a cloud's first shipped stack: where a minimal stack of that cloud can live."""
    for path in SHIPPED:
        config = load_stack_file(path).config
        if config[CLUSTER_KEY]["cloud"] == cloud:
            key = CLOUDS[cloud].region_key
            return {"region": {key: config[key]} if key else {}, "zone": config[CLUSTER_KEY].get("zone")}
    raise LookupError(f"no shipped stack for {cloud}: add stacks/Pulumi.{cloud}-<example>.yaml")
