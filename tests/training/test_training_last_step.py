"""Keeping the last step (training.last_step, training.host_copy) on the CPU: the loop never waits for the write, the
newest offered step is the one written once the writer is free, and the kept file holds the step's state even after
the next step changed the weights in place."""

import threading

import pytest
import torch

from training import last_step
from training.config import parse_args
from training.distributed import Dist


def _keeper(directory) -> last_step.Keeper:
    d = Dist(rank=0, local_rank=0, node_rank=0, world_size=1, device=torch.device("cpu"), control_group=None)
    return last_step.Keeper(parse_args(["--keep-dir", str(directory)]), d)


def _model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1))
    return model, torch.optim.AdamW(model.parameters(), lr=0.1)


def _step(model, optimizer) -> None:
    model(torch.randn(4, 8)).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


@pytest.fixture
def slow_save(monkeypatch):
    """torch.save held until the test opens the gate (at most 5 s: a keeper that waited for it would take that long
    per step, not hang)."""
    gate, started = threading.Event(), threading.Event()
    real_save = torch.save

    def save(*args, **kwargs):
        started.set()
        gate.wait(timeout=5)
        return real_save(*args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    return gate, started


def test_a_slow_writer_does_not_slow_the_loop_and_the_newest_step_is_written(tmp_path, slow_save):
    gate, started = slow_save
    model, optimizer = _model_and_optimizer()
    keeper = _keeper(tmp_path)
    expected = {}
    for step in range(1, 6):
        _step(model, optimizer)
        keeper.keep(step, model, optimizer, position=step * 4)
        expected[step] = {name: t.clone() for name, t in model.state_dict().items()}
        if step == 1:
            assert started.wait(timeout=5), "the writer took step 1"
    assert keeper.seconds < 1.0, f"the loop waited {keeper.seconds:.2f} s for a writer held for 5 s"
    assert last_step.kept_step(tmp_path, 0) is None, "nothing written while the writer is held"
    gate.set()
    keeper.flush()
    assert (keeper.offered, keeper.kept) == (5, 2), "step 1, then only the newest of the steps offered meanwhile"
    assert last_step.kept_step(tmp_path, 0) == 5
    kept = torch.load(last_step.kept_path(tmp_path, 0, 5), weights_only=True)
    assert kept["step"] == 5 and kept["data_position"] == 20
    for name, tensor in expected[5].items():
        assert torch.equal(kept["model"][name], tensor), name


def test_the_kept_state_is_the_steps_state_not_the_next_steps(tmp_path, slow_save):
    gate, started = slow_save
    model, optimizer = _model_and_optimizer()
    keeper = _keeper(tmp_path)
    _step(model, optimizer)
    weights = {name: t.clone() for name, t in model.state_dict().items()}
    moments = [optimizer.state[p]["exp_avg"].clone() for p in model.parameters()]
    keeper.keep(1, model, optimizer, position=4)
    assert started.wait(timeout=5)
    _step(model, optimizer)  # changes the weights and AdamW's moments in place while step 1 is being written
    assert not torch.equal(model.state_dict()["0.weight"], weights["0.weight"])
    gate.set()
    keeper.flush()
    kept = torch.load(last_step.kept_path(tmp_path, 0, 1), weights_only=True)
    for name, tensor in weights.items():
        assert torch.equal(kept["model"][name], tensor), name
    for index, moment in enumerate(moments):
        assert torch.equal(kept["optimizer"]["state"][index]["exp_avg"], moment)
    assert kept["optimizer"]["state"][0]["step"].item() == 1


def test_a_failed_write_reaches_the_loop(tmp_path, monkeypatch):
    model, optimizer = _model_and_optimizer()
    keeper = _keeper(tmp_path)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", fail)
    keeper.keep(1, model, optimizer, position=4)
    with pytest.raises(OSError, match="No space"):
        keeper.flush()
    assert keeper.kept == 0
