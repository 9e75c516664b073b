"""The object store standing in for S3, OSS and COS: moto (the library behind `moto[server]`) over HTTPS on the
bridge, reached by each cloud's own endpoint names (the VPC's resolver points them here, tls.py signs them), and
holding what the realizer uploads: the code bundle (plan.bundle) at the plan's code key. On AWS the same
server answers the EC2 and Auto Scaling calls a node makes.

Run as `python -m here.boot.store ADDRESS CERT KEY CA SEED.json LOG` in the bridge namespace: it listens on
ADDRESS:443, creates each bucket of SEED and puts its objects through the S3 API, then records every request after
that in LOG (here.boot.storelog: what the nodes asked of it, by operation) and prints "ready".
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from clouds import booted_profile
from here.boot import storelog
from plan.model import ClusterPlan


def shared_directory(plan: ClusterPlan) -> str | None:
    """Where a `file://` bucket (the local cloud's) is on every node: a directory, not an object store."""
    uri = plan.storage.code_uri
    return uri.removeprefix("file://").removesuffix(f"/{plan.storage.code_key}") if uri.startswith("file://") else None


def endpoints(plan: ClusterPlan) -> tuple[str, ...]:
    """The host names a node's store client contacts for this plan's bucket, first the cloud's default endpoint
    (its profile's store_hosts)."""
    if shared_directory(plan):
        return ()
    cloud = booted_profile(plan.cloud)
    if cloud.store_hosts is None:
        raise ValueError(f"cloud '{cloud.name}' does not name its store's endpoints (CloudProfile.store_hosts)")
    return cloud.store_hosts(plan.region, plan.storage.bucket)


def api_endpoints(plan: ClusterPlan) -> tuple[str, ...]:
    """The cloud APIs a node calls with its role that moto also serves: on AWS, EC2 (gpufleet-report's tags,
    gpufleet-discover's instance list) and Auto Scaling (set-instance-health). moto has no OSS/ECS/COS/CVM APIs."""
    if plan.cloud != "aws":
        return ()
    return (f"ec2.{plan.region}.amazonaws.com", f"autoscaling.{plan.region}.amazonaws.com")


def seed(plan: ClusterPlan, bundle: Path) -> dict:
    """What the realizer would have uploaded before the nodes boot."""
    return {"buckets": [{"name": plan.storage.bucket, "region": plan.region,
                         "objects": {plan.storage.code_key: str(bundle)}}]}


def _serve(address: str, cert: str, key: str, log: Path, buckets: list[str]) -> storelog.Recorder:
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = storelog.Recorder(DomainDispatcherApplication(create_backend_app), log, buckets)
    server = make_server(address, 443, app, threaded=True, ssl_context=(cert, key))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return app


def _put(address: str, ca: str, content: dict) -> None:
    import boto3
    from botocore.config import Config

    for bucket in content["buckets"]:
        s3 = boto3.client("s3", endpoint_url=f"https://{address}", region_name=bucket["region"], verify=ca,
                          aws_access_key_id="harness", aws_secret_access_key="harness",
                          config=Config(s3={"addressing_style": "path"}))
        location = {} if bucket["region"] == "us-east-1" else {
            "CreateBucketConfiguration": {"LocationConstraint": bucket["region"]}}
        s3.create_bucket(Bucket=bucket["name"], **location)
        for name, path in bucket["objects"].items():
            s3.put_object(Bucket=bucket["name"], Key=name, Body=Path(path).read_bytes())


if __name__ == "__main__":
    listen, cert_path, key_path, ca_path, seed_path, log_path = sys.argv[1:]
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    content = json.loads(Path(seed_path).read_text())
    buckets = [bucket["name"] for bucket in content["buckets"]]
    recorder = _serve(listen, cert_path, key_path, Path(log_path), buckets)
    _put(listen, ca_path, content)
    recorder.recording = True  # what the harness put there is not what a node asked for
    print("ready", flush=True)
    threading.Event().wait()
