"""Before the process group forms: can every node reach every other node on the ports the collectives use?

A firewall that drops the NCCL / gloo port range on one node makes ``init_process_group`` hang for its whole timeout
(10 to 30 minutes) and then fail without naming the node; the health gate cannot see it, since a node cannot test
its own inbound rules. Here the first rank of each node listens on a port from the node's ephemeral range (where the
collectives' sockets come from; gpufleet pins it to the stack's ``ncclPortRange``), publishes the address in the
job's store, and connects to every other node's listener with a short timeout. A node that cannot be reached is
named, with the address and port, in seconds. Nodes, not ranks, are checked: the ranks of a node share its firewall.
"""

from __future__ import annotations

import json
import socket
import time
from datetime import timedelta

PREFIX = "gpufleet/preflight"
CONNECT_TIMEOUT_S = 3.0
READ_WAIT_S = 30.0
JOIN_WAIT_S = 120.0
"""How long a node waits for the other nodes of its rendezvous round to reach the job's store. A node that left after
the round formed (the cluster acceptance named it and stopped its agent, or it was lost) then fails the round in this
time, by name, where the store's own timeout is 300 s; their agents re-form the world without it."""


class MissingPeers(RuntimeError):
    """Nodes of this rendezvous round did not reach the job's store within JOIN_WAIT_S; the message names them."""


def wait_for_nodes(store, keys: list[str], what: str) -> None:
    """``store.wait(keys)``, bounded by JOIN_WAIT_S; MissingPeers naming the nodes whose key never came (key i is
    node i's)."""
    try:
        store.wait(keys, timedelta(seconds=JOIN_WAIT_S))
    except RuntimeError:  # torch's DistStoreError: the wait timed out
        missing = [key.rsplit("/", 1)[1] for key in keys if not store.check([key])]
        nodes = f"node{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        raise MissingPeers(f"gpufleet preflight: {nodes} of this rendezvous round did not {what} within "
                           f"{JOIN_WAIT_S:.0f} s (left after the round formed: named by the cluster acceptance, or "
                           "lost); this round fails so the nodes left re-form the job") from None


class UnreachablePeers(RuntimeError):
    """Some node could not open a connection to another node's listener; the message names both and the port, and
    ``failures`` holds them as data (from, from_address, to, target, why) for a caller that names the node itself."""

    def __init__(self, message: str, failures: list[dict]) -> None:
        super().__init__(message)
        self.failures = failures


def local_address(towards: str) -> str:
    """This host's address on the route to ``towards`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((towards, 9))
        return probe.getsockname()[0]


def _why(error: OSError) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer in {CONNECT_TIMEOUT_S:.0f} s (a firewall drops it)"
    if isinstance(error, ConnectionRefusedError):
        return "refused (a firewall rejects it)"
    return str(error)


def _probe(store, node: int, nodes: int, address: str) -> list[dict]:
    """Connect to every other node's published listener; the failures."""
    failures = []
    others = [other for other in range(nodes) if other != node]
    wait_for_nodes(store, [f"{PREFIX}/addr/{other}" for other in others], "publish its listener")
    for other in others:
        target = store.get(f"{PREFIX}/addr/{other}").decode()
        host, port = target.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as error:
            failures.append({"from": node, "from_address": address, "to": other, "target": target, "why": _why(error)})
    return failures


def check_node_mesh(store, node: int, nodes: int, leader: bool, master_addr: str, ranks: int = 0) -> None:
    """Raise UnreachablePeers on every rank if any node cannot connect to another (see the module docstring).

    ``store``: the job's store (every rank reaches it: it is on the head); ``node``: this node's index (torchrun's
    GROUP_RANK) of ``nodes``; ``leader``: this rank probes for its node (its first rank); the others wait. ``ranks``:
    how many ranks call this; with it, rank 0 (node 0's leader, whose process holds the job's store) raises only
    once every rank has read the failures, so no other rank loses the store mid-read and dies without naming them.
    """
    if nodes < 2:
        return
    results = [f"{PREFIX}/result/{n}" for n in range(nodes)]
    if leader:
        with socket.create_server(("", 0), backlog=nodes) as listener:
            address = local_address(master_addr)
            store.set(f"{PREFIX}/addr/{node}", f"{address}:{listener.getsockname()[1]}")
            store.set(results[node], json.dumps(_probe(store, node, nodes, address)))
            wait_for_nodes(store, results, "finish its probes")  # listen until every node has probed this one
    else:
        wait_for_nodes(store, results, "finish its probes")
    failures = [failure for key in results for failure in json.loads(store.get(key))]
    if failures and ranks:
        store.add(f"{PREFIX}/read", 1)  # this rank's last use of the store
        deadline = time.monotonic() + READ_WAIT_S
        while leader and node == 0 and store.add(f"{PREFIX}/read", 0) < ranks and time.monotonic() < deadline:
            time.sleep(0.05)
    if failures:
        lines = [
            f"  node {f['from']} ({f['from_address']}) -> node {f['to']} at {f['target']}: {f['why']}" for f in failures
        ]
        raise UnreachablePeers(
            "gpufleet preflight: nodes cannot reach each other on the collectives' port range:\n"
            + "\n".join(lines)
            + "\nOpen that range (the stack's network.ncclPortRange, or all ports when none is pinned) between the "
            "cluster's nodes in the receiving node's firewall and security group.",
            failures,
        )
