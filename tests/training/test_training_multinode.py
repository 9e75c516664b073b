"""Checkpoints without shared storage: two "nodes" on this machine, each with its own checkpoint directory.

Every node must hold every checkpoint, and a resume must start from the newest one any node holds, even where the
node that holds rank 0 lost it or a node joins with an empty disk.
"""

import hashlib
import io
import shutil

import pytest
import torch
from train_helpers import assert_same_params, final_params, summary, train, train_nodes

from training import checkpoint

COMMON = ["--steps", "6", "--global-batch", "4", "--micro-batch", "2", "--checkpoint-every", "2"]
NODE = [*COMMON, "--run-dir", "run", "--checkpoint-dir", "ckpt"]


def _assert_holds(root, steps):
    """``root`` holds valid checkpoints of exactly these steps (and no temporary directories)."""
    assert sorted(step for step, _ in checkpoint.checkpoint_dirs(root)) == steps
    for step in steps:
        assert checkpoint.verify(checkpoint.step_path(root, step)) is None
    assert not list(root.glob(".tmp_*"))


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """Two nodes that stopped after 4 of 6 steps, checkpoints at 2 and 4."""
    base = tmp_path_factory.mktemp("interrupted")
    nodes = [base / "node0", base / "node1"]
    for node in nodes:
        node.mkdir()
    train_nodes([*NODE, "--stop-after-steps", "4"], nodes)
    return nodes


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """Final parameters of the same 6 steps in one uninterrupted process."""
    run_dir = tmp_path_factory.mktemp("straight")
    train([*COMMON, "--run-dir", str(run_dir)])
    return final_params(run_dir / "checkpoints")


def _assert_same_bytes(nodes, steps):
    """The nodes' copies of a step are identical, so copies that several nodes push to one bucket may mix files
    (one node's manifest, another's state) and still verify."""
    for step in steps:
        copies = [checkpoint.step_path(node / "ckpt", step) / checkpoint.STATE for node in nodes]
        assert copies[0].read_bytes() == copies[1].read_bytes()


def test_every_node_holds_every_checkpoint(interrupted):
    for node in interrupted:
        _assert_holds(node / "ckpt", [2, 4])
    _assert_same_bytes(interrupted, [2, 4])


@pytest.mark.parametrize(
    ("damage", "held"),
    [
        pytest.param(
            lambda nodes: shutil.rmtree(nodes[0] / "ckpt/step_00000004"),
            [[2, 4, 6], [2, 4, 6]],
            id="rank0-node-lost-newest",
        ),
        pytest.param(lambda nodes: shutil.rmtree(nodes[1] / "ckpt"), [[2, 4, 6], [4, 6]], id="fresh-node"),
    ],
)
def test_resume_from_newest_any_node_holds(interrupted, straight, tmp_path, damage, held):
    nodes = [tmp_path / node.name for node in interrupted]
    for source, node in zip(interrupted, nodes, strict=True):
        shutil.copytree(source, node)
    damage(nodes)
    results = train_nodes(NODE, nodes)
    resumed = summary(results[0])
    assert resumed["resumed_from_step"] == 4 and resumed["steps_completed"] == 6
    assert "sent to the nodes without it" in results[0].stderr
    for node, steps in zip(nodes, held, strict=True):
        _assert_holds(node / "ckpt", steps)
        assert_same_params(final_params(node / "ckpt"), straight, atol=1e-5)
    _assert_same_bytes(nodes, [4, 6])


def test_writers_sharing_a_directory_leave_one_valid_copy(tmp_path):
    nodes = [tmp_path / "node0", tmp_path / "node1"]
    for node in nodes:
        node.mkdir()
    shared = tmp_path / "shared"
    run = [*COMMON, "--steps", "4", "--run-dir", "run", "--checkpoint-dir", str(shared)]
    train_nodes([*run, "--stop-after-steps", "2"], nodes)
    _assert_holds(shared, [2])
    results = train_nodes(run, nodes)
    resumed = summary(results[0])
    assert resumed["resumed_from_step"] == 2 and resumed["steps_completed"] == 4
    assert "sent to the nodes without it" not in results[0].stderr  # each node read "its own" copy
    _assert_holds(shared, [2, 4])


def _forge(node, step: int) -> None:
    """What a compromised node can do: write a checkpoint of its own making, manifest and all, and vouch for it in
    its own ledger."""
    state = checkpoint.read(checkpoint.step_path(node / "ckpt", 4))
    state["model"] = {name: torch.zeros_like(tensor) for name, tensor in state["model"].items()}
    shutil.rmtree(checkpoint.step_path(node / "ckpt", step), ignore_errors=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    checkpoint.save_bytes(node / "ckpt", step, buffer.getvalue(), keep=3)
    checkpoint.attest(node / "ckpt", step, hashlib.sha256(buffer.getvalue()).hexdigest())


@pytest.mark.parametrize(
    ("step", "resumed"),
    [
        (6, 4),  # a newer step only its maker vouches for is passed over
        (4, 2),  # a copy of the newest that the ledgers disagree about: neither is trusted
    ],
    ids=["a-newer-step", "a-copy-of-the-newest"],
)
def test_one_node_cannot_make_the_others_resume_from_its_checkpoint(interrupted, straight, tmp_path, step, resumed):
    nodes = [tmp_path / node.name for node in interrupted]
    for source, node in zip(interrupted, nodes, strict=True):
        shutil.copytree(source, node)
    _forge(nodes[1], step)
    results = train_nodes(NODE, nodes)
    assert f"checkpoint not trusted, step {step}" in results[0].stderr
    assert summary(results[0])["resumed_from_step"] == resumed and summary(results[0])["steps_completed"] == 6
    for node in nodes:
        assert_same_params(final_params(node / "ckpt"), straight, atol=1e-5)
    _assert_same_bytes(nodes, [4, 6])  # a forged copy was replaced by the job's own
