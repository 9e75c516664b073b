"""The one emulated metadata service answers as each cloud's does, by the cloud's profile: session tokens where the
profile names a token header, each instance its own tree, notices at the profile's path and lifecycle states that
appear when set; the local cluster's nodes each on a port of their own. Served over real HTTP on loopback."""

from __future__ import annotations

import base64
import dataclasses
import http.server
import json
import threading
import urllib.error
import urllib.request
from dataclasses import replace
from types import MappingProxyType

import pytest

from clouds import profile
from fleet.stacks import resolve, spec_and_plan
from here.local import instances
from here.local.errors import LocalError
from here.local.layout import layout
from here.metadata import service, state
from here.metadata.state import Instance, Listener

AWS, ALICLOUD, TENCENT = profile("aws"), profile("alicloud"), profile("tencentcloud")
BASE = Instance(instance_id="i-0abc", private_ip="127.0.0.1", mac="02:00:00:00:00:01", instance_type="g4dn.xlarge",
                region="eu-west-1", zone="eu-west-1a", image_id="ami-1", role="c-node", hostname="ip-127-0-0-1",
                user_data_b64=base64.b64encode(b"\x1f\x8bgzip-bytes").decode(), tokens_required=True, spot=False)


def _client(server: http.server.ThreadingHTTPServer):
    def request(method: str, path: str, headers: dict | None = None) -> tuple[int, bytes]:
        req = urllib.request.Request(f"http://127.0.0.1:{server.server_port}{path}", method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    return request


@pytest.fixture
def listen():
    """listen(state_dir, listener) -> request(method, path, headers) -> (status, body), on a loopback port."""
    servers = []

    def start(directory, listener: Listener):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                 service.handler(service.Service(directory), listener))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return _client(server)

    yield start
    for server in servers:
        server.shutdown()


@pytest.fixture
def serve(tmp_path, listen):
    """serve(profile, instance): the cloud's service, answering each instance by the address it asks from."""
    def start(cloud, instance: Instance = BASE):
        state.write(tmp_path, cloud, [instance], [Listener("127.0.0.1", 0)])
        return listen(tmp_path, Listener("127.0.0.1", 0))

    return start


def token(request, header: str, ttl: str = "21600") -> str:
    status, body = request("PUT", "/latest/api/token", {f"{header}-ttl-seconds": ttl})
    assert status == 200
    return body.decode()


def test_aws_imdsv2_only(serve):
    request = serve(AWS)
    assert request("GET", "/latest/meta-data/instance-id")[0] == 401
    assert request("PUT", "/latest/api/token")[0] == 400  # no TTL header
    assert request("PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "21601"})[0] == 400
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    assert request("GET", "/latest/meta-data/instance-id", auth) == (200, b"i-0abc")
    assert request("GET", "/2021-03-23/meta-data/placement/region", auth) == (200, b"eu-west-1")
    assert request("GET", "/latest/meta-data/instance-id", {"X-aws-ec2-metadata-token": "forged"})[0] == 401


def test_the_token_header_path_and_longest_life_are_the_profiles(serve):
    cloud = replace(AWS, imds_token_url="http://169.254.169.254/v9/session", imds_token_header="X-Other-Token",
                    imds_token_max_ttl_s=60)
    request = serve(cloud)
    assert request("PUT", "/latest/api/token", {"X-Other-Token-ttl-seconds": "60"})[0] == 404
    assert request("PUT", "/v9/session", {"X-Other-Token-ttl-seconds": "61"})[0] == 400
    status, body = request("PUT", "/v9/session", {"X-Other-Token-ttl-seconds": "60"})
    assert status == 200
    assert request("GET", "/latest/meta-data/instance-id", {"X-Other-Token": body.decode()}) == (200, b"i-0abc")


def test_aws_tree_lists_directories_and_role_credentials(serve):
    request = serve(AWS)
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    listing = request("GET", "/latest/meta-data/", auth)[1].decode().split("\n")
    assert {"instance-id", "placement/", "iam/", "autoscaling/"} <= set(listing)
    assert "spot/" not in listing  # no notice: AWS shows no instance-action
    assert request("GET", "/latest/meta-data/iam/security-credentials/", auth) == (200, b"c-node")
    creds = json.loads(request("GET", "/latest/meta-data/iam/security-credentials/c-node", auth)[1])
    assert creds["Code"] == "Success" and creds["AccessKeyId"] and creds["Token"]
    assert request("GET", "/latest/user-data", auth) == (200, b"\x1f\x8bgzip-bytes")  # decoded, still gzip


def test_aws_spot_notice_and_warm_pool_state(serve, tmp_path):
    request = serve(AWS)
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    assert request("GET", "/latest/meta-data/spot/instance-action", auth)[0] == 404
    assert request("GET", "/latest/meta-data/autoscaling/target-lifecycle-state", auth) == (200, b"InService")
    state.set_lifecycle_state(tmp_path, "i-0abc", "Warmed:Stopped")
    assert request("GET", "/latest/meta-data/autoscaling/target-lifecycle-state", auth) == (200, b"Warmed:Stopped")
    state.set_spot_notice(tmp_path, "i-0abc", warning_s=120)
    status, body = request("GET", "/latest/meta-data/spot/instance-action", auth)
    assert status == 200 and json.loads(body)["action"] == "terminate"
    assert "spot/" in request("GET", "/latest/meta-data/", auth)[1].decode().split("\n")


def test_alibaba_hardened_mode_and_plain_mode(serve, tmp_path):
    request = serve(ALICLOUD)
    header = "X-aliyun-ecs-metadata-token"
    assert request("GET", "/latest/meta-data/instance-id")[0] == 403
    auth = {header: token(request, header)}
    assert request("GET", "/2016-01-01/meta-data/instance-id", auth) == (200, b"i-0abc")
    assert request("GET", "/latest/meta-data/ram/security-credentials/", auth) == (200, b"c-node")
    creds = json.loads(request("GET", "/latest/meta-data/ram/security-credentials/c-node", auth)[1])
    assert {"AccessKeyId", "AccessKeySecret", "SecurityToken"} <= set(creds)
    assert request("GET", "/latest/meta-data/instance/spot/termination-time", auth)[0] == 404
    state.set_spot_notice(tmp_path, "i-0abc")
    status, body = request("GET", "/latest/meta-data/instance/spot/termination-time", auth)
    assert status == 200 and body.decode().endswith("Z")  # a UTC time, not AWS's JSON
    assert request("GET", "/latest/meta-data/instance/instance-type", auth) == (200, b"g4dn.xlarge")


def test_alibaba_worker_without_hardening_answers_plain_gets(serve):
    request = serve(ALICLOUD, replace(BASE, tokens_required=False))
    assert request("GET", "/latest/meta-data/instance-id") == (200, b"i-0abc")


def test_tencent_plain_gets_cam_role_and_spot(serve, tmp_path):
    request = serve(TENCENT, replace(BASE, tokens_required=False))
    assert request("PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "60"})[0] == 404
    assert request("GET", "/latest/meta-data/cam/security-credentials/") == (200, b"c-node")
    creds = json.loads(request("GET", "/latest/meta-data/cam/security-credentials/c-node")[1])
    assert {"TmpSecretId", "TmpSecretKey", "Token"} <= set(creds)
    assert request("GET", "/latest/meta-data/spot/termination-time")[0] == 404
    state.set_spot_notice(tmp_path, "i-0abc")
    assert request("GET", "/latest/meta-data/spot/termination-time")[0] == 200


def test_the_spot_notice_is_served_where_the_profile_says(serve, tmp_path):
    moved = replace(TENCENT, spot_notice_url="http://metadata.tencentyun.com/latest/meta-data/events/termination-time")
    request = serve(moved, replace(BASE, tokens_required=False))
    state.set_spot_notice(tmp_path, "i-0abc")
    assert request("GET", "/latest/meta-data/events/termination-time")[0] == 200
    assert request("GET", "/latest/meta-data/spot/termination-time")[0] == 404


def test_unknown_address_gets_nothing(serve):
    request = serve(TENCENT, replace(BASE, private_ip="10.9.9.9", tokens_required=False))
    assert request("GET", "/latest/meta-data/instance-id")[0] == 404


def test_aws_identity_document_under_its_directory(serve):
    request = serve(AWS)
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    assert set(request("GET", "/latest/dynamic/instance-identity/", auth)[1].decode().split("\n")) >= {"document"}
    document = json.loads(request("GET", "/2021-03-23/dynamic/instance-identity/document", auth)[1])
    assert document["instanceId"] == "i-0abc" and document["region"] == "eu-west-1"


def test_the_listener_is_the_profiles_metadata_host_and_its_address():
    cloud = replace(AWS, metadata_url="http://md.example:8080/latest/meta-data",
                    spot_notice_url="http://md.example:8080/latest/meta-data/spot/instance-action",
                    metadata_hosts=MappingProxyType({"md.example": "169.254.9.9"}))
    assert state.listener(cloud) == Listener("169.254.9.9", 8080)
    assert state.host_names(cloud) == {"md.example": "169.254.9.9"}
    assert state.listener(replace(AWS, metadata_url="http://169.254.1.2/latest/meta-data")).address == "169.254.1.2"
    with pytest.raises(ValueError, match=r"'aws'.*md\.example.*metadata_hosts"):
        state.listener(replace(cloud, metadata_hosts=MappingProxyType({})))


@pytest.mark.parametrize("missing", [
    {"name": "nimbus"},
    {"spot_notice_url": "http://169.254.169.254/elsewhere/notice"},
    {"imds_token_max_ttl_s": 0},
])
def test_a_cloud_the_service_cannot_answer_for_is_refused(tmp_path, missing):
    """An unknown cloud, or one whose profile lacks a fact the service answers by, fails at write, named."""
    cloud = replace(AWS, **missing)
    with pytest.raises(ValueError, match=f"'{cloud.name}'"):
        state.write(tmp_path, cloud, [BASE], [Listener("127.0.0.1", 0)])
    assert not (tmp_path / state.CONFIG).exists()


def test_local_nodes_each_get_their_own_instance_and_notice(tmp_path, listen):
    """The local cluster's service answers each node on its own port, whatever address asks (loopback mode shares
    one), in the local cloud's words; a notice set for one node is that node's only."""
    _, plan = spec_and_plan(resolve("local", None))
    lay = dataclasses.replace(layout(plan), directory=tmp_path)
    head, worker = lay.nodes[0], lay.nodes[-1]
    with pytest.raises(LocalError, match="not running"):  # a drill before `up` has no service to tell
        instances.set_spot_notice(plan, lay, worker.name, 15)
    instances.write(plan, lay, "127.0.0.1")
    config = state.load(lay.metadata)
    assert [(item["address"], item["port"]) for item in config["listeners"]] == [
        ("127.0.0.1", instances.port(lay, node)) for node in lay.nodes]
    own = {node.name: listen(lay.metadata, Listener("127.0.0.1", 0, instances.instance(plan, node).instance_id))
           for node in (head, worker)}
    notice = "/latest/meta-data/spot/instance-action"
    assert own["head"]("PUT", "/latest/api/token")[0] == 404  # plain GETs: the local cloud names no token
    assert own["head"]("GET", "/latest/meta-data/local-ipv4") == (200, head.address.encode())
    assert own[worker.name]("GET", "/latest/meta-data/local-ipv4") == (200, worker.address.encode())
    assert own[worker.name]("GET", notice)[0] == 404
    instances.set_spot_notice(plan, lay, worker.name, 15)
    status, body = own[worker.name]("GET", notice)
    assert status == 200 and json.loads(body)["action"] == "terminate"
    assert own["head"]("GET", notice)[0] == 404
    instances.clear_spot_notice(plan, lay, worker.name)
    assert own[worker.name]("GET", notice)[0] == 404
