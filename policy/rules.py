"""Policy rules over resources as the engine receives them (Pulumi type token + camelCase inputs).

Resource rules look at one resource; stack rules look at all of them together. The CrossGuard pack in this folder
and `fleet plan` both call `evaluate`-style code over the same functions, so a finding is the same in both places.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

ADVISORY, MANDATORY = "advisory", "mandatory"
ANYWHERE = ("0.0.0.0/0", "::/0")

Resource = dict[str, Any]


@dataclass(frozen=True)
class ResourceRule:
    """A rule that judges one resource by its type and inputs; yields one message per finding."""

    name: str
    description: str
    level: str
    check: Callable[[str, dict[str, Any]], Iterable[str]]


@dataclass(frozen=True)
class StackRule:
    """A rule that needs the whole stack (several resources together)."""

    name: str
    description: str
    level: str
    check: Callable[[list[Resource]], Iterable[tuple[str, str]]]


def _imdsv2(kind: str, inputs: dict) -> Iterable[str]:
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        if (inputs.get("metadataOptions") or {}).get("httpTokens") != "required":
            yield "instance metadata must require IMDSv2 tokens (metadataOptions.httpTokens: required)."


def _encrypted_volumes(kind: str, inputs: dict) -> Iterable[str]:
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        for mapping in inputs.get("blockDeviceMappings") or []:
            if str((mapping.get("ebs") or {}).get("encrypted")).lower() != "true":
                yield f"volume {mapping.get('deviceName')} is not encrypted."


def _no_open_ingress(kind: str, inputs: dict) -> Iterable[str]:
    if kind == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule" and inputs.get("cidrIpv4") in ANYWHERE:
        yield (f"ingress {inputs.get('ipProtocol')} {inputs.get('fromPort')}-{inputs.get('toPort')} is open to the "
               "internet; name the networks in network.sshCidrs instead.")


def _single_interface_public_ip(kind: str, inputs: dict) -> Iterable[str]:
    if kind == "aws:ec2/launchTemplate:LaunchTemplate":
        nics = inputs.get("networkInterfaces") or []
        if len(nics) > 1 and any(str(n.get("associatePublicIpAddress")).lower() == "true" for n in nics):
            yield "a public IP cannot go with several interfaces (EC2 rejects it); use the NAT gateway."


def _fabric_self_both_ways(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """EFA needs all traffic from and to the group itself, or NCCL fails with 'Unresponsive receiver'."""
    uses_efa = any(n.get("interfaceType") in ("efa", "efa-only")
                   for r in resources if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"
                   for n in r["inputs"].get("networkInterfaces") or [])
    if not uses_efa:
        return
    for direction in ("Ingress", "Egress"):
        kind = f"aws:vpc/securityGroup{direction}Rule:SecurityGroup{direction}Rule"
        if not any(r["type"] == kind and r["inputs"].get("ipProtocol") == "-1"
                   and r["inputs"].get("referencedSecurityGroupId") for r in resources):
            yield "security group", f"EFA needs an all-traffic {direction.lower()} rule referencing the group itself."


RESOURCE_RULES: tuple[ResourceRule, ...] = (
    ResourceRule("imdsv2-required", "Nodes require IMDSv2.", MANDATORY, _imdsv2),
    ResourceRule("encrypted-volumes", "Every node volume is encrypted.", MANDATORY, _encrypted_volumes),
    ResourceRule("no-open-ingress", "Nothing is open to the internet.", MANDATORY, _no_open_ingress),
    ResourceRule("no-public-ip-multi-nic", "No public IP with several interfaces.", MANDATORY,
                 _single_interface_public_ip),
)
STACK_RULES: tuple[StackRule, ...] = (
    StackRule("fabric-self-both-ways", "The fabric's security group allows itself both ways.", MANDATORY,
              _fabric_self_both_ways),
)


def evaluate(resources: list[Resource]) -> list[dict[str, str]]:
    """Every finding over a recorded stack, as `fleet plan --json` reports them."""
    found = [{"policy": rule.name, "resource": r["name"], "message": message, "level": rule.level}
             for r in resources if r["options"].get("custom", True)
             for rule in RESOURCE_RULES for message in rule.check(r["type"], r["inputs"])]
    found += [{"policy": rule.name, "resource": where, "message": message, "level": rule.level}
              for rule in STACK_RULES for where, message in rule.check(resources)]
    return found
