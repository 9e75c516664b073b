"""gpufleet's policy rules in one list, and `evaluate` as `fleet plan` reports them.

Rules are plain functions over resources as the engine receives them (Pulumi type token + camelCase inputs), so the
CrossGuard pack (policy/crossguard.py) and `fleet plan` run the very same code and report the same findings.
Resource rules look at one resource; stack rules look at several together.
"""

from __future__ import annotations

from policy.access import bucket_wildcards
from policy.base import ADVISORY, MANDATORY, Resource, ResourceRule, StackRule
from policy.capacity import (
    capacity_block_alone,
    hcc_in_hpc_cluster,
    placement_one_zone,
    spot_outside_deployment_set,
)
from policy.fabric import fabric_layout
from policy.internet import internet_by_parts, open_ingress
from policy.network import fabric_self_both_ways, public_ip_with_several_interfaces
from policy.nodes import encrypted_volumes, hardened_metadata, user_data
from policy.storage import encrypted_bucket, encrypted_s3_buckets, spot_has_checkpoint_bucket

RESOURCE_RULES: tuple[ResourceRule, ...] = (
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
    ResourceRule("user-data-safe", "User-data fits 16 KB (base64) and holds nothing that looks like a secret.",
                 MANDATORY, user_data),
    ResourceRule("spot-outside-deployment-set", "No spot instance inside an Alibaba deployment set.", ADVISORY,
                 spot_outside_deployment_set),
    ResourceRule("hcc-in-hpc-cluster", "Tencent HCC instances sit in an HPC cluster, others do not.", MANDATORY,
                 hcc_in_hpc_cluster),
    ResourceRule("no-wildcard-bucket-access", "IAM, RAM and CAM documents grant storage actions on named buckets "
                 "only, never on a wildcard.", MANDATORY, bucket_wildcards),
)
STACK_RULES: tuple[StackRule, ...] = (
    StackRule("fabric-self-both-ways", "The fabric's security group allows all traffic from and to itself.",
              MANDATORY, fabric_self_both_ways),
    StackRule("encrypted-s3-buckets", "Every S3 bucket has server-side encryption.", MANDATORY, encrypted_s3_buckets),
    StackRule("placement-one-zone", "A placement group / deployment set / HPC cluster lives in one zone and subnet.",
              MANDATORY, placement_one_zone),
    StackRule("spot-needs-checkpoint-bucket", "Spot capacity always comes with a checkpoint bucket.", MANDATORY,
              spot_has_checkpoint_bucket),
    StackRule("capacity-block-alone", "A Capacity Block has no placement group and no spot mix.", MANDATORY,
              capacity_block_alone),
    StackRule("no-internet-by-parts", "Ingress ranges together admit no more of the internet than a /8 unless the "
              "stack opts in.", MANDATORY, internet_by_parts),
)


def evaluate(resources: list[Resource]) -> list[dict[str, str]]:
    """Every finding over a recorded stack, as `fleet plan --json` reports them."""
    custom = [r for r in resources if r.get("options", {}).get("custom", True)]
    found = [{"policy": rule.name, "resource": r["name"], "message": message, "level": rule.level}
             for r in custom for rule in RESOURCE_RULES for message in rule.check(r["type"], r["inputs"])]
    found += [{"policy": rule.name, "resource": where, "message": message, "level": rule.level}
              for rule in STACK_RULES for where, message in rule.check(custom)]
    return found
