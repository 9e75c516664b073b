"""Find and load a stack for the CLI: by name under stacks/, or by path."""

from __future__ import annotations

from pathlib import Path

from components.errors import SpecError
from components.paths import PROJECT_ROOT
from components.plan.facts import DeployFacts, lookups
from components.plan.model import ClusterPlan
from components.plan.planner import plan
from components.program import region_key
from components.rules import validate
from components.spec import ClusterSpec
from components.stackfile import CLUSTER_KEY, StackFile, load_stack_file, stack_path
from fleet.preview import stand_in_facts


def resolve(stack: str | None, stack_file: str | None) -> StackFile:
    """`--stack NAME` reads stacks/Pulumi.NAME.yaml of this project; `--stack-file PATH` reads PATH."""
    path = Path(stack_file) if stack_file else stack_path(PROJECT_ROOT, stack or "local")
    return load_stack_file(path)


def spec_and_plan(stack: StackFile) -> tuple[ClusterSpec, ClusterPlan]:
    """The same spec and plan the Pulumi program builds, without the engine (for cost, local bring-up): deploy-time
    look-ups, where a spec needs any, get the preview's stand-in answers."""
    raw = stack.config.get(CLUSTER_KEY)
    key = region_key(raw)
    region = str(stack.config.get(key, "")) if key else ""
    try:
        spec = validate(raw, region, stack.name)
        return spec, plan(spec, stack.name, stand_in_facts(stack, spec) if lookups(spec) else DeployFacts())
    except SpecError as error:
        raise SpecError(error.problems, str(stack.path)) from None
