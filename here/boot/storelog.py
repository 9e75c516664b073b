"""Every request the harness's store answers, one JSON line each: the store process (here.boot.store) wraps
moto's WSGI app in `Recorder`, and tests read the lines back (`read`, `Boot.store_requests`) to see which operations
a node's store client and cloud CLI made, by name, and so which actions its role needs (clouds/
permissions.py). Each line holds the client's address, method, host, path, the query's keys, the few headers that
tell operations apart or show the caller (x-amz-copy-source, range, the signing key id), the status, and what the
request is: `api` ("s3" for the object store, else the query API's service: "ec2", "autoscaling"), `bucket` and
`operation` (the S3 operation name, or the query API's Action)."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import parse_qs, parse_qsl

NAME = "store-requests.jsonl"
# Query APIs (EC2 and Auto Scaling on AWS) send their Action in a form body: read, as they are small.
QUERY_APIS = ("ec2", "autoscaling")
HEADERS = ("x-amz-copy-source", "range")
_KEY_ID = re.compile(r"Credential=([^/,\s]+)")

# S3 REST operations by method, whether the path names an object, and the subresource that selects it among the
# query's keys (docs.aws.amazon.com/AmazonS3/latest/API: each operation's request syntax).
SUBRESOURCES = ("uploadId", "uploads", "list-type", "versions", "location", "tagging", "acl", "delete", "restore")
# Query keys that only qualify an operation (listing bounds, a version, a part, botocore's operation hint `x-id`).
PARAMETERS = frozenset({"x-id", "prefix", "delimiter", "max-keys", "marker", "encoding-type", "continuation-token",
                        "start-after", "fetch-owner", "versionId", "partNumber", "max-parts", "part-number-marker",
                        "key-marker", "upload-id-marker", "max-uploads"})
_BUCKET = {
    ("GET", "list-type"): "ListObjectsV2",
    ("GET", "uploads"): "ListMultipartUploads",
    ("GET", "versions"): "ListObjectVersions",
    ("GET", "location"): "GetBucketLocation",
    ("GET", ""): "ListObjects",
    ("HEAD", ""): "HeadBucket",
    ("PUT", ""): "CreateBucket",
    ("DELETE", ""): "DeleteBucket",
    ("POST", "delete"): "DeleteObjects",
}
_OBJECT = {
    ("GET", "uploadId"): "ListParts",
    ("GET", "tagging"): "GetObjectTagging",
    ("GET", "acl"): "GetObjectAcl",
    ("GET", ""): "GetObject",
    ("HEAD", ""): "HeadObject",
    ("PUT", "tagging"): "PutObjectTagging",
    ("PUT", "acl"): "PutObjectAcl",
    ("POST", "uploads"): "CreateMultipartUpload",
    ("POST", "uploadId"): "CompleteMultipartUpload",
    ("POST", "restore"): "RestoreObject",
    ("DELETE", "uploadId"): "AbortMultipartUpload",
    ("DELETE", ""): "DeleteObject",
}


def s3_operation(method: str, key: str, query: Iterable[str], headers: dict[str, str]) -> str:
    """The S3 operation a REST request is; "unknown METHOD bucket|object ?keys" when no rule names it."""
    keys = set(query)
    sub = next((s for s in SUBRESOURCES if s in keys), "")
    copy = "x-amz-copy-source" in headers
    name = None
    if keys <= PARAMETERS | set(SUBRESOURCES):
        if method == "PUT" and key and sub == "uploadId":
            name = "UploadPartCopy" if copy else "UploadPart"
        elif method == "PUT" and key and not sub:
            name = "CopyObject" if copy else "PutObject"
        else:
            name = (_OBJECT if key else _BUCKET).get((method, sub))
    return name or f"unknown {method} {'object' if key else 'bucket'} ?{'&'.join(sorted(keys))}"


def describe(method: str, host: str, path: str, query: str, headers: dict[str, str], body: bytes,
             buckets: Iterable[str]) -> dict:
    """What one request is: its API, bucket and operation, from what the client sent."""
    host = host.split(":")[0]
    service = host.split(".")[0]
    if service in QUERY_APIS:
        params = dict(parse_qsl(query)) | dict(parse_qsl(body.decode(errors="replace")))
        return {"api": service, "bucket": None, "operation": params.get("Action", f"unknown {method}")}
    bucket = next((b for b in buckets if host.startswith(f"{b}.")), None)
    if bucket is not None:  # virtual-hosted: the bucket in the host name
        key = path.lstrip("/")
    else:  # path-style: the bucket first in the path
        bucket, _, key = path.lstrip("/").partition("/")
    if not bucket:
        return {"api": "s3", "bucket": None, "operation": "ListBuckets" if method == "GET" else f"unknown {method}"}
    return {"api": "s3", "bucket": bucket, "operation": s3_operation(method, key, parse_qs(query, True), headers)}


class Recorder:
    """WSGI middleware: the request, as `describe` names it, appended to `log` once answered, while recording."""

    def __init__(self, app: Callable, log: Path, buckets: Iterable[str]) -> None:
        self.app, self.log, self.buckets = app, log, tuple(buckets)
        self.recording = False
        self._lock = threading.Lock()

    def __call__(self, environ: dict, start_response: Callable):
        if not self.recording:
            return self.app(environ, start_response)
        headers = {name[5:].replace("_", "-").lower(): value for name, value in environ.items()
                   if name.startswith("HTTP_")}
        host = headers.get("host", "")
        body = b""
        if host.split(".")[0] in QUERY_APIS:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
        method, path, query = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/"), environ.get("QUERY_STRING", "")
        status = []

        def record_status(code, response_headers, *exc_info):
            status.append(int(code.split()[0]))
            return start_response(code, response_headers, *exc_info)

        try:
            return self.app(environ, record_status)
        finally:  # also a request moto fails on (an operation it does not implement) was made
            key_id = _KEY_ID.search(headers.get("authorization", ""))
            entry = {"client": environ.get("REMOTE_ADDR"), "method": method, "host": host, "path": path,
                     "query": sorted(parse_qs(query, True)),
                     "headers": {h: headers[h] for h in HEADERS if h in headers},
                     "key_id": key_id[1] if key_id else None, "status": status[0] if status else None,
                     **describe(method, host, path, query, headers, body, self.buckets)}
            with self._lock, open(self.log, "a") as out:
                out.write(json.dumps(entry) + "\n")


def read(log: Path) -> list[dict]:
    """The recorded requests, oldest first (none before the first one; a line still being written is left out)."""
    try:
        lines = log.read_text().split("\n")[:-1]
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines]
