"""How Tencent Cloud resources read for the rules (type tokens as tencentcloud_iac_pulumi 0.2 declares them), and the
rule only Tencent needs: HCC instances in an HPC cluster, others never."""

from __future__ import annotations

from collections.abc import Iterable

from plan.catalog import lookup
from policy.base import (
    MANDATORY,
    WILDCARDS,
    Ingress,
    Inputs,
    Reader,
    Resource,
    ResourceRule,
    items,
    known,
    of_type,
    present,
)

INSTANCE = "tencentcloud:Instance/instance:Instance"
SCALING_CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
HPC_CLUSTER = "tencentcloud:Cvm/hpcCluster:HpcCluster"
SG_RULES = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
BUCKET = "tencentcloud:Cos/bucket:Bucket"
CAM_POLICY = "tencentcloud:Cam/policy:Policy"
SSE = ("AES256", "KMS", "SM4", "cos/kms")
USER_DATA = {INSTANCE: (("userData", True), ("userDataRaw", False)), SCALING_CONFIG: (("userData", True),)}


class TcReader(Reader):
    storage_actions = ("name/cos:", "cos:")

    def ingress(self, kind: str, inputs: Inputs) -> Iterable[Ingress]:
        if kind == SG_RULES:
            for rule in items(inputs.get("ingresses")):
                if str(rule.get("action", "")).upper() == "ACCEPT":
                    for cidr in (rule.get("cidrBlock"), rule.get("ipv6CidrBlock")):
                        yield Ingress(rule.get("protocol"), str(rule.get("port")), cidr, rule.get("description"))

    def policy_documents(self, kind: str, inputs: Inputs) -> Iterable[object]:
        return [inputs.get("document")] if kind == CAM_POLICY else []

    def bucket_of(self, resource: str) -> str | None:
        """qcs::cos:REGION:uid/APPID:BUCKET/KEY; a wildcard account stands for every account's buckets."""
        parts = resource.split(":")
        if resource.startswith("qcs::cos:") and len(parts) >= 6:
            account = parts[4]
            return "*" if any(w in account for w in WILDCARDS) else ":".join(parts[5:]).split("/", 1)[0]
        return None

    def disks(self, kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
        """Data disks; system disks have no encryption switch in the SDK (docs/gitops.md lists the gap)."""
        if kind == INSTANCE:
            for disk in items(inputs.get("dataDisks")):
                yield disk.get("dataDiskName") or "a data disk", disk.get("encrypt")

    def bucket_encryption(self, kind: str, inputs: Inputs) -> Iterable[str]:
        if kind == BUCKET:
            algorithm = inputs.get("encryptionAlgorithm")
            if algorithm not in SSE and algorithm != "[unknown]":
                yield "the bucket is not encrypted (encryptionAlgorithm: KMS or AES256)."

    def user_data(self, kind: str) -> tuple[tuple[str, bool | None], ...]:
        return USER_DATA.get(kind, ())

    def spot(self, resource: Resource) -> bool:
        return (resource["type"] in (INSTANCE, SCALING_CONFIG)
                and resource["inputs"].get("instanceChargeType") == "SPOTPAID")

    def buckets(self) -> tuple[str, ...]:
        return (BUCKET,)

    def self_traffic(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        """HCC RDMA needs the group open to itself: an ALL/ACCEPT entry from the group itself, both ways."""
        if not any(present(r["inputs"].get("hpcClusterId")) for r in of_type(resources, INSTANCE)):
            return
        sets = of_type(resources, SG_RULES)
        for direction in ("ingresses", "egresses"):
            entries = [e for s in sets for e in items(s["inputs"].get(direction))]
            if not any(str(e.get("protocol", "")).upper() == "ALL" and str(e.get("action", "")).upper() == "ACCEPT"
                       and present(e.get("sourceSecurityId")) for e in entries):
                yield "security group", (f"HCC RDMA needs the group open to itself: an {direction[:-2]} entry with "
                                         "protocol ALL, action ACCEPT and sourceSecurityId = the group.")

    def placement(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        for cluster in of_type(resources, HPC_CLUSTER):
            members = [r for r in of_type(resources, INSTANCE) if present(r["inputs"].get("hpcClusterId"))]
            zones = {z for z in [cluster["inputs"].get("zone")] + [r["inputs"].get("availabilityZone") for r in members]
                     if known(z)}
            if len(zones) > 1:
                yield cluster["name"], f"the HPC cluster and its nodes span zones {sorted(zones)}; use one."
            if len(subnets := {s for s in (r["inputs"].get("subnetId") for r in members) if known(s)}) > 1:
                yield cluster["name"], f"HCC nodes use {len(subnets)} subnets; use one."


def hcc_in_hpc_cluster(kind: str, inputs: Inputs) -> Iterable[str]:
    """HCC (RDMA) types only reach their RDMA peers inside an HPC cluster; other types must not join one."""
    if kind != INSTANCE or not known(inputs.get("instanceType")):
        return
    row = lookup("tencentcloud", inputs["instanceType"])
    hcc = row.fabric == "rdma" if row is not None else str(inputs["instanceType"]).upper().startswith("HCC")
    if hcc and not present(inputs.get("hpcClusterId")):
        yield f"{inputs['instanceType']} is an HCC type: set hpcClusterId to a cvm.HpcCluster in the same zone."
    elif not hcc and present(inputs.get("hpcClusterId")):
        yield f"{inputs['instanceType']} is not an HCC type and cannot join an HPC cluster; drop hpcClusterId."


READER = TcReader("tencentcloud")
RULES = (ResourceRule("hcc-in-hpc-cluster", "Tencent HCC instances sit in an HPC cluster, others do not.", MANDATORY,
                      hcc_in_hpc_cluster),)
