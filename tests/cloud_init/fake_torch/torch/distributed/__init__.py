"""torch.distributed of the stand-in: forming the process group is NCCL's init, which writes NCCL's log to
NCCL_DEBUG_FILE and fails as torch does (a RuntimeError) when no network initialises."""

import json
import os
import socket
from pathlib import Path

from nccl_emulation import InitFailed, Node, nccl_log


class HashStore:
    """The single-process store the probe forms its one-rank group with."""


def init_process_group(backend: str, **_: object) -> None:
    fields = json.loads(os.environ["GPUFLEET_TEST_NODE"])
    node = Node(**fields | {"plugin": tuple(fields["plugin"]) if fields.get("plugin") else None})
    name = os.environ["NCCL_DEBUG_FILE"].replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))
    try:
        Path(name).write_text(nccl_log(os.environ, node))
    except InitFailed as failed:
        Path(name).write_text(failed.log)
        raise RuntimeError(str(failed)) from None


def all_reduce(tensor: object) -> None:
    """The one rank's all-reduce leaves its tensor as it is."""


def destroy_process_group() -> None:
    """Nothing to release."""
