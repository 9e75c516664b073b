"""Each cloud's metadata tree for one instance, the emulator's model of the cloud's service: what it lists under
meta-data/, the instance role's temporary credentials in the cloud's JSON, what a GET without a valid token gets where
tokens are required, and the spot notice's body. Where the spot notice sits comes from the cloud's profile
(here.metadata.state), not from here.

- AWS (IMDSv2 as the launch template asks: components/aws/compute.py http_tokens "required"): instance id, type,
  placement, MAC and interfaces, the instance profile's role credentials (iam/security-credentials/ROLE),
  autoscaling/target-lifecycle-state (InService, or Warmed:* for a warm-pool instance); 401 without a token.
- Alibaba: ram/security-credentials/ROLE, instance/instance-type; a hardened instance answers 403 without a token.
- Tencent: plain GETs; cam/security-credentials/ROLE, placement.
- Local: instance id, hostname, address and type, and lifecycle-state (InService, or Terminated while `fleet up`
  takes the node out for a rollout: here/local/rollout.py); no role, since the local bucket is a directory.
A cloud without a tree here is refused (`dialect`), naming what is missing.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from here.metadata.instance import Instance

# A leaf that may change while the instance runs, read at each GET; None = absent (404, not listed).
Live = Callable[[], "str | None"]


def iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _key() -> tuple[str, str, str]:
    return f"STS{secrets.token_hex(8).upper()}", secrets.token_hex(20), secrets.token_hex(40)


def _aws_credentials() -> dict:
    key, secret, token = _key()
    return {"Code": "Success", "LastUpdated": iso(time.time()), "Type": "AWS-HMAC", "AccessKeyId": key,
            "SecretAccessKey": secret, "Token": token, "Expiration": iso(time.time() + 6 * 3600)}


def _alibaba_credentials() -> dict:
    key, secret, token = _key()
    return {"Code": "Success", "LastUpdated": iso(time.time()), "AccessKeyId": key, "AccessKeySecret": secret,
            "SecurityToken": token, "Expiration": iso(time.time() + 6 * 3600)}


def _tencent_credentials() -> dict:
    key, secret, token = _key()
    return {"Code": "Success", "TmpSecretId": key, "TmpSecretKey": secret, "Token": token,
            "ExpiredTime": int(time.time()) + 6 * 3600, "Expiration": iso(time.time() + 6 * 3600)}


def _role(instance: Instance, credentials: Callable[[], dict]) -> dict:
    """ROLE -> a fresh key at each GET, as the clouds rotate them; nothing where the instance has no role."""
    return {instance.role: lambda: json.dumps(credentials())} if instance.role else {}


def _interfaces(instance: Instance) -> dict:
    if not instance.mac:
        return {}
    interface = {"mac": instance.mac, "device-number": "0", "local-ipv4s": instance.private_ip}
    return {"mac": instance.mac, "network": {"interfaces": {"macs": {instance.mac: interface}}}}


def _aws(i: Instance, live: Callable[[str, str | None], Live]) -> dict:
    return {"ami-id": i.image_id, "ami-launch-index": "0", "hostname": i.hostname, "local-hostname": i.hostname,
            "instance-id": i.instance_id, "instance-type": i.instance_type, "local-ipv4": i.private_ip,
            "placement": {"availability-zone": i.zone, "region": i.region},
            **({"iam": {"info": json.dumps({"Code": "Success", "InstanceProfileId": "AIPA" + i.role.upper()}),
                        "security-credentials": _role(i, _aws_credentials)}} if i.role else {}),
            "services": {"domain": "amazonaws.com", "partition": "aws"},
            "autoscaling": {"target-lifecycle-state": live("lifecycle-state", "InService")}, **_interfaces(i)}


def _alibaba(i: Instance, live: Callable[[str, str | None], Live]) -> dict:
    return {"instance-id": i.instance_id, "region-id": i.region, "zone-id": i.zone, "hostname": i.hostname,
            "private-ipv4": i.private_ip, "image-id": i.image_id, "network-type": "vpc",
            "instance": {"instance-type": i.instance_type},
            "ram": {"security-credentials": _role(i, _alibaba_credentials)}, **_interfaces(i)}


def _tencent(i: Instance, live: Callable[[str, str | None], Live]) -> dict:
    return {"instance-id": i.instance_id, "uuid": i.instance_id, "local-ipv4": i.private_ip,
            "placement": {"region": i.region, "zone": i.zone},
            "instance": {"instance-type": i.instance_type, "image-id": i.image_id},
            "cam": {"security-credentials": _role(i, _tencent_credentials)}, **_interfaces(i)}


def _local(i: Instance, live: Callable[[str, str | None], Live]) -> dict:
    return {"instance-id": i.instance_id, "hostname": i.hostname, "local-ipv4": i.private_ip,
            "instance-type": i.instance_type, "lifecycle-state": live("lifecycle-state", "InService"),
            **_interfaces(i)}


@dataclass(frozen=True)
class Dialect:
    """One cloud's service: its tree for an instance (`live(name, default)` reads what may change) and the status
    of a GET without a valid token where the instance requires one."""

    tree: Callable[[Instance, Callable[[str, str | None], Live]], dict]
    refused: int = 401


DIALECTS = {
    "aws": Dialect(_aws, refused=401),
    "alicloud": Dialect(_alibaba, refused=403),
    "tencentcloud": Dialect(_tencent),
    "local": Dialect(_local),
}


def dialect(cloud: str) -> Dialect:
    if cloud not in DIALECTS:
        raise ValueError(f"the metadata emulator has no tree for cloud '{cloud}': here/metadata/trees.py DIALECTS "
                         "names what its service lists, its role's credentials and how it refuses a GET")
    return DIALECTS[cloud]


# The notice's body by the leaf it is served at: AWS's instance-action is JSON, the others' termination-time a time.
NOTICE_BODIES: dict[str, Callable[[float], str]] = {
    "instance-action": lambda at: json.dumps({"action": "terminate", "time": iso(at)}),
    "termination-time": iso,
}


def notice_body(leaf: str, at: float) -> str:
    if leaf not in NOTICE_BODIES:
        raise ValueError(f"no spot notice body for a notice at '{leaf}': here/metadata/trees.py NOTICE_BODIES")
    return NOTICE_BODIES[leaf](at)
