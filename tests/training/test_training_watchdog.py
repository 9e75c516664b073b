"""The peer heartbeat (training.watchdog): ranks that beat see each other alive; a rank that stops beating, or a
store that stops answering, ends the others' workers within the timeout, naming why."""

import threading
import time
from datetime import timedelta

import pytest
import torch.distributed as dist

from training import watchdog

TIMEOUT_S = 1.5


@pytest.fixture
def ended(monkeypatch):
    """Each os._exit the watch calls, recorded (with when) instead of ending the test process (its thread goes on)."""
    calls: list[tuple[int, float]] = []
    seen = threading.Event()

    def record(code: int) -> None:
        calls.append((code, time.monotonic()))
        seen.set()

    monkeypatch.setattr(watchdog.os, "_exit", record)
    return calls, seen


def _watches(world: int):
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=10))
    clients = [dist.TCPStore("127.0.0.1", master.port, is_master=False, timeout=timedelta(seconds=TIMEOUT_S))
               for _ in range(world)]
    return master, [watchdog.PeerWatch(client, rank, world, TIMEOUT_S).start() for rank, client in enumerate(clients)]


def test_ranks_that_beat_stay_up_and_report_their_largest_gap(ended):
    _, watches = _watches(3)
    time.sleep(3 * TIMEOUT_S)
    for watch in watches:
        watch.stop()
    assert ended[0] == []
    assert all(watchdog.BEAT_S <= watch.max_gap < TIMEOUT_S for watch in watches)


def test_a_rank_that_stops_beating_ends_the_others(ended, capfd):
    _, watches = _watches(3)
    time.sleep(1.0)
    watches[2].stop()
    stopped = time.monotonic()
    assert ended[1].wait(TIMEOUT_S + 3 * watchdog.BEAT_S + 1)
    for watch in watches:
        watch.stop()
    code, when = ended[0][0]
    assert code == watchdog.EXIT_PEER_LOST and when - stopped >= TIMEOUT_S - watchdog.BEAT_S
    assert "rank 2 sent no heartbeat" in capfd.readouterr().err


def test_a_store_that_stops_answering_ends_the_rank(ended, capfd):
    master, watches = _watches(2)
    time.sleep(1.0)
    del master  # rank 0's store goes away with its process
    assert ended[1].wait(TIMEOUT_S + 3 * watchdog.BEAT_S + 2)
    for watch in watches:
        watch.stop()
    assert ended[0][0][0] == watchdog.EXIT_PEER_LOST
    assert "the job's store did not answer" in capfd.readouterr().err
