"""The AS calls `fleet roll` makes to refresh a Tencent stack's worker groups (plan/group_refresh.py decides), with the
pipeline's own key (the environment variables the tencentcloud Pulumi provider reads), through the official SDK's
common client: StartInstanceRefresh (reinstall, one instance a batch, no pauses, cancelled on a failed batch so the
group is never left disabled), DescribeRefreshActivities, CancelInstanceRefresh (docs/cloud-facts.md#rollout-tencent).
`Refreshes` is what the roll needs of them, so that tests hand it a stand-in; `RefreshRecords` keeps, in the bucket,
what each group was last refreshed to."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from clouds.tencentcloud import TENCENTCLOUD
from plan.heal import node_marks
from plan.rollout import REFRESH_BATCH

GROUP_TYPE = f"{TENCENTCLOUD.pulumi_package}:As/scalingGroup:ScalingGroup"
CONFIG_TYPE = f"{TENCENTCLOUD.pulumi_package}:As/scalingConfig:ScalingConfig"
VERSION = "2018-04-19"
# Reinstall each member from the launch configuration (its ImageId and UserData), one at a time, no pause between
# batches, and a failed batch cancels the activity (FailProcess AUTO_CANCEL), which ends the group's disabled state.
REFRESH = {"RefreshMode": "ROLLING_UPDATE_RESET",
           "RefreshSettings": {"RollingUpdateSettings": {"BatchNumber": REFRESH_BATCH, "BatchPause": "AUTOMATIC",
                                                         "FailProcess": "AUTO_CANCEL"}}}


class AsFailed(Exception):
    """An AS call that did not succeed: the call and the cloud's message."""


class Refreshes(Protocol):
    def start(self, group_id: str) -> str: ...

    def status(self, activity_id: str) -> str: ...

    def cancel(self, group_id: str, activity_id: str) -> None: ...


@dataclass(frozen=True)
class StateGroup:
    """A scaling group of the stack and a hash of its launch configuration's user-data, as a deployment holds them."""

    name: str
    group_id: str
    user_data: str


def settings_hash(user_data: str) -> str:
    return hashlib.sha256(user_data.encode()).hexdigest()[:16]


def groups_in(deployment: dict) -> dict[str, StateGroup]:
    """Each scaling group the deployment holds, by id, with its configuration's user-data hash."""
    resources = [r for r in deployment.get("resources", []) if not r.get("delete")]
    configs = {r.get("id"): (r.get("inputs") or {}).get("userData", "") for r in resources if r["type"] == CONFIG_TYPE}
    return {r["id"]: StateGroup(r["urn"].rsplit("::", 1)[-1], r["id"],
                                settings_hash(configs[r["inputs"]["configurationId"]]))
            for r in resources if r["type"] == GROUP_TYPE and r.get("inputs", {}).get("configurationId") in configs}


def refresh_records(checkpoint_uri: str) -> str:
    """Where the pipeline records what each group was last refreshed to: beside the nodes' marks."""
    return node_marks(checkpoint_uri).rsplit("/", 1)[0] + "/groups-refreshed"


@dataclass(frozen=True)
class RefreshRecords:
    """One object per group id holding the settings hash its members were last refreshed to, written only after a
    refresh succeeded (or when the group is first seen), with the pipeline's key."""

    client: object
    uri: str

    def _where(self, group_id: str) -> dict[str, str]:
        bucket, _, prefix = self.uri.split("://", 1)[1].partition("/")
        return {"Bucket": bucket, "Key": f"{prefix}/{group_id}"}

    def read(self, group_id: str) -> str | None:
        try:
            return self.client.get_object(**self._where(group_id))["Body"].read().decode().strip()
        except self.client.exceptions.NoSuchKey:
            return None

    def write(self, group_id: str, settings: str) -> None:
        self.client.put_object(**self._where(group_id), Body=settings.encode())


class TencentRefreshes:
    """The AS client in the stack's region with TENCENTCLOUD_SECRET_ID, TENCENTCLOUD_SECRET_KEY and, where set,
    TENCENTCLOUD_SESSION_TOKEN (as the provider and fleet/node_marks.py read them)."""

    def __init__(self, region: str, environ: Mapping[str, str] = os.environ) -> None:
        from tencentcloud.common.common_client import CommonClient
        from tencentcloud.common.credential import Credential

        credential = Credential(environ.get("TENCENTCLOUD_SECRET_ID", ""), environ.get("TENCENTCLOUD_SECRET_KEY", ""),
                                environ.get("TENCENTCLOUD_SESSION_TOKEN") or None)
        self.client = CommonClient("as", VERSION, credential, region)

    def _call(self, action: str, params: dict) -> dict:
        from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

        try:
            return self.client.call_json(action, params)["Response"]
        except TencentCloudSDKException as error:
            raise AsFailed(f"AS {action} failed: {error.get_code()}: {error.get_message()}") from None

    def start(self, group_id: str) -> str:
        return self._call("StartInstanceRefresh", {"AutoScalingGroupId": group_id, **REFRESH})["RefreshActivityId"]

    def status(self, activity_id: str) -> str:
        (activity,) = self._call("DescribeRefreshActivities", {"RefreshActivityIds": [activity_id]})[
            "RefreshActivitySet"]
        return activity["Status"]

    def cancel(self, group_id: str, activity_id: str) -> None:
        self._call("CancelInstanceRefresh", {"AutoScalingGroupId": group_id, "RefreshActivityId": activity_id})
