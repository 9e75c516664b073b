"""Emulated instance metadata services, each cloud's on its own address, answering each node by its private address.

- AWS (169.254.169.254): IMDSv2 only, as the launch template asks (components/aws/compute.py: http_tokens
  "required"): PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds (1-21600), then every GET carries
  X-aws-ec2-metadata-token, else 401. Instance id, type, placement, MAC and interfaces, the instance profile's role
  credentials (iam/security-credentials/ROLE), spot/instance-action (404 until a notice is set),
  autoscaling/target-lifecycle-state (InService, or Warmed:* for a warm-pool instance), the identity document and
  user-data.
- Alibaba (100.100.100.200): the same token protocol under X-aliyun-ecs-metadata-token; a hardened instance (the
  head: components/alicloud/head.py http_tokens "required") answers 403 without one. ram/security-credentials/ROLE,
  instance/spot/termination-time (404 until set), user-data.
- Tencent (169.254.0.23, metadata.tencentyun.com): plain GETs. cam/security-credentials/ROLE,
  spot/termination-time (404 until set), user-data.
- Local (169.254.169.254, `fleet up --stack local --boot`): plain GETs; instance id, address, placement and the spot
  notice in AWS's words (the local cloud's emulated spot); no role, since the local bucket is a directory.
Directory paths list their entries one per line, a trailing "/" marking a directory, as the real services do; every
version prefix (latest, 2016-01-01, 2021-03-23...) answers the same tree.

Run as `python -m here.boot.metadata STATE_DIR` in the bridge namespace: STATE_DIR/instances.json holds the
cloud and each instance; what changes during a boot is a file per instance (STATE_DIR/<instance-id>/spot-notice,
.../lifecycle-state), written by `set_spot_notice` / `set_lifecycle_state`, so the harness, tests and this server
share no memory.
"""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ADDRESSES = {"aws": ("169.254.169.254",), "alicloud": ("100.100.100.200",), "tencentcloud": ("169.254.0.23",),
             "local": ("169.254.169.254",)}
TOKEN_HEADERS = {"aws": "X-aws-ec2-metadata-token", "alicloud": "X-aliyun-ecs-metadata-token"}
MAX_TOKEN_TTL_S = 21600


@dataclass(frozen=True)
class Instance:
    """One instance as its metadata service knows it."""

    instance_id: str
    private_ip: str
    mac: str
    instance_type: str
    region: str
    zone: str
    image_id: str
    role: str
    hostname: str
    user_data_b64: str  # what the realizer hands the cloud; the service serves it decoded, as the clouds do
    tokens_required: bool
    spot: bool


def write_instances(state: Path, cloud: str, instances: list[Instance]) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "instances.json").write_text(json.dumps({"cloud": cloud, "instances": [asdict(i) for i in instances]}))


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def set_spot_notice(state: Path, cloud: str, instance_id: str, warning_s: float = 120) -> None:
    """The cloud's interruption notice for one instance, in that cloud's words."""
    when = _iso(time.time() + warning_s)
    body = json.dumps({"action": "terminate", "time": when}) if cloud in ("aws", "local") else when
    (state / instance_id).mkdir(parents=True, exist_ok=True)
    (state / instance_id / "spot-notice").write_text(body)


def set_lifecycle_state(state: Path, instance_id: str, value: str) -> None:
    """AWS warm pools: "Warmed:Stopped", "Warmed:Running", "InService"..."""
    (state / instance_id).mkdir(parents=True, exist_ok=True)
    (state / instance_id / "lifecycle-state").write_text(value)


def _credentials(cloud: str, role: str) -> str:
    expires = _iso(time.time() + 6 * 3600)
    key, secret, token = f"STS{secrets.token_hex(8).upper()}", secrets.token_hex(20), secrets.token_hex(40)
    if cloud == "aws":
        body = {"Code": "Success", "LastUpdated": _iso(time.time()), "Type": "AWS-HMAC", "AccessKeyId": key,
                "SecretAccessKey": secret, "Token": token, "Expiration": expires}
    elif cloud == "alicloud":
        body = {"Code": "Success", "LastUpdated": _iso(time.time()), "AccessKeyId": key, "AccessKeySecret": secret,
                "SecurityToken": token, "Expiration": expires}
    else:
        body = {"Code": "Success", "TmpSecretId": key, "TmpSecretKey": secret, "Token": token,
                "ExpiredTime": int(time.time()) + 6 * 3600, "Expiration": expires}
    return json.dumps(body)


def _dynamic(state: Path, instance: Instance, name: str, default: str | None = None) -> Callable[[], str | None]:
    def read() -> str | None:
        path = state / instance.instance_id / name
        return path.read_text() if path.exists() else default
    return read


def tree(cloud: str, instance: Instance, state: Path) -> dict:
    """The instance's meta-data tree: str leaves, dict directories, callables for what may change (None = 404)."""
    interface = {"mac": instance.mac, "device-number": "0", "local-ipv4s": instance.private_ip}
    macs = {"network": {"interfaces": {"macs": {instance.mac: interface}}}}
    spot = _dynamic(state, instance, "spot-notice")
    creds = {instance.role: lambda: _credentials(cloud, instance.role)}
    if cloud == "aws":
        return {"ami-id": instance.image_id, "ami-launch-index": "0", "hostname": instance.hostname,
                "local-hostname": instance.hostname, "instance-id": instance.instance_id,
                "instance-type": instance.instance_type, "local-ipv4": instance.private_ip, "mac": instance.mac,
                "placement": {"availability-zone": instance.zone, "region": instance.region},
                "iam": {"info": json.dumps({"Code": "Success", "InstanceProfileId": "AIPA" + instance.role.upper()}),
                        "security-credentials": creds},
                "services": {"domain": "amazonaws.com", "partition": "aws"},
                "autoscaling": {"target-lifecycle-state": _dynamic(state, instance, "lifecycle-state", "InService")},
                "spot": {"instance-action": spot}, **macs}
    if cloud == "local":
        return {"instance-id": instance.instance_id, "hostname": instance.hostname, "local-ipv4": instance.private_ip,
                "instance-type": instance.instance_type, "mac": instance.mac, "spot": {"instance-action": spot},
                **macs}
    if cloud == "alicloud":
        return {"instance-id": instance.instance_id, "region-id": instance.region, "zone-id": instance.zone,
                "hostname": instance.hostname, "private-ipv4": instance.private_ip, "mac": instance.mac,
                "image-id": instance.image_id, "network-type": "vpc",
                "instance": {"instance-type": instance.instance_type, "spot": {"termination-time": spot}},
                "ram": {"security-credentials": creds}, **macs}
    return {"instance-id": instance.instance_id, "uuid": instance.instance_id, "local-ipv4": instance.private_ip,
            "mac": instance.mac, "placement": {"region": instance.region, "zone": instance.zone},
            "instance": {"instance-type": instance.instance_type, "image-id": instance.image_id},
            "cam": {"security-credentials": creds}, "spot": {"termination-time": spot}, **macs}


def dynamic_tree(instance: Instance) -> dict:
    """/latest/dynamic/: the identity document (signatures are placeholders: nothing on the node checks them)."""
    document = json.dumps({"instanceId": instance.instance_id, "instanceType": instance.instance_type,
                           "region": instance.region, "availabilityZone": instance.zone,
                           "privateIp": instance.private_ip, "imageId": instance.image_id,
                           "accountId": "123456789012", "architecture": "x86_64", "version": "2017-09-30"})
    return {"instance-identity": {"document": document, "signature": "unsigned", "pkcs7": "unsigned"}}


def _resolve(node, parts: list[str]):
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node() if callable(node) else node


def _listing(node: dict) -> str | None:
    """Entries of a directory; a dynamic leaf that is absent now (no spot notice) is not listed, a directory whose
    every entry is absent neither."""
    names = []
    for name, child in node.items():
        if callable(child):
            if child() is not None:
                names.append(name)
        elif isinstance(child, dict):
            if _listing(child):
                names.append(name + "/")
        else:
            names.append(name)
    return "\n".join(names) if names else None


class Service:
    """The state one metadata process serves: instances by address, the tokens it handed out."""

    def __init__(self, state: Path) -> None:
        config = json.loads((state / "instances.json").read_text())
        self.state = state
        self.cloud: str = config["cloud"]
        self.instances = {i["private_ip"]: Instance(**i) for i in config["instances"]}
        self.tokens: dict[str, float] = {}
        self.lock = threading.Lock()

    def put_token(self, ttl: str | None) -> tuple[int, bytes]:
        if self.cloud not in TOKEN_HEADERS:
            return 404, b""
        try:
            seconds = int(ttl or "")
        except ValueError:
            return 400, b""
        if not 1 <= seconds <= MAX_TOKEN_TTL_S:
            return 400, b""
        token = secrets.token_urlsafe(40)
        with self.lock:
            self.tokens[token] = time.time() + seconds
        return 200, token.encode()

    def token_valid(self, token: str | None) -> bool:
        with self.lock:
            return token is not None and self.tokens.get(token, 0) > time.time()

    def get(self, client: str, path: str, token: str | None) -> tuple[int, bytes]:
        instance = self.instances.get(client)
        if instance is None:
            return 404, b""
        if self.cloud in TOKEN_HEADERS and not self.token_valid(token):
            if instance.tokens_required:
                return (401 if self.cloud == "aws" else 403), b""
            if token is not None:
                return 401, b""
        parts = [p for p in path.split("?")[0].split("/") if p]
        if len(parts) < 2:
            return (200, b"latest\n") if not parts else (404, b"")
        kind, rest = parts[1], parts[2:]
        if kind == "user-data":
            data = base64.b64decode(instance.user_data_b64) if instance.user_data_b64 else b""
            return (200, data) if data else (404, b"")
        if kind == "meta-data":
            node = _resolve(tree(self.cloud, instance, self.state), rest)
        elif kind == "dynamic":
            node = _resolve(dynamic_tree(instance), rest)
        else:
            return 404, b""
        if isinstance(node, dict):
            body = _listing(node)
            return (200, body.encode()) if body else (404, b"")
        return (200, node.encode()) if node is not None else (404, b"")


def _handler(service: Service) -> type[http.server.BaseHTTPRequestHandler]:
    header = TOKEN_HEADERS.get(service.cloud, "")

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(*service.get(self.client_address[0], self.path, self.headers.get(header) if header else None))

        def do_PUT(self) -> None:
            if self.path.rstrip("/") != "/latest/api/token":
                self._send(404, b"")
                return
            self._send(*service.put_token(self.headers.get(f"{header}-ttl-seconds")))

        def log_message(self, fmt: str, *args) -> None:
            sys.stderr.write(f"{self.client_address[0]} {fmt % args}\n")

    return Handler


def serve(state: Path) -> None:
    service = Service(state)
    servers = [http.server.ThreadingHTTPServer((address, 80), _handler(service))
               for address in ADDRESSES[service.cloud]]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
