"""The nodes' reachability check before the process group forms, over a real TCPStore on this machine. Node 1 is
played by the test (its published listener, its result); node 0 runs the check. Both nodes' runs together are in the
two-node training tests (test_training_multinode.py), which go through this check on every start."""

from __future__ import annotations

import json
import socket
import time

import pytest
import torch.distributed as dist

from training import preflight
from training.preflight import PREFIX, MissingPeers, UnreachablePeers, check_node_mesh


@pytest.fixture
def store():
    return dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)


def _node_one(store, port: int) -> None:
    store.set(f"{PREFIX}/addr/1", f"127.0.0.1:{port}")
    store.set(f"{PREFIX}/result/1", json.dumps([]))


def test_a_reachable_node_passes_for_the_leader_and_the_other_ranks(store):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        _node_one(store, listener.getsockname()[1])
        check_node_mesh(store, 0, 2, True, "127.0.0.1")
    check_node_mesh(store, 0, 2, False, "127.0.0.1")
    assert json.loads(store.get(f"{PREFIX}/result/0")) == []


def test_an_unreachable_node_is_named_with_its_address_and_port_on_every_rank(store):
    with socket.socket() as bound:  # bound, not listening: connecting is refused, and the port stays taken
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        _node_one(store, port)
        with pytest.raises(UnreachablePeers) as leader:
            check_node_mesh(store, 0, 2, True, "127.0.0.1")
    with pytest.raises(UnreachablePeers) as other_rank:
        check_node_mesh(store, 1, 2, False, "127.0.0.1")
    message = str(leader.value)
    assert f"node 0 (127.0.0.1) -> node 1 at 127.0.0.1:{port}: refused" in message
    assert "ncclPortRange" in message and str(other_rank.value) == message


@pytest.mark.parametrize("leader", [True, False])
def test_a_node_that_left_after_the_round_formed_fails_the_round_by_name_within_the_bound(store, monkeypatch,
                                                                                         leader):
    """Node 2 never comes (the acceptance named it and stopped its agent): the others fail in JOIN_WAIT_S, naming
    it, instead of waiting the store's 300 s."""
    monkeypatch.setattr(preflight, "JOIN_WAIT_S", 1.0)
    if not leader:
        store.set(f"{PREFIX}/result/0", json.dumps([]))  # this node's leader has probed
    with socket.create_server(("127.0.0.1", 0)) as listener:
        _node_one(store, listener.getsockname()[1])
        started = time.monotonic()
        with pytest.raises(MissingPeers) as missing:
            check_node_mesh(store, 0, 3, leader, "127.0.0.1")
    assert time.monotonic() - started < 10
    assert "node 2 of this rendezvous round did not" in str(missing.value) and "within 1 s" in str(missing.value)


def test_one_node_checks_nothing():
    check_node_mesh(None, 0, 1, True, "127.0.0.1")
