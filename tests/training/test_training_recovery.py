"""Going on from a survivor's memory (training.last_step, training.recovery): a job re-formed without a node, or with a
fresh node in its place, goes on from the step the survivors keep in host memory, with no checkpoint on any disk,
and computes what one process computes (float64: equal means equal), every sequence trained once."""

import json
import shutil

import pytest
from train_helpers import assert_same_params, final_params, summary, train, train_nodes

from training import recovery

EXACT = ["--dtype", "fp64", "--global-batch", "7", "--checkpoint-every", "0", "--eval-sequences", "4",
         "--micro-batch", "2", "--steps", "4"]
NODE = ["--keep-dir", "keep", "--checkpoint-dir", "ckpt", "--run-dir", "run", "--sequence-log", "ids"]


def report(rank, node, step, whole, disk=-1):
    return {"rank": rank, "node": node, "step": step, "whole": whole, "disk": disk}


def test_the_newest_whole_state_wins_sent_by_the_lowest_rank_that_keeps_it():
    reports = [report(0, 0, 5, True), report(1, 0, 5, False), report(2, 1, 6, True), report(3, 1, 6, False),
               report(4, 2, 6, True)]
    assert recovery.choose(reports) == (6, 2)


def test_a_newer_checkpoint_on_a_disk_or_no_whole_state_leaves_it_to_the_disk():
    assert recovery.choose([report(0, 0, 5, True, disk=6), report(1, 1, None, False)]) is None
    assert recovery.choose([report(0, 0, 6, True, disk=6)]) == (6, 0), "a checkpoint of the same step: memory"
    assert recovery.choose([report(0, 0, None, False), report(1, 0, 3, False)]) is None, "RNG streams alone"


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("one")
    train([*EXACT, "--micro-batch", "7", "--run-dir", str(run_dir)])
    return run_dir


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """Three nodes of one rank each, stopped after step 2; then every disk checkpoint is removed."""
    nodes = [tmp_path_factory.mktemp(f"node{n}") for n in range(3)]
    first = [summary(out) for out in train_nodes([*EXACT, *NODE, "--stop-after-steps", "2"], nodes)[:1]][0]
    assert first["steps_completed"] == 2
    for node in nodes:
        shutil.rmtree(node / "ckpt")
    return nodes


def _sequence_ids(dirs) -> list[int]:
    return [i for d in dirs for path in (d / "ids").glob("rank-*.jsonl") for line in path.read_text().splitlines()
            for i in json.loads(line)["ids"]]


@pytest.mark.parametrize("after", ["node lost", "node replaced"])
def test_the_reformed_job_goes_on_from_a_survivors_memory(one_process, stopped, tmp_path, after):
    nodes = [tmp_path / f"node{n}" for n in range(3)]
    for old, new in zip(stopped, nodes, strict=True):
        shutil.copytree(old, new)
    lost = nodes[2]
    again = nodes[:2]
    if after == "node replaced":  # a fresh machine: no memory, no disk
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        again.append(fresh)
    outs = train_nodes([*EXACT, *NODE], again)
    result = summary(outs[0])
    assert result["resumed_from_step"] == 2 and result["steps_completed"] == 4
    assert result["world_size"] == len(again)
    assert "recovery: going on from the memory of rank 0" in outs[0].stderr
    assert_same_params(final_params(one_process / "checkpoints"), final_params(again[0] / "ckpt"), atol=1e-12)
    assert sorted(_sequence_ids({*again, lost})) == list(range(4 * 7)), "every sequence exactly once"
    assert not list((again[0] / "keep").iterdir()), "a finished run keeps nothing"
