"""The shapes every policy rule shares: levels, the two rule kinds, and tolerant readers of engine inputs.

Inputs arrive as the engine sees them (camelCase keys, strings where a provider wants strings). During a real
`pulumi preview` some values are not known yet; the CrossGuard wrapper turns them into UNKNOWN, and the readers
here treat UNKNOWN as "present but not judged", so a rule never fires on a value it cannot see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

ADVISORY, MANDATORY = "advisory", "mandatory"
UNKNOWN = "[unknown]"

Resource = dict[str, Any]
Inputs = dict[str, Any]


@dataclass(frozen=True)
class ResourceRule:
    """A rule that judges one resource by its type token and inputs; yields one message per finding."""

    name: str
    description: str
    level: str
    check: Callable[[str, Inputs], Iterable[str]]


@dataclass(frozen=True)
class StackRule:
    """A rule that needs several resources together; yields (resource name, message) per finding."""

    name: str
    description: str
    level: str
    check: Callable[[list[Resource]], Iterable[tuple[str, str]]]


def truthy(value: Any) -> bool:
    """Booleans the way providers take them: True, "true", "True" (pulumi_aws wants some as strings)."""
    return value is True or str(value).lower() == "true"


def items(value: Any) -> list[Any]:
    """A list input, or nothing when it is unset or unknown."""
    return list(value) if isinstance(value, list) else []


def mapping(value: Any) -> dict[str, Any]:
    """A nested object input, or an empty one when it is unset or unknown."""
    return value if isinstance(value, dict) else {}


def known(value: Any) -> bool:
    """Whether a value is set and visible (not unset, not unknown during preview)."""
    return value not in (None, "", UNKNOWN)


def present(value: Any) -> bool:
    """Whether a value is set, known or not: an id unknown during preview still references something."""
    return value not in (None, "")


def of_type(resources: list[Resource], *tokens: str) -> list[Resource]:
    """The resources of the given Pulumi type tokens, in registration order."""
    return [r for r in resources if r["type"] in tokens]
