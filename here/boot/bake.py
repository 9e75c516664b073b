"""`fleet image build --stack NAME --boot`: a stack's node image baked in the boot harness the way the clouds bake it
(plan/bake.py): one machine boots the bake user-data on the stack's base image with real cloud-init and
systemd (`gpufleet-node bake`: the node's software installed, the monitor's packages and container images with it,
its matrix recorded in /etc/gpufleet/image.json; then,
once cloud-init is done, `gpufleet-node seal` cleans the machine and it powers off); its root filesystem is then kept
as the image (here.boot.baked)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from here.boot import baked, rootfs
from here.boot.cluster import Boot, stand_in
from plan.bake import BakePlan

POWER_OFF_POLL_S = 2.0
# cloud-init writes this on the disk once its final stage is over; then a bake that finished is sealed (which removes
# it) and powered off within seconds, while one that failed stays up.
RESULT = "var/lib/cloud/data/result.json"
POWER_OFF_GRACE_S = 60


class BakeError(RuntimeError):
    """The bake machine did not bake: the message says where it stopped and carries its log's tail."""


def build(bake: BakePlan, *, timeout: float = 900, note: Callable[[str], None] = lambda _: None) -> str:
    """The id of the harness image baked from this bake plan (made unless one of that id exists); raises BakeError."""
    base = stand_in(bake.cluster)
    ref = baked.image_id(base, bake.digest, bake.cluster.head.user_data)
    if baked.tree(ref) is not None:
        note(f"{ref} is baked already")
        return ref
    # The monitor's packages and images come from the harness's mirror and registry stand-in, so the image holds them.
    # GF_BOOT_KEEP=1 keeps the bake machine's run directory (its disk, the services' logs), as for any boot.
    with Boot(bake.cluster, workers=0, keep=bool(os.environ.get("GF_BOOT_KEEP")), monitor=True) as boot:
        machine = boot.nodes[0].machine
        note(f"bake machine up (run {boot.tag}): installing the matrix on the {base.name} image")
        deadline = time.monotonic() + timeout
        while machine.alive() and time.monotonic() < deadline:
            if (machine.disk / RESULT).exists():  # a poweroff under way stops cloud-final too: give it its time
                deadline = min(deadline, time.monotonic() + POWER_OFF_GRACE_S)
            time.sleep(POWER_OFF_POLL_S)
        if machine.alive():
            log = machine.read("/var/log/cloud-init-output.log") or b""
            raise BakeError(f"the bake machine did not power off within {timeout:.0f} s or its cloud-init ended "
                            "without powering off:\n" + "\n".join(log.decode(errors="replace").splitlines()[-30:]))
        if not (machine.disk / "etc/gpufleet/image.json").exists():
            log = machine.disk / "var/log/cloud-init-output.log"
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log.exists() else ""
            raise BakeError(f"the bake powered off without recording the image's matrix:\n{tail}")
        note(f"bake machine powered off after {time.monotonic() - machine.started:.0f} s; keeping its disk as {ref}")
        baked.keep(ref, machine.disk, rootfs.tree(base), [*machine.config.files, *machine.config.links],
                   {"base": base.key, "matrix": dict(bake.matrix), "digest": bake.digest})
    return ref
