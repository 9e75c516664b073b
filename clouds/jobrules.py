"""Stack checks of the job's settings as the job itself will read them on every node, and of the checkpoints a spot
cluster needs to keep its progress."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

from pydantic.alias_generators import to_camel

from plan.profile import CloudProfile
from spec.cluster import ClusterSpec
from spec.errors import Problem
from spec.jobs import job_args
from spec.stackfile import CLUSTER_KEY
from training.config import ConfigError, parse_args


def job_as_read(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """The flags every node passes the job, read back by the job's own parser: each setting the stack wrote arrives
    with the value the stack wrote, and the job accepts the whole."""
    stated = spec.job.model_dump(exclude_unset=True)
    if not stated:
        return
    try:
        with contextlib.redirect_stderr(io.StringIO()) as said:
            read = parse_args(list(job_args(stated)))
    except (ConfigError, SystemExit) as error:
        reason = str(error) if isinstance(error, ConfigError) else said.getvalue().strip().splitlines()[-1]
        yield Problem(f"{CLUSTER_KEY}.job", f"the job refuses these settings: {reason}", "correct the setting named.")
        return
    for name, value in sorted(stated.items()):
        if getattr(read, name) != value:
            yield Problem(f"{CLUSTER_KEY}.job.{to_camel(name)}", f"{value!r} reaches the job as "
                          f"{getattr(read, name)!r}.", "write the value the job should read.")


def spot_checkpoints(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """Spot nodes are taken back at any time: a job that writes no checkpoint along the way nor at its end keeps
    nothing of its training past a reclaimed node."""
    job = spec.job
    if spec.market.spot_percent > 0 and job.checkpoint_every == 0 and not job.checkpoint_at_end:
        yield Problem(f"{CLUSTER_KEY}.job.checkpointEvery", "is 0 and checkpointAtEnd is false on a cluster with spot "
                      "nodes: the job would write no checkpoint but on a signal, so training lost with a reclaimed "
                      "node (or a crash) is never saved and the finished model never written.",
                      "set checkpointEvery to a number of steps (e.g. 200), or checkpointAtEnd to true.")
