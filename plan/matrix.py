"""The software matrix as a baked image records it: the parts of the node plan that are installed on the image (the
driver, fabric manager, the fabric's stack, the job's packages, the node's tools, the monitor's packages and container
images), one string per part, so the bake can write them into the image and its tags and a node booted from it can
compare them with its own plan: a baked node installs nothing, the monitor included.

Runtime settings (NCCL_NET, the gate's thresholds) are not parts: they are the node plan's, whatever the image.
"""

from __future__ import annotations

from plan.node import SoftwarePlan


def image_matrix(software: SoftwarePlan, pip_packages: tuple[str, ...], tools: tuple[str, ...],
                 monitor_packages: tuple[str, ...], monitor_images: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(part, version) pairs in a fixed order; a driver the image brings is held to its branch, not a version."""
    return (
        ("driver", software.driver or f">={software.driver_min_branch}"),
        ("fabricmanager", software.fabricmanager),
        ("fabric-stack", software.fabric_stack),
        ("cuda", software.cuda),
        ("pip", " ".join(pip_packages)),
        ("tools", " ".join(tools)),
        ("monitor-packages", " ".join(monitor_packages)),
        ("monitor-images", " ".join(monitor_images)),
    )
