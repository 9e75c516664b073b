"""fleet/as_groups.py against the real Tencent SDK common client with its calls answered here as the AS API documents
them (StartInstanceRefresh, DescribeRefreshActivities, CancelInstanceRefresh, 2018-04-19), a refused call said by
name, and the groups a deployment holds with their launch configuration's user-data."""

from __future__ import annotations

import pytest
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

from fleet.as_groups import AsFailed, RefreshRecords, StateGroup, TencentRefreshes, groups_in, settings_hash

ENV = {"TENCENTCLOUD_SECRET_ID": "id", "TENCENTCLOUD_SECRET_KEY": "key"}


def test_a_refresh_reinstalls_one_at_a_time_and_cancels_itself_on_a_failed_batch():
    refreshes = TencentRefreshes("ap-guangzhou", environ=ENV)
    sent = []
    answers = {"StartInstanceRefresh": {"RefreshActivityId": "asr-1", "RequestId": "r"},
               "DescribeRefreshActivities": {"TotalCount": 1, "RefreshActivitySet": [
                   {"RefreshActivityId": "asr-1", "AutoScalingGroupId": "asg-1", "Status": "RUNNING"}]},
               "CancelInstanceRefresh": {"RequestId": "r"}}
    refreshes.client.call_json = lambda action, params: sent.append((action, params)) or {"Response": answers[action]}
    assert refreshes.start("asg-1") == "asr-1"
    assert refreshes.status("asr-1") == "RUNNING"
    refreshes.cancel("asg-1", "asr-1")
    assert sent == [
        ("StartInstanceRefresh", {"AutoScalingGroupId": "asg-1", "RefreshMode": "ROLLING_UPDATE_RESET",
                                  "RefreshSettings": {"RollingUpdateSettings": {
                                      "BatchNumber": 1, "BatchPause": "AUTOMATIC", "FailProcess": "AUTO_CANCEL"}}}),
        ("DescribeRefreshActivities", {"RefreshActivityIds": ["asr-1"]}),
        ("CancelInstanceRefresh", {"AutoScalingGroupId": "asg-1", "RefreshActivityId": "asr-1"})]
    assert (refreshes.client._service, refreshes.client._apiVersion) == ("as", "2018-04-19")


def test_a_refused_call_is_said():
    refreshes = TencentRefreshes("ap-guangzhou", environ=ENV)

    def refused(action, params):
        raise TencentCloudSDKException("ResourceInUse.AutoScalingGroupNotActive", "scaling group is not active")

    refreshes.client.call_json = refused
    with pytest.raises(AsFailed, match="AS StartInstanceRefresh failed: ResourceInUse.AutoScalingGroupNotActive"):
        refreshes.start("asg-1")


def test_the_groups_a_deployment_holds_with_their_settings():
    config = {"urn": "urn:pulumi:s::p::tencentcloud:As/scalingConfig:ScalingConfig::c", "id": "lc-1",
              "type": "tencentcloud:As/scalingConfig:ScalingConfig", "inputs": {"userData": "H4sI..."}}
    group = {"urn": "urn:pulumi:s::p::tencentcloud:As/scalingGroup:ScalingGroup::s-spot-workers", "id": "asg-1",
             "type": "tencentcloud:As/scalingGroup:ScalingGroup", "inputs": {"configurationId": "lc-1"}}
    assert groups_in({"resources": [config, group]}) == {
        "asg-1": StateGroup("s-spot-workers", "asg-1", settings_hash("H4sI..."))}
    assert groups_in({"resources": [group]}) == {}, "no configuration: nothing to compare"


def test_records_read_none_until_written():
    import boto3
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="bucket-1")
        records = RefreshRecords(s3, "cos://bucket-1/c/groups-refreshed")
        assert records.read("asg-1") is None
        records.write("asg-1", "abc")
        assert records.read("asg-1") == "abc"
