"""The one contract every target's realizer keeps, and the one shape of the stack's outputs on every cloud.

A realizer module (`CloudProfile.realizer`) declares the plan's resources and hands back `ClusterOutputs`; a cloud
with deploy-time look-ups answers them in a `lookups` module beside it. The registry (components/realizers/) loads
both through `conforming`, so a realizer that drifts from the contract fails when it is loaded, not in a reader.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol, TypedDict, get_origin, get_type_hints

import pulumi

from plan.facts import DeployFacts, Lookups
from plan.model import ClusterPlan


class WorkerGroupOutput(TypedDict):
    """One scaling group the cloud launches workers with."""

    name: str  # the plan's group (WorkerGroupPlan.name): "workers", "on-demand" or "spot"
    market: str  # its market (WorkerGroupPlan.market)
    id: pulumi.Input[str]  # what the cloud's API knows the group by


class PlacementOutput(TypedDict):
    """One placement group the cloud made: a placement group, a deployment set, an HPC cluster."""

    kind: str  # the plan's kind (PlacementPlan.kind): "cluster", "spread" or "hpc-cluster"
    id: pulumi.Input[str]  # what the cloud's API knows it by


class PlanOutputs(TypedDict):
    """The outputs read straight off the plan, alike on every target (components/realizers/outputs.py)."""

    headAddress: str
    checkpointUri: str
    hourlyCostUsd: float | None
    onDemandHourlyUsd: float | None
    headReplacement: str | None  # when a change replaces the head (LifecyclePlan.head_replacement); None: never
    rollout: list[str]  # what a change of code or settings does to each set of nodes (RolloutPlan.how)
    nodes: int  # nodes the cluster is made with
    # Where a scaling policy owns the size (and only scales out: a GPU-bound job takes it there and it stays): the
    # nodes it may grow to, and the hourly cost there; None where only `pulumi up` sizes the cluster.
    nodesCeiling: int | None
    ceilingHourlyCostUsd: float | None
    software: dict[str, Any]  # the software matrix the nodes hold to
    failureBudget: dict[str, Any]  # where a stopped replacement loop shows


class ClusterOutputs(PlanOutputs):
    """The stack's outputs (`pulumi stack output`, the "outputs" of `fleet plan --json`): the same keys on every
    target, None or [] where a target has no such thing."""

    headInstanceId: pulumi.Input[str] | None
    image: pulumi.Input[str] | None  # the image the head runs, as the cloud reports it
    workerGroups: list[WorkerGroupOutput]
    workerInstanceIds: list[pulumi.Input[str]]  # workers launched as fixed instances, outside any scaling group
    placementGroups: list[PlacementOutput]
    securityGroupId: pulumi.Input[str] | None
    bucket: pulumi.Input[str] | None
    bringUp: str | None  # the command that brings the nodes up where `pulumi up` does not


class GpuHolder(TypedDict):
    """One thing that holds the cluster's GPU nodes: an instance, or a scaling group of them."""

    kind: str  # "instance" or "scaling-group"
    id: pulumi.Input[str]


class StackOutputs(ClusterOutputs):
    """What the program exports: the realizer's outputs and, derived from them, every GPU holder
    (components/realizers/holders.py)."""

    gpuHolders: list[GpuHolder]


class Realizer(Protocol):
    """A realizer module: the plan as its cloud's resources, deciding nothing."""

    # Outputs a provider computes that the realizer reads, by resource type, as a first `pulumi up` sets them: the
    # preview's mocks answer with them (fleet/preview.py).
    COMPUTED: dict[str, dict[str, Any]]

    def realize(self, plan: ClusterPlan) -> ClusterOutputs:
        """Declare the plan's resources; the stack's outputs."""


class LookUps(Protocol):
    """A cloud's look-ups module: what only the account can say, asked at deploy time (plan/facts.py)."""

    # What the preview's mocks answer in place of the cloud, by invoke token (fleet/preview.py): an answer, or a
    # function of the invoke's arguments where the answer depends on them (capacity: components/realizers/stock.py).
    STAND_INS: dict[str, dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]]

    def look_up(self, wanted: Lookups) -> DeployFacts:
        """The answers to what the spec wants looked up."""


def _signature(function: Any) -> inspect.Signature:
    """A function's signature as a module function has it: a contract's methods lose their `self`."""
    signature = inspect.signature(function)
    return signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "self"])


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    """Names, kinds and defaults; the types are compared resolved (get_type_hints), not as written."""
    return [(p.name, p.kind, p.default) for p in _signature(function).parameters.values()]


def _differences(module: ModuleType, contract: type) -> list[str]:
    """What the module lacks of the contract, or has otherwise: data members by type, functions by signature."""
    problems = [f"{name} is not a {hint}" for name, hint in get_type_hints(contract).items()
                if not isinstance(getattr(module, name, None), get_origin(hint) or hint)]
    for name, wanted in vars(contract).items():
        if not inspect.isfunction(wanted) or name.startswith("_"):
            continue
        function = getattr(module, name, None)
        if not inspect.isfunction(function):
            problems.append(f"it has no function {name}")
        elif _parameters(function) != _parameters(wanted) or get_type_hints(function) != get_type_hints(wanted):
            problems.append(f"{name}{_signature(function)} is not {name}{_signature(wanted)}")
    return problems


def conforming(module: ModuleType, contract: type) -> ModuleType:
    """The module, if it has every member of the contract, its functions with the contract's parameters and types;
    else a TypeError naming each difference (a bug of the realizer, not of a stack)."""
    if problems := _differences(module, contract):
        raise TypeError(f"{module.__name__} does not keep the {contract.__name__} contract "
                        f"(components/realizers/contract.py): {'; '.join(problems)}")
    return module


def checked_outputs(module: str, outputs: dict[str, Any]) -> ClusterOutputs:
    """A realizer's outputs, if they have exactly the keys of ClusterOutputs; else a TypeError naming the rest."""
    missing = ClusterOutputs.__required_keys__ - outputs.keys()
    extra = outputs.keys() - ClusterOutputs.__required_keys__
    if missing or extra:
        raise TypeError(f"{module}.realize returned outputs other than ClusterOutputs "
                        f"(components/realizers/contract.py): missing {sorted(missing)}, extra {sorted(extra)}")
    return ClusterOutputs(**outputs)
