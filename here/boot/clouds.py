"""Per cloud, what a booting instance sees besides its user-data. The cloud's facts come from its profile
(clouds/<cloud>.py): how it names instances, its images' cloud-init datasource setting. What only the
harness emulates is here, by the profile's name: the machine's DMI identity (how cloud-init recognises the cloud),
which of the realizers' instances require a metadata token, and the image id an alias resolves to. A cloud without
one of them is refused, naming what is missing: nothing falls through to another cloud's.

How user-data reaches cloud-init follows from the images' datasource setting: a config drive (Tencent: its images
list ConfigDrive first; upstream cloud-init has no TencentCloud datasource, canonical/cloud-init PR #4198 closed
unmerged, so on an Ubuntu image the drive delivers it) or NoCloud's seed (the local cloud's machines) are files in
cloud-init's own seed directory, which its datasources and ds-identify read the same way (a container cannot attach a
CD-ROM); the other clouds' datasources read user-data from the metadata service.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import yaml

from here.metadata.state import Instance
from plan.profile import CloudProfile


class UnknownCloud(ValueError):
    """The harness lacks a fact of the cloud it is asked to boot; the message names the cloud and the fact."""


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def _uuid(inst: Instance) -> str:
    uuid = _hex(inst.instance_id, 32)
    return f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}"


def _ec2(inst: Instance) -> dict[str, str]:
    """cloud-init's Ec2 datasource knows AWS by a system UUID starting "ec2"."""
    uuid = "ec2" + _uuid(inst)[3:]
    return {"sys_vendor": "Amazon EC2", "product_name": inst.instance_type, "product_uuid": uuid,
            "product_serial": uuid, "board_vendor": "Amazon EC2", "chassis_vendor": "Amazon EC2",
            "chassis_asset_tag": inst.instance_id, "bios_vendor": "Amazon EC2"}


def _ecs(inst: Instance) -> dict[str, str]:
    """cloud-init's AliYun datasource knows ECS by the product name "Alibaba Cloud ECS"."""
    return {"sys_vendor": "Alibaba Cloud", "product_name": "Alibaba Cloud ECS", "product_uuid": _uuid(inst),
            "product_serial": _uuid(inst), "chassis_vendor": "Alibaba Cloud", "bios_vendor": "SeaBIOS"}


def _cvm(inst: Instance) -> dict[str, str]:
    return {"sys_vendor": "Tencent Cloud", "product_name": "CVM", "product_uuid": _uuid(inst),
            "product_serial": _uuid(inst), "bios_vendor": "SeaBIOS"}


def _kvm(inst: Instance) -> dict[str, str]:
    return {"sys_vendor": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)", "product_uuid": _uuid(inst),
            "product_serial": _uuid(inst), "bios_vendor": "SeaBIOS"}


@dataclass(frozen=True)
class Hypervisor:
    """What the harness plays of a cloud's machine: /sys/class/dmi/id as its hypervisor fills it (the fields
    cloud-init and ds-identify read), the roles whose instances the realizers launch with metadata tokens required,
    and the image id the metadata names where the plan's image is an alias the cloud resolves at launch."""

    dmi: Callable[[Instance], dict[str, str]]
    tokens_required: frozenset[str] = frozenset()
    resolved_image: str = ""


HYPERVISORS = {
    # Launch templates require IMDSv2 (components/aws/compute.py); `image: auto` is the DLAMI's SSM alias.
    "aws": Hypervisor(_ec2, frozenset({"head", "worker"}), resolved_image="ami-0d1d1e5a7f5ea1bde"),
    # Only the head is an ECS instance with http_tokens (components/alicloud/nodes.py); ESS configurations cannot.
    "alicloud": Hypervisor(_ecs, frozenset({"head"})),
    "tencentcloud": Hypervisor(_cvm),
    "local": Hypervisor(_kvm),  # a plain KVM-like machine
}


def hypervisor(profile: CloudProfile) -> Hypervisor:
    if profile.name not in HYPERVISORS:
        raise UnknownCloud(f"the boot harness cannot boot cloud '{profile.name}': here/boot/clouds.py HYPERVISORS has "
                           "no machine for it (its DMI identity, which roles require a metadata token)")
    return HYPERVISORS[profile.name]


def instance(profile: CloudProfile, seed: str, *, private_ip: str, mac: str, instance_type: str, region: str,
             zone: str, image_id: str, role: str, role_name: str, user_data_b64: str, spot: bool) -> Instance:
    """An instance as the cloud would name it; `seed` makes ids stable within a run and distinct across runs."""
    machine = hypervisor(profile)
    if profile.instance_names is None:
        raise UnknownCloud(f"cloud '{profile.name}' does not say how it names instances (CloudProfile.instance_names)")
    instance_id, hostname = profile.instance_names(_hex(seed, 64), private_ip, region)
    resolved = machine.resolved_image if image_id == profile.auto_image.alias else ""
    return Instance(instance_id=instance_id, private_ip=private_ip, mac=mac, instance_type=instance_type,
                    region=region, zone=zone, image_id=resolved or image_id, role=role_name, hostname=hostname,
                    user_data_b64=user_data_b64, spot=spot,
                    tokens_required=bool(profile.imds_token_header) and role in machine.tokens_required)


def dmi(profile: CloudProfile, inst: Instance) -> dict[str, str]:
    return hypervisor(profile).dmi(inst)


def datasources(profile: CloudProfile) -> str:
    """The cloud.cfg.d text of the cloud's images that names their datasources."""
    if not profile.image_datasources:
        raise UnknownCloud(f"cloud '{profile.name}' does not say which cloud-init datasources its images use "
                           "(CloudProfile.image_datasources)")
    return profile.image_datasources


def seed(profile: CloudProfile, inst: Instance, user_data: bytes) -> dict[str, tuple[bytes, int]]:
    """Where the images' first datasource takes user-data from a disk, cloud-init's seed of it (path -> (content,
    mode)): a config drive in OpenStack's layout, NoCloud's files; none where it comes from the metadata service."""
    first = yaml.safe_load(datasources(profile))["datasource_list"][0]
    if first == "NoCloud":
        meta = f"instance-id: {inst.instance_id}\nlocal-hostname: {inst.hostname}\n"
        return {"/var/lib/cloud/seed/nocloud/meta-data": (meta.encode(), 0o644),
                "/var/lib/cloud/seed/nocloud/user-data": (user_data, 0o644)}
    if first != "ConfigDrive":
        return {}
    meta = json.dumps({"uuid": inst.instance_id, "hostname": inst.hostname, "name": inst.hostname,
                       "availability_zone": inst.zone, "launch_index": 0, "meta": {}, "public_keys": {}})
    drive = "/var/lib/cloud/seed/config_drive/openstack/latest"
    return {f"{drive}/meta_data.json": (meta.encode(), 0o644), f"{drive}/user_data": (user_data, 0o644)}
