"""The local cluster end to end: `fleet up` on real network namespaces with the plan's nftables firewall, the node
scripts booting each node from its user-data, and the bundled job trained across them; then the faults it must
survive, the loopback fallback without iproute2 and nftables, and a failed or crashed `up` that the next one clears.
The namespace tests need root (CI runs them as root); the rest run anywhere."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from components.realizers.stock import SOLD_OUT
from fleet.stacks import resolve, spec_and_plan
from here.local import cloudconfig, firewall, host, layout, network, progress
from plan.model import FirewallRule

ROOT = Path(__file__).resolve().parents[2]
FLEET = [sys.executable, "-m", "fleet"]
JOB = {"model": "tiny", "seqLen": 128, "globalBatch": 16, "microBatch": 4, "logEvery": 1}
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces and nftables "
                                                           "(CI runs tests/local as root)")


def stack(tmp_path: Path, name: str, **cluster) -> Path:
    body = {"cloud": "local", "instanceType": "cpu", "nodes": 2, "network": {"vpcCidr": "10.77.0.0/24"}} | cluster
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": body}}))
    return path


def fleet(*args: str, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FLEET, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def path_without(folder: Path, *hidden: str) -> str:
    """A PATH of one folder with a link to every command on this PATH but the hidden ones: this machine as if the
    packages that bring them were not installed."""
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for tool in Path(directory).glob("*") if Path(directory).is_dir() else ():
            link = folder / tool.name
            if tool.name not in hidden and not link.exists() and os.access(tool, os.X_OK):
                link.symlink_to(tool)
    return str(folder)


class Cluster:
    """One local cluster for a test: `up` in the background or in the foreground, always `down` at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lay = layout.layout(spec_and_plan(resolve(None, str(path)))[1])
        self.proc: subprocess.Popen | None = None

    def up(self, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return fleet("up", "--stack-file", str(self.path), "--json", *extra, env=env)

    def start(self, env: dict | None = None) -> None:
        self.proc = subprocess.Popen([*FLEET, "up", "--stack-file", str(self.path), "--json"], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def finish(self, timeout: float = 240) -> dict:
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, err
        return json.loads(out.splitlines()[-1]) | {"stderr": err}

    def wait_for_step(self, step: int, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.steps() and self.steps()[-1] >= step:
                return
            assert self.proc.poll() is None, self.proc.communicate()[1]
            time.sleep(0.2)
        raise AssertionError(f"no step {step} after {timeout} s")

    def steps(self) -> list[int]:
        found = []
        for path in (self.lay.directory / "nodes").glob(f"*/{progress.METRICS}/*/metrics.jsonl"):
            found += [json.loads(line)["step"] for line in path.read_text().splitlines() if line.strip()]
        return found

    def wait_for_log(self, node: str, text: str, timeout: float) -> None:
        deadline, log = time.time() + timeout, self.lay.node(node).log
        while time.time() < deadline:
            if log.is_file() and text in log.read_text(errors="replace"):
                return
            assert self.proc.poll() is None, self.proc.communicate()[1]
            time.sleep(0.2)
        raise AssertionError(f"no '{text}' in {log} after {timeout} s")

    def job_runs(self, node: str) -> list[dict]:
        """The summary line rank 0 printed at the end of each run of the job (each elastic incarnation) on node."""
        lines = self.lay.node(node).log.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith('{"steps_completed"')]

    def drill(self, fault: str, node: str) -> None:
        result = fleet("drill", "--stack-file", str(self.path), fault, node)
        assert result.returncode == 0, result.stderr

    def down(self, *extra: str) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        fleet("down", "--stack-file", str(self.path), *extra)


@pytest.fixture
def cluster(tmp_path):
    made = []

    def make(name: str, **settings) -> Cluster:
        """The pid keeps two test runs on one machine (CI, a developer) out of each other's clusters."""
        made.append(Cluster(stack(tmp_path, f"{name}-{os.getpid()}", **settings)))
        return made[-1]

    yield make
    for item in made:
        item.down()


def netns() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def contiguous_accounting(segments: list[list[int]], total: int) -> list[int]:
    """The steps that count: each job incarnation's steps up to where the next one resumed."""
    counted: list[int] = []
    for index, (first, last) in enumerate(segments):
        end = segments[index + 1][0] - 1 if index + 1 < len(segments) else last
        counted += range(first, end + 1)
    return counted


# --- no root needed -------------------------------------------------------------------------------------------


def test_ruleset_drops_by_default_and_opens_the_plan_rules():
    rules = (FirewallRule("ingress", "tcp", 50000, 51000, "self", "NCCL"),
             FirewallRule("ingress", "tcp", 29400, 29400, "self", "rendezvous"),
             FirewallRule("ingress", "tcp", 22, 22, "192.0.2.0/24", "ssh"),
             FirewallRule("ingress", "all", 0, 65535, "self", "all"),
             FirewallRule("egress", "tcp", 443, 443, "0.0.0.0/0", "https"))
    text = firewall.ruleset(rules, ("10.0.0.10", "10.0.0.11"))
    assert "policy drop;" in text and 'iif "lo" accept' in text and "ct state established,related accept" in text
    assert "elements = { 10.0.0.10, 10.0.0.11 }" in text
    assert 'ip saddr @members tcp dport 50000-51000 accept comment "NCCL"' in text
    assert 'ip saddr @members tcp dport 29400 accept comment "rendezvous"' in text
    assert 'ip saddr 192.0.2.0/24 tcp dport 22 accept comment "ssh"' in text
    assert 'ip saddr @members accept comment "all"' in text
    assert "443" not in text, "egress rules have nothing to restrict on a bridge with no way out"


def test_cloud_config_writes_files_with_encodings_and_instance_data(tmp_path):
    packed = base64.b64encode(gzip.compress(b"zipped")).decode()
    user_data = "#cloud-config\n" + yaml.safe_dump({"write_files": [
        {"path": "/opt/gpufleet/bin/gpufleet-node", "permissions": "0755", "content": "#!/bin/sh\n"},
        {"path": "/etc/gpufleet/node.env", "content": "URL='http://{metadata}/spot'\n"},
        {"path": "/etc/a", "encoding": "gz+b64", "content": packed},
        {"path": "/etc/b", "encoding": "b64", "content": base64.b64encode(b"plain").decode()},
        {"path": "/etc/b", "append": True, "content": "+more"},
    ]})
    encoded = base64.b64encode(gzip.compress(user_data.encode()))
    entry = cloudconfig.execute(encoded, tmp_path, {"metadata": "10.0.0.1:8001"})
    assert entry == tmp_path / "opt/gpufleet/bin/gpufleet-node" and os.access(entry, os.X_OK)
    assert (tmp_path / "etc/gpufleet/node.env").read_text() == "URL='http://10.0.0.1:8001/spot'\n"
    assert (tmp_path / "etc/a").read_bytes() == b"zipped"
    assert (tmp_path / "etc/b").read_bytes() == b"plain+more"


def test_layout_puts_the_head_at_the_plan_address(tmp_path):
    plan = spec_and_plan(resolve(None, str(stack(tmp_path, "lt-layout", nodes={"min": 1, "desired": 2, "max": 3},
                                                job={"microBatch": 4, "globalBatch": 48}))))[1]
    lay = layout.layout(plan)
    assert [(n.name, n.address) for n in lay.nodes] == [("head", plan.network.head_address),
                                                         ("worker-1", plan.network.node_addresses(2)[1])]
    assert lay.members == plan.network.node_addresses(3)
    assert lay.metadata_address not in lay.members


@pytest.mark.parametrize("root", [True, False])
def test_host_says_what_is_missing_for_namespaces_and_the_command_that_adds_it(tmp_path, monkeypatch, root):
    monkeypatch.setattr(os, "geteuid", lambda: 0 if root else 1000)
    monkeypatch.setenv("PATH", path_without(tmp_path / "bin", "nft"))
    sudo = "" if root else "sudo "
    lacking = host.namespaces()
    assert lacking.what == ("" if root else "not running as root, and ") + "nftables (`nft`) is not installed"
    assert lacking.fix.startswith(f"`{sudo}apt-get install -y nftables` adds it")
    monkeypatch.setenv("PATH", path_without(tmp_path / "all", "ip", "nft", "pgrep", "pkill"))
    assert "iproute2 (`ip`), nftables (`nft`) are not installed" in host.namespaces().what
    assert host.can_remove_namespaces() is False
    assert host.node_tools().what == "procps (`pgrep`, `pkill`) is not installed"
    assert host.node_tools().fix == f"`{sudo}apt-get install -y procps` adds it"


def test_host_with_everything_installed(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert host.namespaces() is None and host.node_tools() is None and host.can_remove_namespaces()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert host.namespaces().what == "not running as root" and not host.can_remove_namespaces()


def test_up_without_curl_names_it_and_the_command_that_adds_it_and_leaves_nothing(cluster, tmp_path):
    c = cluster("lt-nocurl")
    result = c.up(env=os.environ | {"PATH": path_without(tmp_path / "bin", "curl")})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "curl (`curl`) is not installed" in result.stderr and "apt-get install -y curl` adds it" in result.stderr
    assert not c.lay.directory.exists()


def test_without_iproute2_and_nftables_the_cluster_runs_on_loopback_and_says_why(cluster, tmp_path):
    """What a machine without those packages (or a user without root) gets: the same nodes and job on loopback, the
    node scripts included, with one message that names what is missing and the command that adds it."""
    port = 29500 + os.getpid() % 400  # loopback is shared: a port of its own for this run's rendezvous
    c = cluster("lt-loop", network={"vpcCidr": "10.77.0.0/24", "rendezvousPort": port}, job=JOB | {"steps": 10})
    result = c.up(env=os.environ | {"PATH": path_without(tmp_path / "bin", "ip", "nft")})
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["mode"], summary["nodes"], summary["ranks"], summary["steps_completed"]) == ("loopback", 2, 4, 10)
    notes = [line for line in result.stderr.replace("\n", " ").split("!") if "loopback" in line]
    assert len(notes) == 1 and "iproute2 (`ip`), nftables (`nft`) are not installed" in notes[0], result.stderr
    assert "apt-get install -y iproute2 nftables` adds them" in notes[0], result.stderr
    for node in c.lay.nodes:
        assert "command not found" not in node.log.read_text(), node.log.read_text()


def test_up_refuses_a_cloud_stack():
    result = fleet("up", "--stack", "aws-p5")
    assert result.returncode == 2
    assert "local stacks only" in result.stderr and "Traceback" not in result.stderr


# --- end to end, as root --------------------------------------------------------------------------------------


@needs_root
def test_first_candidate_sold_out_the_cluster_comes_up_on_the_next_and_says_so(cluster):
    """The stock-out drill: the switch sells the stack's own type out; `up` trains on its candidate's nodes."""
    c = cluster("lt-stock", candidates=[{"instanceType": "cpu-b"}], job=JOB | {"steps": 5})
    result = c.up(env=os.environ | {SOLD_OUT: "cpu"})
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["instance_type"], summary["nodes"], summary["steps_completed"]) == ("cpu-b", 2, 5)
    err = " ".join(result.stderr.split())
    assert "capacity: cpu in local on demand: no: cpu is sold out in local (GPUFLEET_SOLD_OUT)" in err, err
    assert "capacity: cpu-b in local on demand: chosen" in err, err
    for node in c.lay.nodes:
        assert "GF_INSTANCE_TYPE='cpu-b'" in (node.root / "etc/gpufleet/node.env").read_text()


@needs_root
def test_default_run_trains_across_two_namespaces_and_down_removes_everything(cluster):
    c = cluster("lt-default", job=JOB | {"steps": 40, "checkpointEvery": 20})
    result = c.up()
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["nodes"], summary["ranks"], summary["steps_completed"]) == (2, 4, 40)
    assert summary["checkpoints"] == [20, 40] and summary["final_loss"] < 5.5 and summary["tokens_per_s"] > 0
    assert summary["seconds_to_first_step"] < 60 and summary["segments"] == [[1, 40]]
    head = c.lay.nodes[0]
    rules = subprocess.run(network.inside(head.namespace, "nft", "list", "ruleset"), capture_output=True,
                           text=True).stdout
    assert "policy drop" in rules and "10.77.0.10" in rules
    status = json.loads(fleet("status", "--stack-file", str(c.path), "--json").stdout)
    assert status["phase"] == "finished" and status["last_step"] == 40
    again = c.up()
    assert again.returncode == 2 and "already up" in again.stderr
    assert fleet("down", "--stack-file", str(c.path)).returncode == 0
    assert not {c.lay.bridge_namespace, *(n.namespace for n in c.lay.nodes)} & netns()
    assert not c.lay.directory.exists()
    assert fleet("down", "--stack-file", str(c.path)).returncode == 0, "down is idempotent"


@needs_root
def test_spot_notice_the_node_leaves_the_job_goes_on_and_a_fresh_node_rejoins(cluster):
    """The spot path end to end, then what the scaling group does next: the worker checkpoints and leaves, the job
    goes on on the head alone, a fresh machine for the worker boots and joins the running job (as a replacement or a
    scale-out node does), and the job re-forms on both nodes and completes without losing or repeating a step."""
    steps = 700
    c = cluster("lt-spot", nodes={"min": 1, "desired": 2, "max": 2}, market={"spotPercent": 100},
                job=JOB | {"steps": steps, "checkpointEvery": 100})
    c.start()
    c.wait_for_step(10)
    c.drill("spot", "worker-1")
    c.wait_for_log("head", "now 2)", timeout=120)  # "resumed from ... (step N, written by 4 ranks, now 2)"
    c.wait_for_step(max(c.steps()) + 5)
    c.drill("rejoin", "worker-1")
    summary = c.finish()
    events = summary["events"]
    assert any("worker-1 left after its spot notice" in e for e in events), events
    assert any("worker-1 booted again" in e for e in events), events
    assert (summary["steps_completed"], summary["nodes"], summary["ranks"]) == (steps, 2, 4), summary
    runs = c.job_runs("head")
    worlds = [run["world_size"] for run in runs]
    assert worlds[0] == 4 and worlds[-1] == 4 and 2 in worlds, runs
    assert all(run["steps_this_run"] > 0 for run in runs if run["world_size"] == 2), "the head trained alone"
    assert sum(run["steps_this_run"] for run in runs) == steps, f"a step lost or repeated: {runs}"
    assert sorted(c.steps()) == list(range(1, steps + 1)), "every step logged once"
    assert summary["resumed_from_step"] == runs[-2]["steps_completed"], "the re-formed job went on from the stop"
    assert summary["segments"] == [[1, steps]], summary["segments"]


@needs_root
def test_corrupt_latest_checkpoint_resume_falls_back_to_the_previous_one(cluster):
    c = cluster("lt-corrupt", job=JOB | {"steps": 30, "checkpointEvery": 10})
    first = c.up()
    assert first.returncode == 0, first.stderr
    c.down("--keep-bucket")
    latest = c.lay.bucket / "checkpoints" / "step_00000030" / "state.pt"
    latest.write_bytes(latest.read_bytes()[:-100])
    second = c.up()
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout)
    assert summary["resumed_from_step"] == 20 and summary["steps_completed"] == 30
    head_log = (c.lay.directory / "nodes" / "head.log").read_text()
    assert "skipping checkpoint" in head_log and "step_00000030" in head_log


@needs_root
@pytest.mark.parametrize("closed", ["head:29400", "head:50000-51000", "worker-1:50000-51000"])
def test_closed_port_fails_fast_naming_the_node_and_port(cluster, closed):
    node, ports = closed.split(":")
    c = cluster(f"lt-fw{node[0]}{ports[:2]}", network={"vpcCidr": "10.77.0.0/24", "ncclPortRange": "50000-51000"},
                job=JOB | {"steps": 20})
    started = time.time()
    result = c.up(f"--close-port={closed}")
    assert result.returncode == 1 and time.time() - started < 60
    assert "Traceback" not in result.stderr.splitlines()[0]
    if node == "head":  # the worker's health gate probes the head's ports
        port = ports.split("-")[0]
        assert "worker-1" in result.stderr and f"10.77.0.10:{port}" in result.stderr, result.stderr
    else:  # the job's preflight: the head cannot reach the worker's listener in the pinned range
        assert "worker-1 = 10.77.0.11" in result.stderr, result.stderr
        assert re.search(r"-> node 1 at 10\.77\.0\.11:(50\d\d\d|51000): no answer", result.stderr), result.stderr


@needs_root
def test_a_failed_up_removes_its_network_and_the_next_up_just_runs(cluster):
    c = cluster("lt-again", job=JOB | {"steps": 10})
    failed = c.up("--close-port=head:29400")
    assert failed.returncode == 1, failed.stderr
    assert not {c.lay.bridge_namespace, *(n.namespace for n in c.lay.nodes)} & netns(), "the network stays behind"
    status = json.loads(fleet("status", "--stack-file", str(c.path), "--json").stdout)
    assert status["phase"] == "failed" and "unreachable" in status["message"]
    assert all(node["processes"] == 0 for node in status["nodes"])
    again = c.up()
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["steps_completed"] == 10
    assert "an earlier run of cluster" in again.stderr and "ended failed" in again.stderr


@needs_root
def test_a_crashed_up_blocks_nothing_but_a_live_one_is_left_alone(cluster):
    """`fleet up` killed mid-run leaves its namespaces and node processes behind; while it runs a second `up` is
    refused, once it is gone the next `up` removes what it left and runs the job."""
    c = cluster("lt-crash", job=JOB | {"steps": 300})
    c.start()
    c.wait_for_step(3)
    live = c.up()
    assert live.returncode == 2 and f"already up (running, `fleet up` is process {c.proc.pid})" in live.stderr
    c.proc.kill()
    c.proc.communicate()
    left = {c.lay.bridge_namespace, *(n.namespace for n in c.lay.nodes)}
    assert left <= netns(), "a crash leaves the network behind"
    c.path.write_text(c.path.read_text().replace("steps: 300", "steps: 10"))
    again = c.up()
    assert again.returncode == 0, again.stderr
    assert "ended running" in again.stderr and "namespace" in again.stderr
    assert json.loads(again.stdout)["steps_completed"] == 10


@needs_root
@pytest.mark.parametrize("fault", ["kill", "cut"])
def test_a_lost_worker_costs_at_most_one_step_and_seconds(cluster, fault):
    """Issue 33: the worker killed or cut off the network; the head's job re-forms without it in seconds and goes on
    from the step its own memory keeps (no checkpoint read), so at most the step in flight is trained again."""
    steps = 120
    c = cluster(f"lt-rc{fault[0]}", nodes={"min": 1, "desired": 2, "max": 2},
                job=JOB | {"steps": steps, "checkpointEvery": 50})
    c.start()
    c.wait_for_step(30)
    before, fault_at = max(c.steps()), time.time()
    c.drill(fault, "worker-1")
    c.wait_for_log("head", "recovery: going on from the memory", timeout=60)
    c.wait_for_step(before + 2, timeout=60)
    summary = c.finish()
    assert (summary["steps_completed"], summary["ranks"]) == (steps, 2), summary
    history = progress.steps(c.lay)
    before_fault = [s for s in history if s.time <= fault_at][-1:]
    after = [s for s in history if s.time > fault_at]
    # the re-formed job's first step ends the longest pause after the fault
    resumed = max(zip(before_fault + after, after, strict=False), key=lambda pair: pair[1].time - pair[0].time)[1]
    assert resumed.time - fault_at < 30, f"{resumed.time - fault_at:.1f} s from the fault to the next step"
    counted = [s.step for s in history]
    assert sorted(set(counted)) == list(range(1, steps + 1)), "every step trained"
    assert len(counted) - len(set(counted)) <= 1, "at most the step in flight trained again"
    assert summary["resumed_from_step"] >= before - 1, "from the last finished step, not the checkpoint at 50"
