"""Shared by the boot tests that follow a booted node over minutes."""

from __future__ import annotations

import time


def wait(predicate, timeout: float, poll_s: float = 3):
    """The predicate's first true value within `timeout` seconds, else its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(poll_s)
    return predicate()
