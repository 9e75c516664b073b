"""Per cloud, what a booting instance sees besides its user-data: the image's cloud-init datasource setting, the
machine's DMI identity (how cloud-init recognises the cloud), instance ids and names in the cloud's format, whether
the metadata service demands a session token, and how user-data reaches cloud-init.

- AWS: Ubuntu's AMIs set `datasource_list: [ Ec2, None ]`; cloud-init's Ec2 datasource knows AWS by a DMI
  system UUID starting "ec2" and then uses IMDSv2 tokens. User-data from IMDS.
- Alibaba: the AliYun datasource, which knows the cloud by the DMI product name "Alibaba Cloud ECS" and asks for a
  hardened-mode token first (cloud-init >= 23.1). User-data from the metadata service.
- Tencent: its images set `datasource_list: [ ConfigDrive, TencentCloud ]` with ConfigDrive in local mode and
  TencentCloud's metadata URLs (Tencent Cloud's cloud-init doc for imported images, cloud.tencent.com/document/
  product/213/17339). Upstream cloud-init has no TencentCloud datasource (canonical/cloud-init PR #4198 was closed
  unmerged), so on an Ubuntu image the config drive delivers user-data. A container cannot attach a CD-ROM: the
  drive's files go to cloud-init's own seed directory for it (/var/lib/cloud/seed/config_drive), which its
  ConfigDrive datasource and ds-identify read the same way. The metadata service (node scripts) is at 169.254.0.23,
  which metadata.tencentyun.com resolves to (the node's /etc/hosts here, Tencent's DNS there).
- Local (`fleet up --stack local --boot`): a plain KVM-like machine; cloud-init's NoCloud datasource reads user-data
  and meta-data from its seed directory (/var/lib/cloud/seed/nocloud), as from a cidata disk. The node scripts' metadata
  service is on 169.254.169.254 (components.clouds.local.LOCAL_MACHINES).
"""

from __future__ import annotations

import hashlib
import json

from here.boot.metadata import Instance

DATASOURCES = {
    "aws": "datasource_list: [ Ec2, None ]\n",
    "alicloud": "datasource_list: [ AliYun ]\n",
    "local": "datasource_list: [ NoCloud, None ]\n",
    "tencentcloud": ("datasource_list: [ ConfigDrive, TencentCloud ]\ndatasource:\n  ConfigDrive:\n    dsmode: local\n"
                     "  TencentCloud:\n    metadata_urls: ['http://169.254.0.23', 'http://metadata.tencentyun.com']\n"),
}
METADATA_NAMES = {"tencentcloud": (("169.254.0.23", "metadata.tencentyun.com"),)}
# Which roles' metadata demands a token: AWS launch templates require IMDSv2 (components/aws/compute.py); on Alibaba
# only the head instance takes http_tokens (components/alicloud/head.py; ESS configurations cannot, workers.py).
TOKENS_REQUIRED = {"aws": {"head": True, "worker": True}, "alicloud": {"head": True, "worker": False}}
IMAGE_IDS = {"aws": "ami-0d1d1e5a7f5ea1bde"}


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def instance(cloud: str, seed: str, *, private_ip: str, mac: str, instance_type: str, region: str, zone: str,
             image_id: str, role: str, role_name: str, user_data_b64: str, spot: bool) -> Instance:
    """An instance as the cloud would name it; `seed` makes ids stable within a run and distinct across runs."""
    if cloud == "aws":
        instance_id = f"i-0{_hex(seed, 16)}"
        hostname = f"ip-{private_ip.replace('.', '-')}.{region}.compute.internal"
    elif cloud == "alicloud":
        instance_id = f"i-bp1{_hex(seed, 17)}"
        hostname = f"iZ{instance_id[2:]}Z"
    elif cloud == "local":
        instance_id = f"local-{_hex(seed, 12)}"
        hostname = f"local-{private_ip.replace('.', '-')}"
    else:
        instance_id = f"ins-{_hex(seed, 8)}"
        hostname = f"VM-{'-'.join(private_ip.split('.')[2:])}-ubuntu"
    return Instance(instance_id=instance_id, private_ip=private_ip, mac=mac, instance_type=instance_type,
                    region=region, zone=zone, image_id=IMAGE_IDS.get(cloud, image_id), role=role_name,
                    hostname=hostname, user_data_b64=user_data_b64,
                    tokens_required=TOKENS_REQUIRED.get(cloud, {}).get(role, False), spot=spot)


def dmi(cloud: str, inst: Instance) -> dict[str, str]:
    """/sys/class/dmi/id as the cloud's hypervisor fills it (the fields cloud-init and ds-identify read)."""
    uuid = _hex(inst.instance_id, 32)
    uuid = f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}"
    if cloud == "aws":
        uuid = "ec2" + uuid[3:]
        return {"sys_vendor": "Amazon EC2", "product_name": inst.instance_type, "product_uuid": uuid,
                "product_serial": uuid, "board_vendor": "Amazon EC2", "chassis_vendor": "Amazon EC2",
                "chassis_asset_tag": inst.instance_id, "bios_vendor": "Amazon EC2"}
    if cloud == "alicloud":
        return {"sys_vendor": "Alibaba Cloud", "product_name": "Alibaba Cloud ECS", "product_uuid": uuid,
                "product_serial": uuid, "chassis_vendor": "Alibaba Cloud", "bios_vendor": "SeaBIOS"}
    if cloud == "local":
        return {"sys_vendor": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)", "product_uuid": uuid,
                "product_serial": uuid, "bios_vendor": "SeaBIOS"}
    return {"sys_vendor": "Tencent Cloud", "product_name": "CVM", "product_uuid": uuid, "product_serial": uuid,
            "bios_vendor": "SeaBIOS"}


def seed(cloud: str, inst: Instance, user_data: bytes) -> dict[str, tuple[bytes, int]]:
    """Where user-data comes on a disk rather than over HTTP, cloud-init's seed of it: Tencent's config drive
    (OpenStack layout), the local cloud's NoCloud files; other clouds serve user-data from metadata."""
    if cloud == "local":
        meta = f"instance-id: {inst.instance_id}\nlocal-hostname: {inst.hostname}\n"
        return {"/var/lib/cloud/seed/nocloud/meta-data": (meta.encode(), 0o644),
                "/var/lib/cloud/seed/nocloud/user-data": (user_data, 0o644)}
    if cloud != "tencentcloud":
        return {}
    meta = json.dumps({"uuid": inst.instance_id, "hostname": inst.hostname, "name": inst.hostname,
                       "availability_zone": inst.zone, "launch_index": 0, "meta": {}, "public_keys": {}})
    drive = "/var/lib/cloud/seed/config_drive/openstack/latest"
    return {f"{drive}/meta_data.json": (meta.encode(), 0o644), f"{drive}/user_data": (user_data, 0o644)}
