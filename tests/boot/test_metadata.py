"""The emulated metadata services answer as the clouds' do: session tokens where the cloud demands them, each
instance its own tree, notices and lifecycle states that appear when set. Served over real HTTP on loopback."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import urllib.error
import urllib.request
from dataclasses import replace

import pytest

from here.boot import metadata
from here.boot.metadata import Instance

BASE = Instance(instance_id="i-0abc", private_ip="127.0.0.1", mac="02:00:00:00:00:01", instance_type="g4dn.xlarge",
                region="eu-west-1", zone="eu-west-1a", image_id="ami-1", role="c-node", hostname="ip-127-0-0-1",
                user_data_b64=base64.b64encode(b"\x1f\x8bgzip-bytes").decode(), tokens_required=True, spot=False)


@pytest.fixture
def serve(tmp_path):
    """serve(cloud, instance) -> request(method, path, headers) -> (status, body), on a loopback port."""
    servers = []

    def start(cloud: str, instance: Instance = BASE):
        metadata.write_instances(tmp_path, cloud, [instance])
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), metadata._handler(metadata.Service(tmp_path)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)

        def request(method: str, path: str, headers: dict | None = None) -> tuple[int, bytes]:
            req = urllib.request.Request(f"http://127.0.0.1:{server.server_port}{path}", method=method,
                                         headers=headers or {})
            try:
                with urllib.request.urlopen(req, timeout=5) as resp:
                    return resp.status, resp.read()
            except urllib.error.HTTPError as error:
                return error.code, error.read()

        return request

    yield start
    for server in servers:
        server.shutdown()


def token(request, header: str, ttl: str = "21600") -> str:
    status, body = request("PUT", "/latest/api/token", {f"{header}-ttl-seconds": ttl})
    assert status == 200
    return body.decode()


def test_aws_imdsv2_only(serve):
    request = serve("aws")
    assert request("GET", "/latest/meta-data/instance-id")[0] == 401
    assert request("PUT", "/latest/api/token")[0] == 400  # no TTL header
    assert request("PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "21601"})[0] == 400
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    assert request("GET", "/latest/meta-data/instance-id", auth) == (200, b"i-0abc")
    assert request("GET", "/2021-03-23/meta-data/placement/region", auth) == (200, b"eu-west-1")
    assert request("GET", "/latest/meta-data/instance-id", {"X-aws-ec2-metadata-token": "forged"})[0] == 401


def test_aws_tree_lists_directories_and_role_credentials(serve, tmp_path):
    request = serve("aws")
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    listing = request("GET", "/latest/meta-data/", auth)[1].decode().split("\n")
    assert {"instance-id", "placement/", "iam/", "autoscaling/"} <= set(listing)
    assert "spot/" not in listing  # no notice: AWS shows no instance-action
    assert request("GET", "/latest/meta-data/iam/security-credentials/", auth) == (200, b"c-node")
    creds = json.loads(request("GET", "/latest/meta-data/iam/security-credentials/c-node", auth)[1])
    assert creds["Code"] == "Success" and creds["AccessKeyId"] and creds["Token"]
    assert request("GET", "/latest/user-data", auth) == (200, b"\x1f\x8bgzip-bytes")  # decoded, still gzip


def test_aws_spot_notice_and_warm_pool_state(serve, tmp_path):
    request = serve("aws")
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    assert request("GET", "/latest/meta-data/spot/instance-action", auth)[0] == 404
    assert request("GET", "/latest/meta-data/autoscaling/target-lifecycle-state", auth) == (200, b"InService")
    metadata.set_lifecycle_state(tmp_path, "i-0abc", "Warmed:Stopped")
    assert request("GET", "/latest/meta-data/autoscaling/target-lifecycle-state", auth) == (200, b"Warmed:Stopped")
    metadata.set_spot_notice(tmp_path, "aws", "i-0abc", warning_s=120)
    status, body = request("GET", "/latest/meta-data/spot/instance-action", auth)
    assert status == 200 and json.loads(body)["action"] == "terminate"
    assert "spot/" in request("GET", "/latest/meta-data/", auth)[1].decode().split("\n")


def test_alibaba_hardened_mode_and_plain_mode(serve):
    request = serve("alicloud")
    header = "X-aliyun-ecs-metadata-token"
    assert request("GET", "/latest/meta-data/instance-id")[0] == 403
    auth = {header: token(request, header)}
    assert request("GET", "/2016-01-01/meta-data/instance-id", auth) == (200, b"i-0abc")
    assert request("GET", "/latest/meta-data/ram/security-credentials/", auth) == (200, b"c-node")
    creds = json.loads(request("GET", "/latest/meta-data/ram/security-credentials/c-node", auth)[1])
    assert {"AccessKeyId", "AccessKeySecret", "SecurityToken"} <= set(creds)
    assert request("GET", "/latest/meta-data/instance/spot/termination-time", auth)[0] == 404


def test_alibaba_worker_without_hardening_answers_plain_gets(serve):
    request = serve("alicloud", replace(BASE, tokens_required=False))
    assert request("GET", "/latest/meta-data/instance-id") == (200, b"i-0abc")


def test_tencent_plain_gets_cam_role_and_spot(serve, tmp_path):
    request = serve("tencentcloud", replace(BASE, tokens_required=False))
    assert request("PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "60"})[0] == 404
    assert request("GET", "/latest/meta-data/cam/security-credentials/") == (200, b"c-node")
    creds = json.loads(request("GET", "/latest/meta-data/cam/security-credentials/c-node")[1])
    assert {"TmpSecretId", "TmpSecretKey", "Token"} <= set(creds)
    assert request("GET", "/latest/meta-data/spot/termination-time")[0] == 404
    metadata.set_spot_notice(tmp_path, "tencentcloud", "i-0abc")
    assert request("GET", "/latest/meta-data/spot/termination-time")[0] == 200


def test_unknown_address_gets_nothing(serve):
    request = serve("tencentcloud", replace(BASE, private_ip="10.9.9.9", tokens_required=False))
    assert request("GET", "/latest/meta-data/instance-id")[0] == 404


def test_aws_identity_document_under_its_directory(serve):
    request = serve("aws")
    auth = {"X-aws-ec2-metadata-token": token(request, "X-aws-ec2-metadata-token")}
    assert set(request("GET", "/latest/dynamic/instance-identity/", auth)[1].decode().split("\n")) >= {"document"}
    document = json.loads(request("GET", "/2021-03-23/dynamic/instance-identity/document", auth)[1])
    assert document["instanceId"] == "i-0abc" and document["region"] == "eu-west-1"
