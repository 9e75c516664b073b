"""`fleet health`: the last results of a local cluster's nodes read from fake node roots the health package wrote,
a cloud stack's read from a Prometheus API stand-in serving the same package's textfile metrics, and clean errors."""

from __future__ import annotations

import http.server
import json
import re
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cloud-init"))

from health.result import Check, Report, judge, prometheus, write

from fleet.cli import main
from fleet.health_command import RESULTS
from here.local import layout

HEALTHY = [Check("matmul", "gpu0", 731.0, "TFLOP/s", 593.4, ">=", True, "bf16 8192^3"),
           Check("pcie-width", "gpu0", 16.0, "lanes", 16.0, ">=", True),
           Check("dcgm", "level1", None, "", None, "skip", True, "dcgmi is not installed")]
SLOW = [Check("matmul", "gpu3", 412.3, "TFLOP/s", 593.4, ">=", False, "bf16 8192^3"), *HEALTHY[1:]]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """rich wraps to the terminal: a wide one keeps each failed check on one line for the assertions."""
    monkeypatch.setenv("COLUMNS", "250")


def local_stack(tmp_path: Path, monkeypatch, nodes: int = 2) -> tuple[Path, layout.Layout]:
    monkeypatch.setattr(layout, "STATE_ROOT", tmp_path / "state")
    path = tmp_path / "Pulumi.health-local.yaml"
    body = {"cloud": "local", "instanceType": "cpu", "nodes": nodes, "network": {"vpcCidr": "10.81.0.0/24"}}
    path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": body}}))
    from fleet.stacks import resolve, spec_and_plan

    return path, layout.layout(spec_and_plan(resolve(None, str(path)))[1])


def _fleet(capsys, *args: str) -> tuple[int, str, str]:
    try:
        code = main(["health", *args])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_local_nodes_show_their_last_gate_and_acceptance(tmp_path, monkeypatch, capsys):
    path, lay = local_stack(tmp_path, monkeypatch)
    head, worker = lay.nodes
    write(Report("gate", "head", "light", True, 1.7e9, 41.0, HEALTHY), head.root / RESULTS / "gate.json", None, None)
    write(Report("gate", "worker-1", "light", False, 1.7e9, 43.0, SLOW), worker.root / RESULTS / "gate.json", None,
          None)
    accept = [Check("acceptance-node", "node1", 3.2, "GB/s", 10.0, ">=", False, "worker (10.81.0.11): best pair")]
    write(Report("acceptance", "node1", "light", False, 1.7e9, 9.0, accept), worker.root / RESULTS / "acceptance.json",
          None, None)

    code, out, _ = _fleet(capsys, "--stack-file", str(path), "--json")
    document = json.loads(out)
    assert code == 1 and not document["ok"] and document["source"] == "node roots"
    nodes = {n["node"]: n for n in document["nodes"]}
    assert nodes["head"]["gate"]["ok"] and nodes["head"]["acceptance"] is None
    assert nodes["worker-1"]["gate"]["checks"][0]["figure"] == 412.3 and not nodes["worker-1"]["acceptance"]["ok"]

    code, out, _ = _fleet(capsys, "--stack-file", str(path))
    assert code == 1
    assert "matmul gpu3: 412.3 TFLOP/s (needs >= 593.4)" in out and "acceptance-node node1: 3.2 GB/s" in out
    assert re.search(r"head\s+│ ok", out) and re.search(r"worker-1\s+│ FAILED", out)
    _, every, _ = _fleet(capsys, "--stack-file", str(path), "--checks")
    assert "head: every check" in every and "pcie-width" in every and "dcgmi is not installed" in every


def _acceptance(me: int, slow: int, nodes: int) -> Report:
    """Node ``me``'s acceptance of ``nodes`` nodes of which ``slow`` is slow: the world without a baseline (reported,
    not judged), every ring pair and every node's best pair against the limit."""
    figure = {n: 1.0 if n == slow else 10.0 for n in range(nodes)}
    rows = [judge("acceptance-world", "world", 3.0, "GB/s", None, ">=", "busbw over 3 nodes")]
    rows += [judge("acceptance-pair", f"node{a}+node{(a + 1) % nodes}", min(figure[a], figure[(a + 1) % nodes]),
                   "GB/s", 5.0) for a in range(nodes)]
    rows += [judge("acceptance-node", f"node{n}", figure[n], "GB/s", 5.0, ">=", "best pair") for n in range(nodes)]
    return Report("acceptance", f"node{me}", "light", me != slow, 1.7e9, 9.0, rows)


def test_failed_checks_lists_only_the_rows_that_failed_that_node(tmp_path, monkeypatch, capsys):
    path, lay = local_stack(tmp_path, monkeypatch, nodes=3)
    for rank, node in enumerate(lay.nodes):
        write(Report("gate", node.name, "light", True, 1.7e9, 40.0, HEALTHY), node.root / RESULTS / "gate.json", None,
              None)
        write(_acceptance(rank, 2, 3), node.root / RESULTS / "acceptance.json", None, None)
    code, out, _ = _fleet(capsys, "--stack-file", str(path))
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if "│" in line]
    failed = {row[0]: row[-1] for row in cells if row[0]}
    assert code == 1
    assert failed["head"] == "" and failed["worker-1"] == "", (
        "a node the acceptance passed has nothing under failed checks, not the named node's rows")
    named = out.split("worker-2", 1)[1]
    assert "acceptance-node node2: 1 GB/s (needs >= 5)" in named and "acceptance-pair node1+node2" in named
    assert "acceptance-world" not in out and "acceptance-node node0" not in out and "matmul" not in out, (
        "rows with no threshold or that passed are not failures")
    _, every, _ = _fleet(capsys, "--stack-file", str(path), "--checks")
    tables = every.split("head: every check", 1)[1]
    assert tables.count("acceptance-world") == 3 and tables.count("acceptance-pair") == 9, "every row in the tables"


def test_a_cluster_whose_nodes_all_passed_exits_0(tmp_path, monkeypatch, capsys):
    path, lay = local_stack(tmp_path, monkeypatch)
    for node in lay.nodes:
        write(Report("gate", node.name, "deep", True, 1.7e9, 300.0, HEALTHY), node.root / RESULTS / "gate.json", None,
              None)
    code, out, _ = _fleet(capsys, "--stack-file", str(path), "--json")
    assert code == 0 and json.loads(out)["ok"]


def test_nodes_without_a_result_are_shown_and_fail(tmp_path, monkeypatch, capsys):
    path, _ = local_stack(tmp_path, monkeypatch)
    code, out, _ = _fleet(capsys, "--stack-file", str(path))
    assert code == 1 and out.count("no result") == 4


class FakePrometheus(http.server.BaseHTTPRequestHandler):
    """/api/v1/query for one metric name, answered from node-exporter textfiles as Prometheus would: each sample
    with its labels plus the scraped target's `instance`."""

    textfiles: dict[str, str] = {}

    def do_GET(self):
        metric = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["query"][0]
        result = []
        for instance, text in self.textfiles.items():
            for name, labels, value in re.findall(r"^(\w+)\{(.*)\} (\S+)$", text, re.M):
                if name == metric:
                    pairs = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
                    result.append({"metric": {"__name__": name, **pairs, "instance": instance, "job": "node"},
                                   "value": [1.7e9, value]})
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def prometheus_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_cloud_stack_reads_the_nodes_metrics_from_prometheus(prometheus_url, capsys):
    FakePrometheus.textfiles = {
        "10.0.1.5:9100": prometheus(Report("gate", "ip-10-0-1-5", "light", True, 1.7e9, 40.0, HEALTHY)),
        "10.0.1.6:9100": prometheus(Report("gate", "ip-10-0-1-6", "light", False, 1.7e9, 44.0, SLOW)),
    }
    code, out, _ = _fleet(capsys, "--stack", "aws-p5", "--prometheus", prometheus_url, "--json")
    document = json.loads(out)
    assert code == 1 and document["source"] == prometheus_url
    nodes = {n["node"]: n for n in document["nodes"]}
    assert set(nodes) == {"10.0.1.5:9100", "10.0.1.6:9100"} and nodes["10.0.1.5:9100"]["gate"]["ok"]
    slow = nodes["10.0.1.6:9100"]["gate"]
    assert not slow["ok"] and slow["duration_s"] == 44.0 and slow["level"] == "light"
    matmul = next(r for r in slow["checks"] if r["check"] == "matmul")
    assert matmul == {"check": "matmul", "subject": "gpu3", "unit": "TFLOP/s", "figure": 412.3, "threshold": 593.4,
                      "rule": ">=", "ok": False, "detail": ""}
    code, out, _ = _fleet(capsys, "--stack", "aws-p5", "--prometheus", prometheus_url)
    assert code == 1 and "matmul gpu3: 412.3 TFLOP/s (needs >= 593.4)" in out


@pytest.mark.parametrize(("args", "words"), [
    (["--stack", "aws-p5"], "--prometheus http://10.0.0.10:9090"),
    (["--stack", "aws-p5", "--prometheus", "http://127.0.0.1:9"], "--prometheus http://127.0.0.1:9:"),
    (["--stack", "no-such-stack"], "no-such-stack"),
])
def test_bad_input_exits_2_with_the_fix(args, words, capsys):
    code, _, err = _fleet(capsys, *args)
    assert code == 2 and words in err and "Traceback" not in err
