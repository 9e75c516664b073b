"""The shapes every policy rule shares: levels, the two rule kinds, and tolerant readers of engine inputs.

Inputs arrive as the engine sees them (camelCase keys, strings where a provider wants strings). During a real
`pulumi preview` some values are not known yet; the CrossGuard wrapper turns them into UNKNOWN, and the readers
here treat UNKNOWN as "present but not judged", so a rule never fires on a value it cannot see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from clouds import profile

ADVISORY, MANDATORY = "advisory", "mandatory"
UNKNOWN = "[unknown]"
# Characters that make a resource name in a permission document match more than one resource.
WILDCARDS = ("*", "?")

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


def package_of(kind: str) -> str:
    """The Pulumi package a type token belongs to: its first part, `<package>:<module>/<name>:<Type>`."""
    return kind.split(":", 1)[0]


@dataclass(frozen=True)
class Ingress:
    """One range an inbound allow rule admits, as every cloud has it: protocol, ports as written, the range as
    written (a rule with several ranges is one Ingress per range), description."""

    protocol: object
    ports: str
    cidr: object
    description: object


class Reader:
    """How one cloud's resources read as what the cloud-neutral rules judge (policy/clouds/<cloud>.py holds each,
    with its READER and the RULES only that cloud needs). Every reading defaults to "nothing here": a cloud
    declares only what it has, and readings of stack rules pick their cloud's resources by type token."""

    storage_actions: tuple[str, ...] = ()  # prefixes of this cloud's object-storage actions, lowercase

    def __init__(self, cloud: str) -> None:
        self.cloud = cloud
        self.package = profile(cloud).pulumi_package

    @property
    def user_data_limit(self) -> int | None:
        return profile(self.cloud).max_user_data_bytes

    def ingress(self, kind: str, inputs: Inputs) -> Iterable[Ingress]:
        """Every range a resource admits from outside the cluster (IPv4 and IPv6 alike)."""
        return ()

    def policy_documents(self, kind: str, inputs: Inputs) -> Iterable[object]:
        """The permission documents (IAM, RAM, CAM) a resource holds, as written: JSON text or an object."""
        return ()

    def bucket_of(self, resource: str) -> str | None:
        """The bucket part of an object-storage resource name in this cloud's documents; None for another
        service's resource."""
        return None

    def metadata(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """A finding when a node's instance metadata answers without a session token."""
        return ()

    def disks(self, kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
        """(disk, its encryption flag) for every disk a node resource gets."""
        return ()

    def bucket_encryption(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """A finding for a bucket that carries no encryption inline."""
        return ()

    def user_data(self, kind: str) -> tuple[tuple[str, bool | None], ...]:
        """The fields holding user-data on this type, each with whether it is base64 (None: either)."""
        return ()

    def public_ip(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """A finding for a public address on a node with several interfaces."""
        return ()

    def fabric_layout(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """Findings where a node's fabric interfaces differ from the catalog's for its type."""
        return ()

    def spot(self, resource: Resource) -> bool:
        """Whether a resource launches spot capacity."""
        return False

    def buckets(self) -> tuple[str, ...]:
        """The type tokens of this cloud's buckets."""
        return ()

    def self_traffic(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        """Findings where the fabric in use needs the group open to itself both ways and it is not."""
        return ()

    def placement(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        """Findings where a placement group spans more than one zone or subnet."""
        return ()
