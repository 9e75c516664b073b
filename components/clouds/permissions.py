"""The calls a node makes with its role and the action each cloud authorises each one by: the one table the node
policies are built from (components/aws/iam.py, components/alicloud/identity.py, components/tencentcloud/identity.py)
and that the tests hold the calls seen on nodes against (tests/boot/test_boot.py reads the harness store's request
log, tests/cloud_init/test_cloud_api.py the Alibaba and Tencent API stand-in's). docs/cloud-facts.md#node-permissions
is the same table with who makes each call and each cloud's source.

Store calls are the S3 API operations of the node's one store client (the AWS CLI's `s3 cp` and `s3 sync`, for S3 and
for OSS and COS through their S3 APIs): the same operations on every cloud, each authorised by that cloud's own
action. Each call also says what its action is granted on (`scope`); an identity module writes one statement per
scope, with the resource or condition its cloud allows there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# What a statement grants its actions on.
BUCKET = "bucket"  # the cluster's bucket itself (listing it)
OBJECTS = "objects"  # the objects in the cluster's bucket
ANY = "any"  # every resource: list and describe calls, which take no resource
OWN_INSTANCES = "own-instances"  # instances that carry the cluster's tag
OWN_GROUPS = "own-groups"  # the cluster's scaling groups (by their tag, or by id where the cloud allows no tag)
METRIC = "metric"  # the gpufleet CloudWatch namespace (AWS, only where the plan publishes the GPU metric)
SESSION = "session"  # the instance's own Session Manager registration and channels (AWS's SSM Agent)

STORE = "s3"  # the `api` of store calls


@dataclass(frozen=True)
class Call:
    """One operation of one API a node makes and the action each cloud authorises it by (a cloud missing from
    `actions` never makes it). `documented_only`: no node script makes it on a healthy node (the store client's
    cleanup of a failed upload, SSM Agent's own calls), so no test sees it. `grouped`: made only by a node its
    cloud's scaling group launched (the adapters' GF_IN_SCALING_GROUP)."""

    api: str
    operation: str
    scope: str
    actions: Mapping[str, str]
    documented_only: bool = False
    grouped: bool = False


def _store(operation: str, scope: str, aws: str, alicloud: str, tencentcloud: str, **flags: bool) -> Call:
    return Call(STORE, operation, scope,
                MappingProxyType({"aws": aws, "alicloud": alicloud, "tencentcloud": tencentcloud}), **flags)


def _api(cloud: str, action: str, scope: str, **flags: bool) -> Call:
    """A cloud API call named as its action is: `service:Operation` (Tencent: `name/service:Operation`)."""
    api, operation = action.removeprefix("name/").split(":")
    return Call(api, operation, scope, MappingProxyType({cloud: action}), **flags)


CALLS: tuple[Call, ...] = (
    # gpufleet-store: `s3 sync` lists (push and pull), `s3 cp` heads then gets (the bundle); an object above the
    # client's 8 MB multipart threshold goes up in parts (checkpoints) and comes down in ranged GETs.
    _store("ListObjectsV2", BUCKET, "s3:ListBucket", "oss:ListObjects", "name/cos:GetBucket"),
    _store("HeadObject", OBJECTS, "s3:GetObject", "oss:GetObject", "name/cos:HeadObject"),
    _store("GetObject", OBJECTS, "s3:GetObject", "oss:GetObject", "name/cos:GetObject"),
    _store("PutObject", OBJECTS, "s3:PutObject", "oss:PutObject", "name/cos:PutObject"),
    _store("CreateMultipartUpload", OBJECTS, "s3:PutObject", "oss:PutObject", "name/cos:InitiateMultipartUpload"),
    _store("UploadPart", OBJECTS, "s3:PutObject", "oss:PutObject", "name/cos:UploadPart"),
    _store("CompleteMultipartUpload", OBJECTS, "s3:PutObject", "oss:PutObject", "name/cos:CompleteMultipartUpload"),
    # The store client's cleanup of a multipart upload that failed (s3transfer): the parts are not left behind.
    _store("AbortMultipartUpload", OBJECTS, "s3:AbortMultipartUpload", "oss:AbortMultipartUpload",
           "name/cos:AbortMultipartUpload", documented_only=True),
    # cloud-init/clouds/aws.sh: gpufleet-discover, gpufleet-report, gpufleet-spot's drain, gpufleet-gpu-metric.
    _api("aws", "ec2:DescribeInstances", ANY),
    _api("aws", "ec2:CreateTags", OWN_INSTANCES),
    _api("aws", "autoscaling:SetInstanceHealth", OWN_GROUPS),
    _api("aws", "autoscaling:DescribeAutoScalingInstances", ANY),
    _api("aws", "autoscaling:CompleteLifecycleAction", OWN_GROUPS),
    _api("aws", "cloudwatch:PutMetricData", METRIC),
    # SSM Agent's own calls for Session Manager (docs/cloud-facts.md#aws-session-manager).
    *(_api("aws", action, SESSION, documented_only=True)
      for action in ("ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel",
                     "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel",
                     "ssmmessages:OpenDataChannel")),
    # cloud-init/clouds/alicloud.sh: gpufleet-discover, gpufleet-report.
    _api("alicloud", "ecs:DescribeInstances", ANY),
    _api("alicloud", "ecs:TagResources", OWN_INSTANCES),
    _api("alicloud", "ess:SetInstanceHealth", OWN_GROUPS, grouped=True),
    # cloud-init/clouds/tencentcloud.sh: gpufleet-discover, gpufleet-report.
    _api("tencentcloud", "name/cvm:DescribeInstances", ANY),
    _api("tencentcloud", "name/as:DescribeAutoScalingInstances", ANY, grouped=True),
    _api("tencentcloud", "name/as:RemoveInstances", OWN_GROUPS, grouped=True),
)


def calls(cloud: str) -> tuple[Call, ...]:
    """The calls a node of `cloud` makes."""
    return tuple(call for call in CALLS if cloud in call.actions)


def action(cloud: str, api: str, operation: str) -> str | None:
    """The action `cloud` authorises the call by; None for a call the table does not hold."""
    return next((c.actions[cloud] for c in calls(cloud) if (c.api, c.operation) == (api, operation)), None)


def actions(cloud: str, scope: str, *, groups: bool = True) -> list[str]:
    """The actions a statement of `cloud` grants on `scope`, each once, in the table's order; `groups`: some of its
    nodes are in a scaling group of the cloud's (else no grouped call is made)."""
    return list(dict.fromkeys(c.actions[cloud] for c in calls(cloud)
                              if c.scope == scope and (groups or not c.grouped)))
