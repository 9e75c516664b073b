"""The rules as CrossGuard policies: one ResourceValidationPolicy or StackValidationPolicy per rule, same names.

CrossGuard hands Python policies the engine's property names unchanged (camelCase, as `fleet plan` records them;
pulumi_policy does no snake_case translation), wrapped in proxies that raise on values unknown during preview.
`plain` turns those proxies into the plain dicts the rules take, unknowns becoming UNKNOWN, so no rule translates.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import _is_unknown

from policy.base import UNKNOWN, Resource, ResourceRule, StackRule
from policy.rules import RESOURCE_RULES, STACK_RULES

PACK_NAME = "gpufleet"


def plain(value: Any) -> Any:
    """A CrossGuard property value as plain data; reading through `__target` never trips the unknown check."""
    if hasattr(value, "keys"):
        target = value["__target"]
        return {key: plain(target[key]) for key in target}
    if hasattr(value, "__len__") and hasattr(value, "__getitem__") and not isinstance(value, str):
        target = value["__target"] if not isinstance(value, list) else value
        return [plain(item) for item in target]
    return UNKNOWN if _is_unknown(value) else value


def _resource_policy(rule: ResourceRule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        for message in rule.check(args.resource_type, plain(args.props)):
            report(message)

    return ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                    enforcement_level=EnforcementLevel(rule.level))


def stack_resources(args: StackValidationArgs) -> list[Resource]:
    """The stack's resources in the shape `fleet plan` records. A custom resource is one the engine names a provider
    for; a component has none, and its type token (`gpufleet:aws:Cluster`) looks like any provider's."""
    return [{"type": r.resource_type, "name": r.name, "parent": r.parent.name if r.parent else None,
             "inputs": plain(r.props), "options": {"custom": r.provider is not None}}
            for r in args.resources]


def _stack_policy(rule: StackRule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        for where, message in rule.check(stack_resources(args)):
            report(f"{where}: {message}")

    return StackValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                 enforcement_level=EnforcementLevel(rule.level))


def policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    """Every rule of policy.rules as a CrossGuard policy, in the same order."""
    return [*map(_resource_policy, RESOURCE_RULES), *map(_stack_policy, STACK_RULES)]
