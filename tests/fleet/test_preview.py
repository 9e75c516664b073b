"""The offline preview in a forked process: test runners and mutmut fork workers from a process that already ran it."""

from __future__ import annotations

import os
import signal

from fleet.preview import run_program
from fleet.stacks import resolve


def test_a_forked_child_previews_after_its_parent_did() -> None:
    run_program(resolve("aws-g4dn-dev", None))
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)  # a hung run ends the child with SIGALRM instead of hanging the suite
        try:
            preview = run_program(resolve("tencent-spot", None))
            os._exit(0 if preview.resources else 1)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
