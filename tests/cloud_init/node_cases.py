"""The node bootstrap cases: the head and the workers of every shipped stack, rendered by the real planner, and a
node booted from one of them the way the local cluster boots it (here.local.cloudconfig)."""

from __future__ import annotations

from pathlib import Path

from fleet.stacks import spec_and_plan
from here.local.cloudconfig import execute
from plan.bootstrap import shell_value
from plan.bundle import bundle_sha256
from plan.model import ROLES, ClusterPlan
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file, stack_name_of

STACKS = sorted((PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml"))
CASES = [f"{stack_name_of(path)}-{role}" for path in STACKS for role in ROLES]
# Snapshots name the bundle by this, so a change to training/ does not rewrite every snapshot.
BUNDLE = "<bundle-sha256>"


def plan_of(stack: str) -> ClusterPlan:
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))[1]


def user_data(case: str) -> str:
    """The rendered #cloud-config of a case, "<stack>-<role>"."""
    stack, role = case.rsplit("-", 1)
    return getattr(plan_of(stack), role).user_data


def snapshot_text(case: str) -> str:
    return user_data(case).replace(bundle_sha256(), BUNDLE)


def boot(user_data_text: str, root: Path, metadata: str = "127.0.0.1:9", **settings: object) -> Path:
    """Write a node's user-data under root as the local cluster does, with {metadata} this instance's endpoint; then
    override settings the way a test needs them (later assignments in node.env win). Returns the entry script."""
    entry = execute(user_data_text, root, {"metadata": metadata})
    with open(root / "etc/gpufleet/node.env", "a") as env:
        env.writelines(f"GF_{key.upper()}={shell_value(value)}\n" for key, value in settings.items())
    return entry
