"""When the job's preflight finds peers that cannot reach each other, `fleet up` fails, naming the nodes, but first
lets every node write its acceptance verdict (or waits out the grace), so `fleet health` shows each node's."""

from __future__ import annotations

import dataclasses

import pytest

from fleet.stacks import resolve, spec_and_plan
from here.local import cluster, progress
from here.local.errors import LocalError
from here.local.layout import layout

PREFLIGHT = "error: gpufleet preflight: nodes cannot reach each other\n  node 1 (10.77.0.11): unreachable\n"


@pytest.fixture
def run(tmp_path):
    lay = layout(spec_and_plan(resolve("local", None))[1])
    nodes = tuple(dataclasses.replace(n, root=tmp_path / "nodes" / n.name) for n in lay.nodes)
    for node in nodes:
        node.root.mkdir(parents=True)
    lay = dataclasses.replace(lay, directory=tmp_path, nodes=nodes)
    nodes[1].log.write_text(PREFLIGHT)
    return cluster._Run(lay=lay, plan=None, st=None, namespaced=True, metadata_address="")


def verdict(node) -> None:
    path = node.root / progress.RESULTS / "acceptance.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")


def test_the_cluster_stays_up_while_a_node_has_not_written_its_verdict(run):
    verdict(run.lay.nodes[1])
    cluster._raise_if_unreachable(run)
    assert run.unreachable_since is not None


def test_it_fails_naming_the_nodes_once_every_verdict_is_written(run):
    for node in run.lay.nodes:
        verdict(node)
    with pytest.raises(LocalError, match=r"cannot form the job \(head = 10\.77\.0\.10, worker-1 = 10\.77\.0\.11\)"):
        cluster._raise_if_unreachable(run)


def test_it_fails_after_the_grace_without_the_missing_verdicts(run):
    cluster._raise_if_unreachable(run)
    run.unreachable_since -= cluster.VERDICTS_GRACE_S
    with pytest.raises(LocalError, match="cannot form the job"):
        cluster._raise_if_unreachable(run)
