"""The day-two cases: every shipped cloud stack deployed, then one change a user makes, carried out step by step by the
engine model (fleet/update/engine.py) on the cloud model (fleet/update/cloud.py).

A stack's program is the real `__main__.py` under the preview's mocks (fleet/preview.py run_program), before and after
the change. New code is a file added to the code bundle's sources; a changed setting is the stack's cluster with a
field changed; `fleet heal` and `fleet roll` are the real commands (fleet/heal_command.py) against `ModelPulumi`,
a `pulumi` whose `stack export`, `refresh` and `up` the model answers, and the nodes' marks in a moto bucket: each
new node marks itself in service where its code bundle exists, failed where it cannot fetch it."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import plan.bundle as bundle
from components.bake_program import image_module
from fleet import heal_command
from fleet.cli import main
from fleet.preview import Preview, run_program
from fleet.stack_nodes import STACK_TYPE, Pulumi
from fleet.update.cloud import BUNDLE_KEY, Cloud, GroupSize, decoded
from fleet.update.engine import Declared, Held, Outcome, Up, declared, deployed, mock_id, update, without
from fleet.update.forcing import rule
from plan.heal import node_marks
from plan.paths import PROJECT_ROOT
from spec.stackfile import CLUSTER_KEY, StackFile, load_stack_file

STACKS = sorted(path.stem.removeprefix("Pulumi.") for path in (PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml")
                if load_stack_file(path).config[CLUSTER_KEY]["cloud"] != "local")


def stack_file(stack: str, **changes: Any) -> StackFile:
    """A shipped stack's file with its cluster's fields changed (dotted keys: `storage.rootVolumeGb`)."""
    shipped = load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    config = copy.deepcopy(shipped.config)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        where = config[CLUSTER_KEY]
        for part in parents:
            where = where.setdefault(part, {})
        where[last] = value
    return StackFile(shipped.name, shipped.path, config)


@contextlib.contextmanager
def new_code() -> Iterator[None]:
    """A checkout with one more file in the code bundle: a new bundle hash, in every node's user-data."""
    sources = bundle.source_files

    def more(kernels: bool = True) -> dict[str, bytes]:
        return {**sources(kernels), "training/day_two_change.py": b"# a change of code\n"}

    bundle.source_files = more
    bundle.bundle_bytes.cache_clear()
    try:
        yield
    finally:
        bundle.source_files = sources
        bundle.bundle_bytes.cache_clear()


_PREVIEWS: dict[tuple[str, str, str], Preview] = {}


def preview_of(stack: StackFile) -> Preview:
    """The program's registrations for a stack file on this checkout, made once per config and code bundle."""
    key = (stack.name, json.dumps(stack.config, sort_keys=True), bundle.bundle_sha256())
    if key not in _PREVIEWS:
        _PREVIEWS[key] = run_program(stack)
    return _PREVIEWS[key]


# Another type of the stack's own kind (fabric and GPU count) where its catalog has one.
OTHER_TYPE = {"aws-p5": "p5e.48xlarge", "aws-p4d-capacity-block": "p4de.24xlarge", "aws-g5-spot": "g6.48xlarge",
              "aws-g4dn-dev": "g4dn.2xlarge", "ali-erdma": "ecs.ebmgn7ix.32xlarge",
              "ali-spot": "ecs.gn7i-c16g1.4xlarge", "tencent-spot": "GN7.5XLARGE80"}


def more_nodes(cluster: dict) -> dict:
    """One node more: a fixed count grows; a range's desired grows, and its max with it where it is at the max."""
    nodes = cluster["nodes"]
    if isinstance(nodes, int):
        return {"nodes": nodes + 1}
    return {"nodes": {**nodes, "desired": nodes["desired"] + 1, "max": max(nodes["max"], nodes["desired"] + 1)}}


def settings(stack: str) -> dict[str, dict]:
    """The settings a user changes, as changes of the stack's cluster."""
    cluster = stack_file(stack).config[CLUSTER_KEY]
    changes = {"node count": more_nodes(cluster),
               "root volume": {"storage.rootVolumeGb": cluster.get("storage", {}).get("rootVolumeGb", 200) + 100},
               "pip mirror": {"network.pipMirror": "https://pypi.mirror.example.com/simple"}}
    if stack in OTHER_TYPE:
        changes["instance type"] = {"instanceType": OTHER_TYPE[stack]}
    return changes


def program(preview: Preview) -> list[Declared]:
    return declared(preview.resources)


def group_sizes(preview: Preview) -> dict[str, GroupSize]:
    """Each scaling group resource (the stack's `workerGroups` output names it) with its plan group's size."""
    names = {record["name"] for record in preview.resources}
    resource = {mock_id(name): name for name in names} | {name: name for name in names}
    planned = {group.name: group for group in preview.plan.workers}
    return {resource[made["id"]]: GroupSize(planned[made["name"]].min_size, planned[made["name"]].desired,
                                            planned[made["name"]].max_size, preview.plan.scaling.policy_sized)
            for made in preview.outputs["workerGroups"]}


def names_of(preview: Preview, kind: str) -> list[str]:
    """The resources of a model kind (`node`, `group`, ...) in a preview, in order."""
    return [record["name"] for record in preview.resources
            if record["options"].get("custom") and rule(record["type"]).kind == kind]


@dataclass
class Deployment:
    """A stack as deployed: its state, its cloud, where its nodes' marks go, and what went wrong since."""

    stack: StackFile
    state: tuple[Held, ...]
    cloud: Cloud
    checkpoint_uri: str
    s3: Any = None  # the moto S3 client holding the nodes' marks
    problems: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # the last generation of every resource ever held

    @classmethod
    def of(cls, stack: StackFile, s3: Any = None) -> Deployment:
        """The stack as a `pulumi up` from nothing left it, its nodes in service."""
        preview = preview_of(stack)
        state = deployed(program(preview))
        made = cls(stack, state, Cloud.of(state, group_sizes(preview)), preview.outputs["checkpointUri"], s3)
        for name in names_of(preview, "node"):
            made.mark_new(name)
        return made

    @classmethod
    def empty(cls, stack: StackFile) -> Deployment:
        """A stack never deployed."""
        return cls(stack, (), Cloud(), preview_of(stack).outputs["checkpointUri"])

    def up(self, preview: Preview, up: Up | None = None) -> Outcome:
        """One `pulumi up` of the preview's program: its steps carried out on the cloud, the invariants checked after
        each; each node it makes marks itself."""
        outcome = update(self.state, program(preview), up or Up(), self.seen)
        self.cloud.sizes = group_sizes(preview)
        self.cloud.start()
        for step in outcome.steps:
            self.problems += self.cloud.apply(step)
        self.state = outcome.state
        self.seen |= {held.key: held.generation for held in self.state}
        self.outcomes.append(outcome)
        for name in outcome.ops("create") + outcome.ops("replace"):
            self.mark_new(name)
        return outcome

    def lose(self, name: str) -> None:
        """A node the cloud released outside Pulumi: gone from the cloud, and from the state at the next refresh."""
        self.cloud.lose(name)

    def refresh(self, keys: set[str]) -> None:
        live = {thing.key for thing in self.cloud.things.values()}
        self.seen |= {held.key: held.generation for held in self.state}
        self.state = without(self.state, {key for key in keys if key not in live})

    def key(self, name: str) -> str:
        """The key of the resource (not the component) of this name."""
        return next(held.key for held in self.state if held.name == name and held.resource.custom)

    def instance_id(self, name: str) -> str:
        """The id the model's cloud gives a node: its name and generation."""
        held = next(held for held in self.state if held.name == name and held.resource.custom)
        return f"{name}-{held.generation}"

    def mark(self, name: str, text: str) -> None:
        """A node's mark in the bucket (plan/heal.py node_marks)."""
        bucket, _, prefix = node_marks(self.checkpoint_uri).split("://", 1)[1].partition("/")
        self.s3.put_object(Bucket=bucket, Key=f"{prefix}/{self.instance_id(name)}", Body=text.encode())

    def mark_new(self, name: str) -> None:
        """A new node marks itself: in service where its code bundle exists, failed where it cannot fetch it."""
        node = next((t for t in self.cloud.things.values() if t.name == name and t.model.get("kind") == "node"), None)
        if node is None or self.s3 is None:
            return
        bundles = {t.inputs.get(t.model["key"]) for t in self.cloud.things.values() if t.model.get("kind") == "bundle"}
        named = set(BUNDLE_KEY.findall(decoded(node.user_data or "")))
        self.mark(name, "in-service" if named <= bundles else "failed:bundle:missing")


@dataclass(frozen=True)
class ModelPulumi(Pulumi):
    """`pulumi` on a `Deployment`: export, refresh and up answered by the model; every argv recorded."""

    deployment: Deployment | None = None
    argv: list[list[str]] = field(default_factory=list)

    def run(self, *args: str, capture: bool = False) -> str:
        self.argv.append(list(args))
        if args[:2] == ("stack", "export"):
            return json.dumps({"deployment": self.export_model()})
        named = {flag: ["::".join(args[i + 1].rsplit("::", 2)[-2:]) for i, a in enumerate(args) if a == flag]
                 for flag in ("--target", "--replace", "--exclude")}
        if args[0] == "refresh":
            self.deployment.refresh(set(named["--target"]))
        elif args[0] == "up":
            self.deployment.up(preview_of(self.deployment.stack), Up(
                targets=frozenset(named["--target"]), replace=frozenset(named["--replace"]),
                excludes=frozenset(named["--exclude"]), target_dependents="--target-dependents" in args,
                exclude_dependents="--exclude-dependents" in args))
        return ""

    def export_model(self) -> dict:
        """The state as `pulumi stack export` shows it: the stack's outputs and every resource with its inputs; a
        node's instance state is running while the cloud holds it."""
        field_name = image_module(self.deployment.stack.config[CLUSTER_KEY]["cloud"]).STATE[0]
        live = {thing.ref for thing in self.deployment.cloud.things.values()}
        resources = [{"urn": f"urn:pulumi:{self.stack}::gpufleet::{STACK_TYPE}::gpufleet-{self.stack}",
                      "type": STACK_TYPE, "outputs": {"checkpointUri": self.deployment.checkpoint_uri}}]
        for held in self.deployment.state:
            resource = held.resource
            resources.append({"urn": f"urn:pulumi:{self.stack}::gpufleet::{resource.type}::{resource.name}",
                              "type": resource.type, "id": f"{held.name}-{held.generation}",
                              "inputs": dict(resource.inputs),
                              "outputs": {field_name: "Running"} if (held.key, held.generation) in live else {}})
        return {"resources": resources}


def fleet(command: str, deployment: Deployment, monkeypatch, *extra: str) -> int:
    """`fleet heal|roll` on the deployment, the commands' `pulumi` being the model."""
    monkeypatch.setattr(heal_command, "Pulumi", lambda stack: ModelPulumi(stack, deployment=deployment))
    monkeypatch.setattr(heal_command, "resolve", lambda *_: deployment.stack)
    monkeypatch.setattr(heal_command, "s3_client", lambda *_: deployment.s3)
    monkeypatch.setattr(heal_command, "POLL_S", 0)
    return main([command, "--stack", deployment.stack.name, *extra])
