"""The calls a node makes with its role, and what its role must grant for each: every cloud's profile lists its
nodes' calls (`CloudProfile.node_calls`), each with the action the cloud authorises it by, and the identity modules
(components/aws/iam.py, components/alicloud/identity.py, components/tencentcloud/identity.py) build the node policy
from that list and nothing else. The tests hold the calls seen on nodes against it (tests/boot/test_boot.py reads the
harness store's request log, tests/cloud_init/test_cloud_api.py the Alibaba and Tencent API stand-in's), and
docs/cloud-facts.md#node-permissions is the same table with who makes each call and each cloud's source.

Store calls are the S3 API operations of the node's one store client (the AWS CLI's `s3 cp` and `s3 sync`, for S3 and
for OSS and COS through their S3 APIs): the same operations on every cloud (`STORE_OPERATIONS`), each authorised by
that cloud's own action. Each call also says what its action is granted on (`scope`); an identity module writes one
statement per scope, with the resource or condition its cloud allows there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# What a statement grants its actions on.
BUCKET = "bucket"  # the cluster's bucket itself (listing it)
OBJECTS = "objects"  # the objects in the cluster's bucket
ANY = "any"  # every resource: list and describe calls, which take no resource
OWN_INSTANCES = "own-instances"  # instances that carry the cluster's tag
OWN_GROUPS = "own-groups"  # the cluster's scaling groups (by their tag, or by id where the cloud allows no tag)
METRIC = "metric"  # the gpufleet metric namespace (where the plan publishes the GPU metric)
SESSION = "session"  # the instance's own remote-session registration and channels (an agent's own calls)

STORE = "s3"  # the `api` of store calls
# The store client's operations and their scope: `s3 sync` lists (push and pull), `s3 cp` heads then gets (the
# bundle); an object above the client's 8 MB multipart threshold goes up in parts (checkpoints) and comes down in
# ranged GETs; a multipart upload that fails is aborted by the client (s3transfer), so its parts are not left behind.
STORE_OPERATIONS = (("ListObjectsV2", BUCKET), ("HeadObject", OBJECTS), ("GetObject", OBJECTS),
                    ("PutObject", OBJECTS), ("CreateMultipartUpload", OBJECTS), ("UploadPart", OBJECTS),
                    ("CompleteMultipartUpload", OBJECTS), ("AbortMultipartUpload", OBJECTS))
STORE_CLEANUP = "AbortMultipartUpload"


@dataclass(frozen=True)
class Call:
    """One operation of one API a node makes and the action its cloud authorises it by. `documented_only`: no node
    script makes it on a healthy node (the store client's cleanup of a failed upload, an agent's own calls), so no
    test sees it. `grouped`: made only by a node its cloud's scaling group launched (the adapters'
    GF_IN_SCALING_GROUP)."""

    api: str
    operation: str
    scope: str
    action: str
    documented_only: bool = False
    grouped: bool = False


def store_calls(**actions: str) -> tuple[Call, ...]:
    """A cloud's store calls: its action for each operation of STORE_OPERATIONS, which it must name every one of."""
    if set(actions) != {operation for operation, _ in STORE_OPERATIONS}:
        raise ValueError(f"store actions for {sorted(actions)}, not for each of {STORE_OPERATIONS}")
    return tuple(Call(STORE, operation, scope, actions[operation], documented_only=operation == STORE_CLEANUP)
                 for operation, scope in STORE_OPERATIONS)


def api_call(action: str, scope: str, *, documented_only: bool = False, grouped: bool = False) -> Call:
    """A cloud API call, named as its action is: `service:Operation` (Tencent's: `name/service:Operation`)."""
    api, operation = action.removeprefix("name/").split(":")
    return Call(api, operation, scope, action, documented_only, grouped)


def action(calls: Iterable[Call], api: str, operation: str) -> str | None:
    """The action a call is authorised by; None for a call the list does not hold."""
    return next((c.action for c in calls if (c.api, c.operation) == (api, operation)), None)


def actions(calls: Iterable[Call], scope: str, *, groups: bool = True) -> list[str]:
    """The actions a statement grants on `scope`, each once, in the list's order; `groups`: some of the cluster's
    nodes are in a scaling group of the cloud's (else no grouped call is made)."""
    return list(dict.fromkeys(c.action for c in calls if c.scope == scope and (groups or not c.grouped)))
