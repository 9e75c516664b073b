"""The registry stand-in (here.boot.registry) answers the Docker Registry HTTP API v2's read side as docker uses it:
the version check, a manifest by tag (schema 2, with its digest), the config and layer blobs by digest, each digest
the bytes' own; the config's diff_id is the uncompressed layer's; the layer holds a busybox that runs; and every
request is logged so the harness counts the bytes each node pulled (here.boot.fetched). Needs the plain image's
tree (built on first use) and Debian's mirror for busybox-static, once."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import ssl
import subprocess
import tarfile
import threading
import urllib.error
import urllib.request

import pytest

from here.boot import fetched, registry, tls

IMAGES = ("nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04", "prom/prometheus:v3.5.0", "busybox")


def test_references_split_as_docker_reads_them():
    assert registry.split(IMAGES[0]) == ("nvcr.io", "nvidia/k8s/dcgm-exporter", "4.2.3-4.1.3-ubuntu22.04")
    assert registry.split(IMAGES[1]) == ("registry-1.docker.io", "prom/prometheus", "v3.5.0")
    assert registry.split("busybox") == ("registry-1.docker.io", "library/busybox", "latest")
    assert registry.split("registry.corp.example:5000/nvcr/x:1") == ("registry.corp.example:5000", "nvcr/x", "1")
    assert registry.hosts(IMAGES[:2], "https://mirror.ccs.tencentyun.com") == (
        "nvcr.io", "registry-1.docker.io", "mirror.ccs.tencentyun.com")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The stand-ins served over TLS on a loopback port, with a context that trusts the run's CA."""
    directory = tmp_path_factory.mktemp("registry")
    root = registry.build(directory / "root", IMAGES, registry.busybox())
    certs = tls.issue(directory / "tls", ("nvcr.io",), "127.0.0.1")
    log = directory / "registry.log"
    with open(log, "w") as stream:
        class Logged(registry.Handler):
            def log_message(self, format, *args):
                stream.write(f"{self.address_string()} - - [{self.log_date_time_string()}] {format % args}\n")
                stream.flush()

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Logged(*a, directory=str(root)))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certs.cert, certs.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        client = ssl.create_default_context(cafile=str(certs.ca))

        def get(path, method="GET"):
            request = urllib.request.Request(f"https://127.0.0.1:{server.server_address[1]}{path}", method=method)
            return urllib.request.urlopen(request, context=client, timeout=10)

        yield get, root, log
        server.shutdown()


def test_the_api_answers_as_a_v2_registry(served):
    get, _, _ = served
    with get("/v2/") as answer:
        assert answer.status == 200 and answer.headers["Docker-Distribution-API-Version"] == "registry/2.0"
    with pytest.raises(urllib.error.HTTPError) as unknown:
        get("/v2/prom/node-exporter/manifests/v1.0.0")
    assert unknown.value.code == 404


def test_each_image_is_a_schema_2_manifest_whose_blobs_match_their_digests(served, tmp_path):
    get, _, _ = served
    with get("/v2/nvidia/k8s/dcgm-exporter/manifests/4.2.3-4.1.3-ubuntu22.04") as answer:
        assert answer.headers["Content-Type"] == registry.MANIFEST
        body = answer.read()
        assert answer.headers["Docker-Content-Digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
    manifest = json.loads(body)
    with get(f"/v2/nvidia/k8s/dcgm-exporter/manifests/{answer.headers['Docker-Content-Digest']}") as by_digest:
        assert by_digest.read() == body
    blobs = {}
    for entry in (manifest["config"], *manifest["layers"]):
        with get(f"/v2/nvidia/k8s/dcgm-exporter/blobs/{entry['digest']}") as blob:
            data = blob.read()
        assert ("sha256:" + hashlib.sha256(data).hexdigest(), len(data)) == (entry["digest"], entry["size"])
        blobs[entry["mediaType"]] = data
    config = json.loads(blobs[registry.CONFIG])
    tar = gzip.decompress(blobs[registry.LAYER])
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(tar).hexdigest()]
    assert config["config"]["Labels"]["gpufleet.boot.stand-in-for"] == IMAGES[0]
    with tarfile.open(fileobj=io.BytesIO(tar)) as layer:
        layer.extractall(tmp_path)  # no filter argument: Debian 12's Python 3.11.2 predates it
    ran = subprocess.run([tmp_path / "bin/busybox", "echo", "stand-in"], capture_output=True, text=True, check=True)
    assert ran.stdout == "stand-in\n"


def test_a_head_request_answers_without_the_body_and_the_log_counts_what_was_pulled(served):
    get, root, log = served
    manifest = "/v2/prom/prometheus/manifests/v3.5.0"
    with get(manifest, method="HEAD") as answer:
        assert answer.read() == b"" and int(answer.headers["Content-Length"]) > 0
    before = fetched.served_bytes(log, root)["127.0.0.1"]
    with get(manifest) as answer:
        size = len(answer.read())
    assert fetched.served_bytes(log, root)["127.0.0.1"] == before + size
