"""The container registries a node's monitor pulls from, stood in for on the bridge: one HTTPS server that answers as
the plan's Docker Hub mirror (GF_MIRRORS_REGISTRY), as Docker Hub itself (registry-1.docker.io) and as each other
registry the plan's images name (nvcr.io, or the stack's nvcr mirror), with the Docker Registry HTTP API v2's read
side: `GET /v2/` (the version check), manifests by tag or digest, blobs by digest (GET and HEAD).

What it serves are stand-ins under the images' real names and tags: a one-layer image of Debian's static busybox whose
entrypoint prints what it stands in for and sleeps, so `docker pull` and `docker run` run for real and the containers
stay up, but no exporter, Prometheus or Grafana runs in the harness. The images are files under a directory laid out
as the API's paths (`v2/<repository>/manifests/<tag>`, `v2/<repository>/blobs/<digest>`), so the harness counts the
bytes each node pulled from its log like the other mirrors' (here.boot.fetched).

    python -m here.boot.registry ADDRESS CERT KEY ROOT
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import shutil
import ssl
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from pathlib import Path

from here.boot import apt, rootfs

DOCKER_HUB = "registry-1.docker.io"  # where docker pulls a Docker Hub image from without a mirror
# Outside every plan's subnet and never a host on the internet (RFC 2544's benchmarking range): the bridge's address
# for the registries, since the store holds port 443 on the router's.
ADDRESS = "198.18.0.1"
MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG = "application/vnd.docker.container.image.v1+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
BUSYBOX = "busybox-static"


def split(image: str) -> tuple[str, str, str]:
    """(registry host, repository, tag) as docker reads a reference: a first component with a dot or a colon is a
    registry, else the image is Docker Hub's (single names under library/)."""
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first):
        return first, rest, tag
    return DOCKER_HUB, name if "/" in name else f"library/{name}", tag


def hosts(images: Iterable[str], mirror: str) -> tuple[str, ...]:
    """The registry host names the nodes of a plan pull from: its images' registries and its Docker Hub mirror."""
    names = [split(image)[0] for image in images]
    if mirror:
        names.append(mirror.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0])
    return tuple(dict.fromkeys(names))


def busybox() -> bytes:
    """Debian's static busybox, from the package the harness's apt mirror fetches for the plain image."""
    repo = apt.repository(rootfs.PLAIN, (BUSYBOX,))
    deb = next(repo.glob(f"{BUSYBOX}_*.deb"))
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        return archive.extractfile("./bin/busybox").read()


def _layer(binary: bytes) -> tuple[bytes, bytes]:
    """(the layer's tar, gzipped) holding bin/busybox and bin/sh, reproducibly (no times, no owners)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in ("bin/", "tmp/"):
            entry = tarfile.TarInfo(name.rstrip("/"))
            entry.type, entry.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp/" else 0o755
            archive.addfile(entry)
        entry = tarfile.TarInfo("bin/busybox")
        entry.size, entry.mode = len(binary), 0o755
        archive.addfile(entry, io.BytesIO(binary))
        link = tarfile.TarInfo("bin/sh")
        link.type, link.linkname = tarfile.SYMTYPE, "busybox"
        archive.addfile(link)
    tar = raw.getvalue()
    return tar, gzip.compress(tar, mtime=0)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def build(root: Path, images: Iterable[str], binary: bytes) -> Path:
    """ROOT laid out as the API's paths, holding a stand-in for each image (any registry: repositories differ)."""
    shutil.rmtree(root, ignore_errors=True)
    tar, layer = _layer(binary)
    for image in images:
        _, repository, tag = split(image)
        config = json.dumps({
            "architecture": "amd64", "os": "linux",
            "config": {"Env": ["PATH=/bin"], "Labels": {"gpufleet.boot.stand-in-for": image},
                       "Entrypoint": ["/bin/busybox", "sh", "-c",
                                      f'echo "gpufleet boot harness stand-in for {image}: $*"; '
                                      "exec /bin/busybox sleep 2147483647", "stand-in"]},
            "rootfs": {"type": "layers", "diff_ids": [_digest(tar)]},
        }, sort_keys=True).encode()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": {"mediaType": CONFIG, "size": len(config), "digest": _digest(config)},
            "layers": [{"mediaType": LAYER, "size": len(layer), "digest": _digest(layer)}],
        }, indent=2).encode()
        base = root / "v2" / repository
        for directory in ("manifests", "blobs"):
            (base / directory).mkdir(parents=True, exist_ok=True)
        for name in (tag, _digest(manifest)):
            (base / "manifests" / name).write_bytes(manifest)
        for blob in (config, layer):
            (base / "blobs" / _digest(blob)).write_bytes(blob)
    return root


class Handler(http.server.SimpleHTTPRequestHandler):
    """The API's read side over the laid-out files; anything else 404, as a registry answers an unknown name."""

    def send_head(self):
        path = self.path.split("?", 1)[0]
        if path in ("/v2", "/v2/"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            return io.BytesIO(b"{}")
        if "/manifests/" not in path and "/blobs/" not in path:
            self.send_error(404)
            return None
        file = Path(self.translate_path(path))
        if not file.is_file():
            self.send_error(404)
            return None
        data = file.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", MANIFEST if "/manifests/" in path else "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Docker-Content-Digest", _digest(data))
        self.end_headers()
        return io.BytesIO(data)

    def end_headers(self):
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        super().end_headers()


def serve_command(root: Path, cert: Path, key: Path) -> list[str]:
    return [sys.executable, "-m", "here.boot.registry", ADDRESS, str(cert), str(key), str(root)]


def main(argv: list[str]) -> None:
    address, cert, key, root = argv
    server = http.server.ThreadingHTTPServer(
        (address, 443), lambda *args: Handler(*args, directory=root))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
