"""The AWS parts of the node scripts, run for real in local mode against a fake IMDSv2 and a fake `aws` CLI (S3 as a
folder): the spot watcher drains a worker its scaling group terminates, and the GPU publisher sends the series the
workers scale on. The node is booted from the planner's user-data; with GF_CLOUD=aws, `install` puts the AWS adapter
(cloud-init/clouds/aws.sh) in place, so every AWS call goes through it."""

from __future__ import annotations

import http.server
import subprocess
import threading

import pytest
from bootstrap_helpers import run
from test_local_scripts import local_node  # noqa: F401  (the fixture)

from components.aws.compute import GPU_METRIC
from plan.lifecycle import DRAIN_HOOK

TOKEN_HEADER = "X-aws-ec2-metadata-token"
INSTANCE_ID = "i-0123456789abcdef0"
GROUP = "aws-test-workers-1a2b3c4"
BUCKET = "s3://test-bucket/checkpoints"
FAKE_AWS = f"""#!/usr/bin/env bash
# Stands in for the AWS CLI: S3 is a folder under $GPUFLEET_TEST/s3; every other call is recorded; says which group
# the instance is in; notes whether the checkpoint was in the bucket when the lifecycle action was completed.
set -euo pipefail
case "$1 $2" in
  "s3 cp" | "s3 sync")
    src=$4 dst=$5
    case "$src" in s3://*) src="$GPUFLEET_TEST/s3/${{src#s3://}}" ;; esac
    case "$dst" in s3://*) dst="$GPUFLEET_TEST/s3/${{dst#s3://}}" ;; esac
    if [ "$2" = sync ]; then mkdir -p "$dst" && {{ [ ! -d "$src" ] || cp -a "$src/." "$dst/"; }}
    else mkdir -p "$(dirname "$dst")" && cp "$src" "$dst"; fi
    exit 0 ;;
esac
printf '%s\\n' "$*" >> "$GPUFLEET_TEST/aws-calls"
case "$1 $2" in
  "autoscaling describe-auto-scaling-instances") echo {GROUP} ;;
  "autoscaling complete-lifecycle-action")
    [ -e "$GPUFLEET_TEST_PUSHED" ] && echo pushed >> "$GPUFLEET_TEST/aws-calls" ;;
esac
"""


def _server(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Imds(http.server.BaseHTTPRequestHandler):
    """IMDSv2 of an Auto Scaling worker: no spot notice; target lifecycle state InService until `ready` exists."""

    ready = None

    def _answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        self._answer(200, b"tok") if self.headers.get(f"{TOKEN_HEADER}-ttl-seconds") else self._answer(400)

    def do_GET(self):
        if self.headers.get(TOKEN_HEADER) != "tok":
            return self._answer(401)
        if self.path.endswith("/autoscaling/target-lifecycle-state"):
            return self._answer(200, b"Terminated" if self.ready.exists() else b"InService")
        if self.path.endswith("/instance-id"):
            return self._answer(200, INSTANCE_ID.encode())
        self._answer(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def aws_cli(tmp_path):
    fake = tmp_path / "test/bin/aws"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(FAKE_AWS)
    fake.chmod(0o755)
    return tmp_path / "test/aws-calls"


@pytest.mark.parametrize("spot", [True, False], ids=["spot", "on-demand"])
def test_a_worker_the_group_terminates_checkpoints_then_completes_the_hook(local_node, aws_cli, tmp_path,  # noqa: F811
                                                                          spot):
    server = _server(type("Handler", (Imds,), {"ready": tmp_path / "test/worker-ready"}))
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        root, entry, env, _ = local_node(role="worker", cloud="aws", region="us-east-1", spot=spot,
                                         drain_hook=DRAIN_HOOK, checkpoint_uri=BUCKET,
                                         metadata_url=f"{url}/latest/meta-data",
                                         spot_notice_url=f"{url}/latest/meta-data/spot/instance-action",
                                         imds_token_url=f"{url}/latest/api/token", imds_token_header=TOKEN_HEADER,
                                         spot_poll_s=0.2)
        pushed = tmp_path / "test/s3/test-bucket/checkpoints/step-7/model.pt"
        result = run([entry, "start"], root, env | {"GPUFLEET_TEST_WORKER": "1", "GPUFLEET_TEST_PUSHED": str(pushed)})
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    assert pushed.read_text() == "weights"
    assert aws_cli.read_text().splitlines() == [
        f"autoscaling describe-auto-scaling-instances --region us-east-1 --instance-ids {INSTANCE_ID} "
        "--query AutoScalingInstances[0].AutoScalingGroupName --output text",
        f"autoscaling complete-lifecycle-action --region us-east-1 --auto-scaling-group-name {GROUP} "
        f"--lifecycle-hook-name {DRAIN_HOOK} --instance-id {INSTANCE_ID} --lifecycle-action-result CONTINUE",
        "pushed"]


class Dcgm(http.server.BaseHTTPRequestHandler):
    """A DCGM exporter of a two-GPU node."""

    def do_GET(self):
        body = (b'# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n'
                b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 80\nDCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b"} 91\n'
                b'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a"} 1000\n')
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_the_gpu_publisher_sends_the_mean_utilisation_the_policy_scales_on(local_node, aws_cli, cloud):  # noqa: F811
    server = _server(Dcgm)
    try:
        root, entry, env, plan = local_node(cloud=cloud, region="us-east-1", gpus=2,
                                            dcgm_exporter_port=server.server_port,
                                            gpu_metric_namespace="gpufleet/c-0123abcd")
        result = run([entry.parent / "gpufleet-gpu-metric"], root, env)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    if cloud != "aws":
        assert not aws_cli.exists()
        return
    assert aws_cli.read_text().splitlines() == [
        "cloudwatch put-metric-data --region us-east-1 --namespace gpufleet/c-0123abcd "
        f"--metric-name {GPU_METRIC['metric_name']} --dimensions Cluster={plan.identity} --unit {GPU_METRIC['unit']} "
        "--value 85.5"]


class WarmPoolImds(Imds):
    """IMDSv2 of a warm-pool instance: Warmed:Running until `ready` exists, then InService."""

    def do_GET(self):
        if self.path.endswith("/autoscaling/target-lifecycle-state") and self.headers.get(TOKEN_HEADER) == "tok":
            return self._answer(200, b"InService" if self.ready.exists() else b"Warmed:Running")
        super().do_GET()


def test_a_warm_pool_instance_waits_until_the_group_puts_it_in_service(local_node, tmp_path):  # noqa: F811
    ready = tmp_path / "test/in-service"
    server = _server(type("Handler", (WarmPoolImds,), {"ready": ready}))
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        root, entry, env, _ = local_node(role="worker", cloud="aws", region="us-east-1",
                                         metadata_url=f"{url}/latest/meta-data",
                                         imds_token_url=f"{url}/latest/api/token", imds_token_header=TOKEN_HEADER,
                                         spot_poll_s=0.2)
        waiting = subprocess.Popen([str(entry), "wait-in-service"], env={"GPUFLEET_ROOT": str(root), **env},
                                   stderr=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=2)  # still warming: the gate (and the job) would not start
        ready.parent.mkdir(parents=True, exist_ok=True)
        ready.touch()
        _, stderr = waiting.communicate(timeout=20)
    finally:
        server.shutdown()
    assert waiting.returncode == 0, stderr
    assert "in the warm pool (Warmed:Running)" in stderr and "in service: starting the gate" in stderr
