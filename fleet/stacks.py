"""Find and load a stack for the CLI: by name under stacks/, or by path."""

from __future__ import annotations

from pathlib import Path

from clouds.plans import plan_for
from clouds.rules import validate
from components.program import region_key
from fleet.preview import stand_in_facts
from plan.facts import DeployFacts
from plan.model import ClusterPlan
from plan.paths import PROJECT_ROOT
from spec.cluster import ClusterSpec
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY, StackFile, load_stack_file, stack_name_problem, stack_path


def resolve(stack: str | None, stack_file: str | None) -> StackFile:
    """`--stack NAME` reads stacks/Pulumi.NAME.yaml of this project (`org/project/NAME` names the same file);
    `--stack-file PATH` reads PATH; neither, the local stack. One given empty (a CI variable that was not set) is
    refused, never read as the other or as none."""
    for flag, given in (("--stack-file", stack_file), ("--stack", stack)):
        if given is not None and not given.strip():
            raise SpecError([Problem(flag, f"is empty ({given!r}), so it names no stack; a variable it was given may "
                                     "be unset.", f"pass {flag} with the stack's {'path' if 'file' in flag else 'name'}"
                                     ", or leave it out for the local stack.")])
    if stack_file is not None:
        return load_stack_file(Path(stack_file))
    parts = (stack or "local").split("/")
    problem = next(filter(None, map(stack_name_problem, parts)), None)
    if len(parts) > 3 or {".", ".."} & set(parts):
        problem = f"{stack!r} is not a stack name (NAME, or ORG/PROJECT/NAME)"
    if problem:
        raise SpecError([Problem("--stack", f"{problem}.", "pass the stack's name as `pulumi stack ls` shows it, "
                                 "or the file with --stack-file PATH.")])
    return load_stack_file(stack_path(PROJECT_ROOT, parts[-1]))


def facts_for(stack: StackFile, spec: ClusterSpec) -> tuple[ClusterSpec, DeployFacts]:
    """The spec on the candidate the cluster runs on, or else its first candidate with capacity, and the deploy-time
    look-ups' answers a plan made without the engine uses: the preview's stand-ins (every stack's capacity, and where
    its cluster runs, is looked up)."""
    return stand_in_facts(stack, spec)


def spec_and_plan(stack: StackFile, *, booted: bool = False) -> tuple[ClusterSpec, ClusterPlan]:
    """The same spec and plan the Pulumi program builds, without the engine (for cost, local bring-up): deploy-time
    look-ups, where a spec needs any, get the preview's stand-in answers. `booted`: planned for the boot harness."""
    raw = stack.config.get(CLUSTER_KEY)
    key = region_key(raw)
    region = str(stack.config.get(key, "")) if key else ""
    try:
        spec = validate(raw, region, stack.name)
        spec, facts = facts_for(stack, spec)
        return spec, plan_for(spec, stack.name, facts, booted=booted)
    except SpecError as error:
        raise SpecError(error.problems, str(stack.path)) from None
