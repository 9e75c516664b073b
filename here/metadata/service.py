"""The one emulated instance metadata service, for both ways of running a cluster on this machine: the booted
machines' (here/boot: each cloud's service on its own link-local address, an instance known by the address it asks
from) and the local cluster's (here/local: a port per node on the bridge, or on loopback without namespaces).

It answers by the cloud's profile (clouds/<cloud>.py, through here.metadata.state): the session token
where the cloud asks for one (PUT to its token path with "<header>-ttl-seconds", 1 to the longest life it grants,
then every GET carries "<header>"; an instance that requires one is refused without it), the spot notice at the
cloud's path (404 until one is set), and each cloud's tree (here.metadata.trees) with the user-data and the instance
identity document beside it. Directory paths list their entries one per line, a trailing "/" marking a directory,
as the real services do; every version prefix (latest, 2016-01-01, 2021-03-23...) answers the same tree.

Run as `python -m here.metadata.service STATE_DIR` (in the bridge namespace): it listens where STATE_DIR's
instances.json says and prints "ready".
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
from pathlib import Path

from here.metadata import state as statefiles
from here.metadata import trees
from here.metadata.state import Instance, Listener


def dynamic_tree(instance: Instance) -> dict:
    """/latest/dynamic/: the identity document (signatures are placeholders: nothing on the node checks them)."""
    document = json.dumps({"instanceId": instance.instance_id, "instanceType": instance.instance_type,
                           "region": instance.region, "availabilityZone": instance.zone,
                           "privateIp": instance.private_ip, "imageId": instance.image_id,
                           "accountId": "123456789012", "architecture": "x86_64", "version": "2017-09-30"})
    return {"instance-identity": {"document": document, "signature": "unsigned", "pkcs7": "unsigned"}}


def _graft(tree: dict, path: list[str], leaf: Callable[[], str | None]) -> dict:
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = leaf
    return tree


def _resolve(node, parts: list[str]):
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node() if callable(node) else node


def _listing(node: dict) -> str | None:
    """Entries of a directory; a live leaf that is absent now (no spot notice) is not listed, a directory whose
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
    """The state one metadata process serves: the cloud's facts, its instances, the tokens it handed out."""

    def __init__(self, state: Path) -> None:
        config = statefiles.load(state)
        self.state = state
        self.dialect = trees.dialect(config["cloud"])
        self.spot_notice: list[str] = config["spot_notice"]
        self.token: dict | None = config["token"]
        self.listeners = [Listener(**item) for item in config["listeners"]]
        self.instances = {i["instance_id"]: Instance(**i) for i in config["instances"]}
        self.by_address = {i.private_ip: i for i in self.instances.values()}
        self.tokens: dict[str, float] = {}
        self.lock = threading.Lock()

    def instance(self, listener: Listener, client: str) -> Instance | None:
        """The instance a request is about: the listener's own, else the one at the asking address."""
        if listener.instance_id is not None:
            return self.instances.get(listener.instance_id)
        return self.by_address.get(client)

    def put_token(self, path: str, ttl: str | None) -> tuple[int, bytes]:
        if self.token is None or path.rstrip("/") != self.token["path"]:
            return 404, b""
        try:
            seconds = int(ttl or "")
        except ValueError:
            return 400, b""
        if not 1 <= seconds <= self.token["max_ttl_s"]:
            return 400, b""
        token = secrets.token_urlsafe(40)
        with self.lock:
            self.tokens[token] = time.time() + seconds
        return 200, token.encode()

    def token_valid(self, token: str | None) -> bool:
        with self.lock:
            return token is not None and self.tokens.get(token, 0) > time.time()

    def _live(self, instance: Instance) -> Callable[[str, str | None], Callable[[], str | None]]:
        def live(name: str, default: str | None = None) -> Callable[[], str | None]:
            def read() -> str | None:
                path = self.state / instance.instance_id / name
                return path.read_text() if path.exists() else default
            return read
        return live

    def tree(self, instance: Instance) -> dict:
        """The instance's meta-data tree, the spot notice grafted at the cloud's path."""
        live = self._live(instance)
        return _graft(self.dialect.tree(instance, live), self.spot_notice, live("spot-notice", None))

    def get(self, instance: Instance | None, path: str, token: str | None) -> tuple[int, bytes]:
        if instance is None:
            return 404, b""
        if self.token is not None and not self.token_valid(token):
            if instance.tokens_required:
                return self.dialect.refused, b""
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
            node = _resolve(self.tree(instance), rest)
        elif kind == "dynamic":
            node = _resolve(dynamic_tree(instance), rest)
        else:
            return 404, b""
        if isinstance(node, dict):
            body = _listing(node)
            return (200, body.encode()) if body else (404, b"")
        return (200, node.encode()) if node is not None else (404, b"")


def handler(service: Service, listener: Listener) -> type[http.server.BaseHTTPRequestHandler]:
    header = service.token["header"] if service.token else ""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            token = self.headers.get(header) if header else None
            self._send(*service.get(service.instance(listener, self.client_address[0]), self.path, token))

        def do_PUT(self) -> None:
            ttl = self.headers.get(f"{header}-ttl-seconds") if header else None
            self._send(*service.put_token(self.path, ttl))

        def log_message(self, fmt: str, *args) -> None:
            sys.stderr.write(f"{self.client_address[0]} {fmt % args}\n")

    return Handler


def serve(state: Path) -> None:
    service = Service(state)
    servers = [http.server.ThreadingHTTPServer((item.address, item.port), handler(service, item))
               for item in service.listeners]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
