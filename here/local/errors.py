"""What can go wrong on the user's side of `fleet up / down / status`, as a message and an exit code (no traceback)."""

from __future__ import annotations

import subprocess

EXIT_FAILED = 1  # the cluster came up but the job failed, or a command on this machine failed
EXIT_USAGE = 2  # the stack is not a local one, the cluster is already up, or it is not up


class LocalError(Exception):
    """A message for the user and the exit code `fleet` returns with it."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def sh(*cmd: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run one system command (ip, nft, nsenter); a failure becomes a LocalError naming the command and its stderr."""
    try:
        result = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    except FileNotFoundError:
        raise LocalError(f"`{cmd[0]}` is not installed; scripts/setup installs what the local cluster needs.") from None
    if check and result.returncode != 0:
        raise LocalError(f"`{' '.join(cmd)}` failed: {result.stderr.strip()}")
    return result
