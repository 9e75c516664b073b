"""The Pulumi CLI steps `fleet heal` and `fleet roll` take on a deployed stack, and the nodes they see in it.

Every step is one `pulumi` command run in the project (the pipeline's credentials and backend login, as `pulumi up`
has them): `stack export` for what the stack holds, `refresh --target` so each node's instance state is what the
cloud's describe call says now (a gone instance leaves the state), and `up` narrowed with --target, --replace and
--exclude (docs/cloud-facts.md#heal-pulumi)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from components.bake_program import image_module
from fleet.update.cloud import decoded
from fleet.update.forcing import rule
from plan.heal import NodeSeen
from plan.model import ROLE_TAG
from plan.paths import PROJECT_ROOT
from spec.redaction import redacted

STACK_TYPE = "pulumi:pulumi:Stack"
# Every `pulumi up` holds to the stack's policy pack, as the deploy workflow's does.
POLICY_PACK = "policy"


class PulumiFailed(Exception):
    """A pulumi command that did not succeed: its argv and exit status."""


@dataclass(frozen=True)
class Pulumi:
    """The pulumi CLI on one stack."""

    stack: str
    command: str = "pulumi"

    def run(self, *args: str, capture: bool = False) -> str:
        argv = [self.command, *args, "--stack", self.stack, "--non-interactive"]
        try:
            done = subprocess.run(argv, cwd=PROJECT_ROOT, check=False, text=True,
                                  stdout=subprocess.PIPE if capture else None)
        except FileNotFoundError:
            raise PulumiFailed(f"no `{self.command}` on PATH: install the Pulumi CLI") from None
        if done.returncode != 0:
            raise PulumiFailed(f"`{' '.join(argv)}` exited {done.returncode}")
        return done.stdout or ""

    def export(self) -> dict:
        """The stack's deployment; an answer that holds none (a backend's notice, a truncated write) fails as a
        pulumi command does, naming what came back."""
        text = self.run("stack", "export", capture=True)
        try:
            deployment = json.loads(text)["deployment"]
        except (json.JSONDecodeError, KeyError, TypeError):
            deployment = None
        if not isinstance(deployment, dict):
            first = redacted(text.strip().split("\n", 1)[0][:120])
            raise PulumiFailed(f"`pulumi stack export --stack {self.stack}` answered no deployment JSON: {first!r}")
        return deployment

    def refresh(self, urns: Iterable[str]) -> None:
        self.run("refresh", "--yes", "--skip-preview", *_each("--target", urns))

    def up(self, *, target: Sequence[str] = (), replace: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        """`pulumi up` on the targets and what depends on them (a node's role attachment and interfaces follow it),
        or on everything but the excluded and what depends on them."""
        args = ["up", "--yes", "--skip-preview", "--policy-pack", POLICY_PACK, *_each("--target", target),
                *_each("--replace", replace), *_each("--exclude", exclude)]
        if target:
            args.append("--target-dependents")
        if exclude:
            args.append("--exclude-dependents")
        self.run(*args)


def _each(flag: str, values: Iterable[str]) -> list[str]:
    return [part for value in values for part in (flag, value)]


def node_resources(deployment: dict, cloud: str) -> list[dict]:
    """The stack's node instances (every one the stack declares: the head and fixed workers; a group's members are
    the group's, not the stack's), in the state's order, less any the engine holds for deletion."""
    kind = image_module(cloud).INSTANCE
    return [r for r in deployment.get("resources", [])
            if r.get("type") == kind and not r.get("delete") and ROLE_TAG in (r.get("inputs", {}).get("tags") or {})]


def stack_output(deployment: dict, key: str):
    return next((r.get("outputs", {}).get(key) for r in deployment.get("resources", [])
                 if r.get("type") == STACK_TYPE), None)


def deployed_user_data(resource: dict) -> str | None:
    """The user-data a node's resource was deployed with, as the node reads it, where the resource holds its own (its
    type's `model.userData` in its cloud's forcing table); None where a launch template holds it."""
    field = rule(resource["type"]).model.get("userData")
    value = resource.get("inputs", {}).get(field) if field else None
    return decoded(value) if isinstance(value, str) else None


def nodes_seen(before: Sequence[dict], after: dict, cloud: str,
               mark_of: Callable[[str], str | None]) -> list[NodeSeen]:
    """Each node the stack held before the refresh, with its instance state after it (None where the refresh found
    the instance gone), its mark in the bucket and the user-data it was deployed with."""
    field = image_module(cloud).STATE[0]
    now = {r["urn"]: r for r in node_resources(after, cloud)}
    seen = []
    for resource in before:
        current = now.get(resource["urn"])
        instance_id = resource.get("id", "")
        seen.append(NodeSeen(
            resource=resource["urn"], name=resource["urn"].rsplit("::", 1)[-1],
            role=resource["inputs"]["tags"][ROLE_TAG], instance_id=instance_id,
            state=current.get("outputs", {}).get(field) if current else None,
            mark=mark_of(instance_id) if instance_id else None, user_data=deployed_user_data(resource)))
    return seen
