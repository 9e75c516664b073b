"""How realizers keep a looked-up image pinned: later look-ups that find a newer image change no node."""

from __future__ import annotations

from plan.model import ImagePlan


def image_ignore_changes(image: ImagePlan) -> list[str] | None:
    """`ignore_changes` for a node resource's image: the first look-up's answer stays until the stack names one."""
    return ["image_id"] if image.pinned else None
