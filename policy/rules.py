"""gpufleet's policy rules in one list, and `evaluate` as `fleet plan` reports them.

Rules are plain functions over resources as the engine receives them (Pulumi type token + camelCase inputs), so the
CrossGuard pack (policy/crossguard.py) and `fleet plan` run the very same code and report the same findings.
Resource rules look at one resource; stack rules look at several together. The cloud-neutral rules read every
cloud's resources through its reader (policy/clouds/); a cloud's own rules come with its reader, and a resource of
a cloud without a reader is refused (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterable

from policy.access import bucket_wildcards
from policy.base import MANDATORY, Inputs, Resource, ResourceRule, StackRule, package_of
from policy.capacity import placement_one_zone
from policy.fabric import fabric_layout
from policy.internet import internet_by_parts, open_ingress
from policy.network import fabric_self_both_ways, public_ip_with_several_interfaces
from policy.nodes import encrypted_volumes, hardened_metadata, user_data
from policy.readers import NOT_A_CLOUD, modules, reader_for
from policy.storage import encrypted_bucket, spot_has_checkpoint_bucket


def known_cloud(kind: str, inputs: Inputs) -> Iterable[str]:
    """No rule can judge a resource of a cloud gpufleet has no reader for: refuse it rather than pass it."""
    if package_of(kind) not in NOT_A_CLOUD and reader_for(kind) is None:
        yield (f"no gpufleet policy reader knows {package_of(kind)} resources, so none of its rules can judge "
               "this one; add policy/clouds/<cloud>.py for the cloud.")


COMMON_RESOURCE_RULES: tuple[ResourceRule, ...] = (
    ResourceRule("known-cloud", "Every resource belongs to a cloud a policy reader knows.", MANDATORY, known_cloud),
    ResourceRule("no-open-ingress", "Nothing is open to a range wider than a /8 (0.0.0.0/0 however spelled) unless "
                 "the stack opts in (network.allowInternet).", MANDATORY, open_ingress),
    ResourceRule("imdsv2-required", "Instance metadata needs a session token (IMDSv2 / hardened mode).", MANDATORY,
                 hardened_metadata),
    ResourceRule("encrypted-volumes", "Every node disk is encrypted.", MANDATORY, encrypted_volumes),
    ResourceRule("encrypted-buckets", "OSS and COS buckets are encrypted.", MANDATORY, encrypted_bucket),
    ResourceRule("fabric-layout", "EFA / eRDMA interfaces match the catalog's count and layout for the type.",
                 MANDATORY, fabric_layout),
    ResourceRule("no-public-ip-multi-nic", "No public IP on a node with several interfaces.", MANDATORY,
                 public_ip_with_several_interfaces),
    ResourceRule("user-data-safe", "User-data fits the cloud's limit (base64) and holds nothing that looks like a "
                 "secret.", MANDATORY, user_data),
    ResourceRule("no-wildcard-bucket-access", "IAM, RAM and CAM documents grant storage actions on named buckets "
                 "only, never on a wildcard.", MANDATORY, bucket_wildcards),
)
COMMON_STACK_RULES: tuple[StackRule, ...] = (
    StackRule("fabric-self-both-ways", "The fabric's security group allows all traffic from and to itself.",
              MANDATORY, fabric_self_both_ways),
    StackRule("placement-one-zone", "A placement group / deployment set / HPC cluster lives in one zone and subnet.",
              MANDATORY, placement_one_zone),
    StackRule("spot-needs-checkpoint-bucket", "Spot capacity always comes with a checkpoint bucket.", MANDATORY,
              spot_has_checkpoint_bucket),
    StackRule("no-internet-by-parts", "Ingress ranges together admit no more of the internet than a /8 unless the "
              "stack opts in.", MANDATORY, internet_by_parts),
)
CLOUD_RULES = tuple(rule for module in modules() for rule in module.RULES)
RESOURCE_RULES: tuple[ResourceRule, ...] = COMMON_RESOURCE_RULES + tuple(
    r for r in CLOUD_RULES if isinstance(r, ResourceRule))
STACK_RULES: tuple[StackRule, ...] = COMMON_STACK_RULES + tuple(r for r in CLOUD_RULES if isinstance(r, StackRule))


def evaluate(resources: list[Resource]) -> list[dict[str, str]]:
    """Every finding over a recorded stack, as `fleet plan --json` reports them."""
    custom = [r for r in resources if r.get("options", {}).get("custom", True)]
    found = [{"policy": rule.name, "resource": r["name"], "message": message, "level": rule.level}
             for r in custom for rule in RESOURCE_RULES for message in rule.check(r["type"], r["inputs"])]
    found += [{"policy": rule.name, "resource": where, "message": message, "level": rule.level}
              for rule in STACK_RULES for where, message in rule.check(custom)]
    return found
