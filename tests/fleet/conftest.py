"""The fleet tests plan the local stack in-process: a local cluster that is up on this machine (another run's
`fleet up --stack local`) would be kept where it runs (components/local/lookups.py), so each test gets an empty
record of running local clusters of its own."""

from __future__ import annotations

import pytest

from components.local import lookups as local_places


@pytest.fixture(autouse=True)
def no_local_cluster_up(tmp_path_factory, monkeypatch):
    monkeypatch.setattr(local_places, "RUNNING", tmp_path_factory.mktemp("running"))
