"""The store's request log names each request by the operation the client called: boto3 (the store client's own
library) against moto's server wrapped in the harness's recorder, as the store process runs it, over plain HTTP on
this machine; and the query APIs' Action and virtual-hosted buckets from what a node sends."""

from __future__ import annotations

import threading
import urllib.request

import boto3
import pytest
from botocore.config import Config
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

from here.boot import storelog

BUCKET = "gf-ckpt-1250000000"
# Above boto3's 8 MB multipart threshold, as a checkpoint is.
LARGE = 9 * 1024 * 1024


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """An S3 client of a moto server whose every request, once recording starts, goes to the log."""
    monkeypatch.setenv("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    log = tmp_path / storelog.NAME
    app = storelog.Recorder(DomainDispatcherApplication(create_backend_app), log, [BUCKET])
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    # moto's state is the process's: start from none.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="eu-west-1",
                      aws_access_key_id="STS.node", aws_secret_access_key="secret",
                      config=Config(s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    app.recording = True
    yield s3, log
    server.shutdown()


def test_each_request_is_logged_by_its_s3_operation(recorded, tmp_path):
    s3, log = recorded
    large = tmp_path / "model.pt"
    large.write_bytes(b"x" * LARGE)
    s3.upload_file(str(large), BUCKET, "checkpoints/model.pt")
    s3.put_object(Bucket=BUCKET, Key="checkpoints/small", Body=b"1")
    s3.list_objects_v2(Bucket=BUCKET, Prefix="checkpoints/")
    s3.head_object(Bucket=BUCKET, Key="checkpoints/small")
    s3.get_object(Bucket=BUCKET, Key="checkpoints/model.pt", Range="bytes=0-99")
    s3.copy_object(Bucket=BUCKET, Key="copy", CopySource={"Bucket": BUCKET, "Key": "checkpoints/small"})
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key="abandoned")["UploadId"]
    s3.abort_multipart_upload(Bucket=BUCKET, Key="abandoned", UploadId=upload)
    s3.delete_object(Bucket=BUCKET, Key="copy")
    entries = storelog.read(log)
    assert [e["operation"] for e in entries] == [
        "CreateMultipartUpload", "UploadPart", "UploadPart", "CompleteMultipartUpload", "PutObject", "ListObjectsV2",
        "HeadObject", "GetObject", "CopyObject", "CreateMultipartUpload", "AbortMultipartUpload", "DeleteObject"]
    assert {e["bucket"] for e in entries} == {BUCKET} and {e["api"] for e in entries} == {"s3"}
    assert all(e["client"] == "127.0.0.1" and e["key_id"] == "STS.node" and 200 <= e["status"] < 300
               for e in entries)
    assert entries[7]["headers"] == {"range": "bytes=0-99"}
    assert entries[8]["headers"]["x-amz-copy-source"].endswith("checkpoints/small")
    assert entries[1]["query"] == ["partNumber", "uploadId"]


def test_what_the_harness_put_before_recording_is_not_logged(recorded):
    _, log = recorded
    assert storelog.read(log) == []


@pytest.mark.parametrize(("method", "host", "path", "query", "body", "expected"), [
    ("POST", "ec2.eu-west-1.amazonaws.com", "/", "", b"Action=CreateTags&Version=2016-11-15",
     ("ec2", None, "CreateTags")),
    ("POST", "autoscaling.eu-west-1.amazonaws.com", "/", "", b"Action=SetInstanceHealth&Version=2011-01-01",
     ("autoscaling", None, "SetInstanceHealth")),
    ("GET", f"{BUCKET}.cos.ap-guangzhou.myqcloud.com", "/", "list-type=2&prefix=checkpoints%2F", b"",
     ("s3", BUCKET, "ListObjectsV2")),
    ("POST", f"{BUCKET}.s3.oss-cn-hangzhou-internal.aliyuncs.com", "/checkpoints/model.pt", "uploads", b"",
     ("s3", BUCKET, "CreateMultipartUpload")),
    ("PUT", f"{BUCKET}.s3.eu-west-1.amazonaws.com", "/checkpoints/model.pt", "policy", b"",
     ("s3", BUCKET, "unknown PUT object ?policy")),
    ("GET", "s3.eu-west-1.amazonaws.com", "/", "", b"", ("s3", None, "ListBuckets")),
])
def test_a_request_is_named_from_what_the_client_sent(method, host, path, query, body, expected):
    described = storelog.describe(method, host, path, query, {}, body, [BUCKET])
    assert (described["api"], described["bucket"], described["operation"]) == expected
