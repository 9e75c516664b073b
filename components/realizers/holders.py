"""Every GPU the cluster holds, in one stack output: so that nothing the cluster launched is left running unseen
after a partial `pulumi up` or `pulumi destroy` (docs/cloud-facts.md#no-orphaned-gpus).

Read off what the realizer made: the head and each worker launched as an instance by its instance id, the workers of
a scaling group by the group's id (its instances, warm pool included, come and go with the group)."""

from __future__ import annotations

from components.realizers.contract import ClusterOutputs, GpuHolder

INSTANCE, SCALING_GROUP = "instance", "scaling-group"


def gpu_holders(outputs: ClusterOutputs) -> list[GpuHolder]:
    """The head's instance, each fixed worker's, then each scaling group; nothing where a target launches none (the
    local cluster's nodes are `fleet up`'s)."""
    head = [outputs["headInstanceId"]] if outputs["headInstanceId"] is not None else []
    return ([GpuHolder(kind=INSTANCE, id=made) for made in (*head, *outputs["workerInstanceIds"])]
            + [GpuHolder(kind=SCALING_GROUP, id=group["id"]) for group in outputs["workerGroups"]])
