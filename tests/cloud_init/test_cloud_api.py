"""The Alibaba and Tencent adapters' API calls, run for real: a node written from the planner's user-data, the adapter
reading its role's temporary key from a fake metadata service (Alibaba's in hardened mode: token first) and calling
the cloud's API through the vendors' own SDKs (the versions the node's tools venv pins), against a local stand-in
for the API that records each request and answers as the API documents; each call recorded is one the stack's
rendered node role grants (its profile's node_calls, plan/permissions.py)."""

from __future__ import annotations

import http.server
import json
import re
import sys
import threading
import tomllib
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from bootstrap_helpers import run
from node_cases import boot, user_data
from node_policies import grants, resources_of

from clouds import profile
from plan import permissions
from plan.paths import PROJECT_ROOT

KEY = {"id": "STS.test-id", "secret": "test-secret", "token": "test-session-token"}
ROLE = "gpufleet-test-node"
INSTANCE = "i-test0123"
CREDENTIALS = {
    "alicloud": ("ram/security-credentials", {"AccessKeyId": KEY["id"], "AccessKeySecret": KEY["secret"],
                                              "SecurityToken": KEY["token"], "Code": "Success"}),
    "tencentcloud": ("cam/security-credentials", {"TmpSecretId": KEY["id"], "TmpSecretKey": KEY["secret"],
                                                  "Token": KEY["token"], "Code": "Success"}),
}
# What each API answers (the documented response shapes the adapters parse).
ANSWERS = {
    "DescribeInstances": {"RequestId": "r", "Instances": {"Instance": [
        {"VpcAttributes": {"PrivateIpAddress": {"IpAddress": ["10.0.0.10"]}}},
        {"VpcAttributes": {"PrivateIpAddress": {"IpAddress": ["10.0.0.11"]}}}]}},
    "TagResources": {"RequestId": "r"},
    "SetInstanceHealth": {"RequestId": "r"},
}
TENCENT_ANSWERS = {
    "DescribeInstances": {"Response": {"RequestId": "r", "TotalCount": 2, "InstanceSet": [
        {"PrivateIpAddresses": ["10.0.0.10"]}, {"PrivateIpAddresses": ["10.0.0.11"]}]}},
    "DescribeAutoScalingInstances": {"Response": {"RequestId": "r", "AutoScalingInstanceSet": [
        {"InstanceId": INSTANCE, "AutoScalingGroupId": "asg-test"}]}},
    "RemoveInstances": {"Response": {"RequestId": "r", "ActivityId": "asa-test"}},
}


def _serve(handler) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# The API each call went to, by the version the SDK sent (cloud-init/clouds/*_api.py: VERSIONS).
API_OF_VERSION = {"2014-05-26": "ecs", "2014-08-28": "ess", "2017-03-12": "cvm", "2018-04-19": "as"}


def _not_granted(stack: str, cloud: str, calls: list[dict]) -> list[str]:
    """The recorded calls whose action (the permissions table's) the stack's rendered node role does not grant."""
    granted = grants(resources_of(stack))
    missing = []
    for call in calls:
        api = API_OF_VERSION[call["headers"].get("x-acs-version") or call["headers"]["x-tc-version"]]
        if (action := permissions.action(profile(cloud).node_calls, api, call["action"])) not in granted:
            missing.append(f"{api} {call['action']} needs {action}")
    return missing


def _handler(answer):
    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self, body: bytes, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self._reply(*answer(self, None))

        def do_PUT(self):
            self._reply(*answer(self, None))

        def do_POST(self):
            self._reply(*answer(self, self.rfile.read(int(self.headers.get("Content-Length", 0)))))

        def log_message(self, *_):
            pass

    return Handler


@pytest.fixture
def metadata():
    """The cloud's metadata service: a token for a PUT (Alibaba's hardened mode; Tencent sends none), the role, its
    key, the instance id. A GET that needs a token and lacks it is refused, as hardened mode does."""
    state = {"cloud": None}

    def answer(request, _body):
        path = request.path.split("/latest/", 1)[-1]
        if request.command == "PUT":
            return b"meta-token", 200
        if state["cloud"] == "alicloud" and request.headers.get("X-aliyun-ecs-metadata-token") != "meta-token":
            return b"", 403
        where, key = CREDENTIALS[state["cloud"]]
        if path == f"meta-data/{where}/":
            return ROLE.encode(), 200
        if path == f"meta-data/{where}/{ROLE}":
            return json.dumps(key).encode(), 200
        if path == "meta-data/instance-id":
            return INSTANCE.encode(), 200
        return b"", 404

    server = _serve(_handler(answer))
    yield state, f"127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def api():
    calls: list[dict] = []

    def answer(request, body):
        query = dict(parse_qsl(urlsplit(request.path).query))
        action = request.headers.get("x-acs-action") or request.headers.get("X-TC-Action")
        calls.append({"action": action, "query": query, "body": json.loads(body) if body else None,
                      "headers": {k.lower(): v for k, v in request.headers.items()}})
        answers = TENCENT_ANSWERS if request.headers.get("X-TC-Action") else ANSWERS
        return json.dumps(answers[action]).encode(), 200

    server = _serve(_handler(answer))
    yield calls, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _node(tmp_path: Path, stack: str, metadata_address: str, role: str = "head") -> Path:
    """A node of `stack` as its user-data writes it, metadata at the fake service, the tools venv already installed
    (this test's Python holds the SDKs the venv would)."""
    root = tmp_path / "node"
    text = user_data(f"{stack}-{role}").replace("100.100.100.200", metadata_address).replace(
        "metadata.tencentyun.com", metadata_address)
    boot(text, root)
    tools = root / "opt/gpufleet/tools"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin/python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (tools / "bin/python3").chmod(0o755)
    (tools / ".complete").touch()
    return root


def _adapter(root: Path, function: str, endpoint: str, *args: str):
    script = f'. "$GPUFLEET_ROOT/opt/gpufleet/bin/gpufleet-lib.sh"; {function} "$@"'
    return run(["bash", "-c", script, "adapter", *args], root, env={"GF_API_ENDPOINT": endpoint})


def _signed_with_the_role_key(call: dict) -> bool:
    headers = call["headers"]
    if "x-acs-action" in headers:
        return (headers["x-acs-security-token"] == KEY["token"] and headers["x-acs-accesskey-id"] == KEY["id"]
                and headers["authorization"].startswith(f"ACS3-HMAC-SHA256 Credential={KEY['id']},"))
    return (headers["x-tc-token"] == KEY["token"]
            and headers["authorization"].startswith(f"TC3-HMAC-SHA256 Credential={KEY['id']}/"))


@pytest.mark.parametrize(("stack", "cloud"), [("ali-spot", "alicloud"), ("tencent-spot", "tencentcloud")])
def test_the_cluster_addresses_come_from_the_api_signed_with_the_role_key(tmp_path, metadata, api, stack, cloud):
    state, address = metadata
    state["cloud"] = cloud
    calls, endpoint = api
    done = _adapter(_node(tmp_path, stack, address), "cloud_addresses", endpoint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["10.0.0.10", "10.0.0.11"]
    [call] = calls
    assert call["action"] == "DescribeInstances" and _signed_with_the_role_key(call)
    assert not _not_granted(stack, cloud, calls)
    # The cluster's identity (name and a hash of project, stack and region), as the node's settings carry it.
    cluster = re.search(r"GF_CLUSTER='([^']+)'", user_data(f"{stack}-head"))[1]
    assert cluster.startswith(f"{stack}-")
    if cloud == "alicloud":
        assert call["headers"]["x-acs-version"] == "2014-05-26"
        assert call["query"] == {"RegionId": "cn-hangzhou", "Status": "Running", "PageSize": "100",
                                 "Tag.1.Key": "gpufleet:cluster", "Tag.1.Value": cluster}
    else:
        assert call["headers"]["x-tc-version"] == "2017-03-12" and call["headers"]["x-tc-region"] == "ap-guangzhou"
        assert call["body"]["Filters"] == [{"Name": "tag:gpufleet:cluster", "Values": [cluster]}]


def _worker(tmp_path: Path, stack: str, metadata_address: str) -> Path:
    """The stack's worker; the planner says whether its scaling group launched it (GF_IN_SCALING_GROUP)."""
    return _node(tmp_path, stack, metadata_address, role="worker")


def test_an_unhealthy_alibaba_worker_is_tagged_and_reported_to_its_scaling_group(tmp_path, metadata, api):
    state, address = metadata
    state["cloud"] = "alicloud"
    calls, endpoint = api
    done = _adapter(_worker(tmp_path, "ali-spot", address), "cloud_mark_unhealthy", endpoint, "gpus:0/1")
    assert done.returncode == 0, done.stderr
    assert [c["action"] for c in calls] == ["TagResources", "SetInstanceHealth"]
    assert all(_signed_with_the_role_key(c) for c in calls)
    assert calls[0]["query"]["Tag.1.Value"] == "failed:gpus:0/1" and calls[0]["query"]["ResourceId.1"] == INSTANCE
    assert calls[1]["query"]["InstanceId"] == INSTANCE and calls[1]["query"]["HealthStatus"] == "Unhealthy"
    assert [c["headers"]["x-acs-version"] for c in calls] == ["2014-05-26", "2014-08-28"]
    assert not _not_granted("ali-spot", "alicloud", calls)


@pytest.mark.parametrize(("stack", "role"), [("ali-erdma", "worker"), ("ali-spot", "head")])
def test_an_alibaba_instance_in_no_scaling_group_is_tagged_only(tmp_path, metadata, api, stack, role):
    """eRDMA workers are ECS instances (no ESS group can carry ERIs), and the head always is."""
    state, address = metadata
    state["cloud"] = "alicloud"
    calls, endpoint = api
    done = _adapter(_node(tmp_path, stack, address, role=role), "cloud_mark_unhealthy", endpoint, "gpus:0/8")
    assert done.returncode == 0, done.stderr
    assert [c["action"] for c in calls] == ["TagResources"]
    assert "in no scaling group" in done.stderr
    assert not _not_granted(stack, "alicloud", calls)


def test_an_unhealthy_tencent_worker_leaves_its_as_group(tmp_path, metadata, api):
    state, address = metadata
    state["cloud"] = "tencentcloud"
    calls, endpoint = api
    done = _adapter(_worker(tmp_path, "tencent-spot", address), "cloud_mark_unhealthy", endpoint, "gpus:0/1")
    assert done.returncode == 0, done.stderr
    assert [c["action"] for c in calls] == ["DescribeAutoScalingInstances", "RemoveInstances"]
    assert all(_signed_with_the_role_key(c) and c["headers"]["x-tc-version"] == "2018-04-19" for c in calls)
    assert calls[1]["body"] == {"AutoScalingGroupId": "asg-test", "InstanceIds": [INSTANCE]}
    assert not _not_granted("tencent-spot", "tencentcloud", calls)


def test_without_the_role_key_no_call_is_made(tmp_path, metadata, api):
    state, address = metadata
    state["cloud"] = "alicloud"
    calls, endpoint = api
    root = _node(tmp_path, "ali-spot", address)
    with open(root / "etc/gpufleet/node.env", "a") as env:
        env.write("GF_IMDS_TOKEN_URL=''\n")  # no token: the hardened metadata refuses the GETs
    done = _adapter(root, "cloud_addresses", endpoint)
    assert done.returncode != 0 and not calls
    assert "no credentials for the instance's RAM role" in done.stderr


def test_the_tests_run_the_sdk_versions_the_nodes_install():
    dev = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    for cloud in ("alicloud", "tencentcloud"):
        assert profile(cloud).api_client and set(profile(cloud).api_client) <= set(dev), cloud
