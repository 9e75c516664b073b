"""Rules a stack must meet that its shape alone cannot say: catalog facts, cloud limits, arithmetic.

Each rule returns problems instead of raising, so a user sees everything wrong with a stack in one go.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from clouds import profile
from clouds.checks import CHECKS
from clouds.jobrules import job_as_read, spot_checkpoints
from plan import catalog
from plan.candidates import candidate_problems
from plan.placement import ask_of
from plan.planner import ranks_per_node
from plan.profile import (
    CAPACITY_BLOCK,
    GPU_UTIL_SCALING,
    RESERVATION,
    SPOT,
    SPOT_MIX,
    WARM_POOL,
    CloudProfile,
)
from spec.cluster import ClusterSpec, ShapeError, parse_spec
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY
from training.config import most_ranks

Rule = Callable[[ClusterSpec, CloudProfile], Iterable[Problem]]


def _at(path: str) -> str:
    return f"{CLUSTER_KEY}.{path}"


def instance_type(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    if catalog.lookup(spec.cloud, spec.instance_type) is None:
        known = catalog.type_names(spec.cloud)
        close = difflib.get_close_matches(spec.instance_type, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        yield Problem(_at("instanceType"), f"{spec.instance_type!r} is not in the {spec.cloud} catalog.{hint}",
                      f"use one of: {', '.join(known)} (or add a row to plan/catalog/{spec.cloud}.yaml).")


def node_counts(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    counts = spec.counts
    if not counts.min <= counts.desired <= counts.max:
        yield Problem(_at("nodes"), f"min {counts.min} <= desired {counts.desired} <= max {counts.max} does not hold.",
                      "order them so that min <= desired <= max.")


def market(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    m, counts = spec.market, spec.counts
    if not 0 <= m.spot_percent <= 100:
        yield Problem(_at("market.spotPercent"), f"{m.spot_percent} is outside 0-100.", "use a percentage 0-100.")
    if m.on_demand_base > counts.max:
        yield Problem(_at("market.onDemandBase"), f"{m.on_demand_base} is more than the {counts.max} nodes at most.",
                      f"lower it to at most {counts.max}, or raise nodes.max.")
    if m.on_demand_base < 1 and m.spot_percent > 0:
        yield Problem(_at("market.onDemandBase"), "is 0, but the head node is always on-demand.",
                      "set it to at least 1.")
    spot = m.spot_percent > 0
    if m.max_spot_price is not None and not spot:
        yield Problem(_at("market.maxSpotPrice"), "is set but no node runs on spot.",
                      "set market.spotPercent above 0, or remove maxSpotPrice.")
    # A Capacity Block without reservationId is the account's active one, looked up at deploy time.
    if m.capacity_block and spot:
        yield Problem(_at("market.capacityBlock"), "a Capacity Block cannot be mixed with spot.",
                      "set market.spotPercent to 0, or drop capacityBlock.")


def fabric(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    wanted = spec.network.fabric
    if wanted == "auto":
        return
    if wanted not in cloud.fabrics:
        yield Problem(_at("network.fabric"), f"{wanted} is not offered on {spec.cloud}.",
                      f"use auto or one of: {', '.join(sorted(cloud.fabrics))}.")
        return
    row = catalog.lookup(spec.cloud, spec.instance_type)
    if row is not None and wanted != "tcp" and row.fabric != wanted:
        yield Problem(_at("network.fabric"), f"{spec.instance_type} has no {wanted} (it has {row.fabric}).",
                      f"use fabric auto or tcp, or an instance type with {wanted}.")


def autoscaling(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    a, counts = spec.autoscaling, spec.counts
    if a.gpu_util_target is not None:
        if not 0 < a.gpu_util_target <= 100:
            yield Problem(_at("autoscaling.gpuUtilTarget"), f"{a.gpu_util_target} is not a percentage in (0, 100].",
                          "use a target such as 80.")
        elif counts.min == counts.max:
            yield Problem(_at("autoscaling.gpuUtilTarget"), f"nodes are fixed at {counts.max}, nothing can scale.",
                          "give nodes as {min, desired, max} with min < max, or remove gpuUtilTarget.")
    if a.standby > counts.max - counts.min:
        yield Problem(_at("autoscaling.standby"), f"{a.standby} standby nodes exceed the {counts.max - counts.min} "
                      "the group can ever add.", "lower standby or raise nodes.max.")
    if a.standby and spec.market.spot_percent:
        yield Problem(_at("autoscaling.standby"), "warm pools cannot hold spot capacity or a spot mix.",
                      "set standby to 0, or market.spotPercent to 0.")


def job(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """Every rank has a sequence per step at every node count the cluster can stand at (training.batching's rule).
    Nothing else about the batch: the job splits it exactly over any number of ranks up to it and picks the
    micro-batch from the GPU's memory (training.batching, training.memory); the settings' own limits are the spec's
    (spec/jobs.py)."""
    row = catalog.lookup(spec.cloud, spec.instance_type)
    if row is None:
        return
    ranks = ranks_per_node(spec, row)
    if spec.ranks_per_node and row.gpus and spec.ranks_per_node > row.gpus:
        yield Problem(_at("ranksPerNode"), f"{spec.ranks_per_node} ranks but {row.name} has {row.gpus} GPUs.",
                      f"use at most {row.gpus}, or leave it unset for one rank per GPU.")
    counts = spec.counts
    most, batch = counts.max * ranks, spec.job.global_batch
    if not counts.min <= counts.desired <= counts.max or most <= most_ranks(batch):
        return
    fix = f"set job.globalBatch to at least {most}, or nodes.max to at most {most_ranks(batch) // ranks}."
    if "global_batch" in spec.job.model_fields_set:
        yield Problem(_at("job.globalBatch"), f"{batch} sequences per step cannot give each of the {most} ranks at "
                      f"{counts.max} nodes x {ranks} ranks one.", fix)
    else:
        yield Problem(_at("nodes.max"), f"{counts.max} nodes x {ranks} ranks = {most} ranks, more than the job's "
                      f"{batch} sequences per step (the default job.globalBatch): every rank needs one.", fix)


def placement(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """Anti-affinity the cloud cannot give is refused with its reason, never dropped (plan/placement.py)."""
    row = catalog.lookup(spec.cloud, spec.instance_type)
    choice = cloud.placement(ask_of(spec, row)) if row is not None else ()
    if isinstance(choice, str):
        yield Problem(_at("network.antiAffinity"), f"{spec.cloud} cannot spread these nodes over hosts: {choice}",
                      "remove network.antiAffinity (the cloud then places nodes for speed), or change what the "
                      "reason names.")


def bundle_domain(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """A custom domain for the bundle's upload only where the cloud's default endpoint refuses it (CodeUpload)."""
    domain = spec.storage.bundle_domain
    upload = cloud.code_upload(spec.region, "", domain, spec.storage.endpoint) if domain else None
    if isinstance(upload, str):
        where = " ".join(filter(None, (cloud.title, spec.region)))
        yield Problem(_at("storage.bundleDomain"), f"{where} needs no domain for the code bundle: {upload}",
                      "remove storage.bundleDomain.")


def storage_endpoint(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """A choice of the store's endpoint only where the cloud's public one refuses some accounts (PipelinePlan)."""
    place = cloud.pipeline(spec.region, spec.storage.endpoint) if spec.storage.endpoint else None
    if isinstance(place, str):
        where = " ".join(filter(None, (cloud.title, spec.region)))
        yield Problem(_at("storage.endpoint"), f"{where} needs no choice of the store's endpoint: {place}",
                      "remove storage.endpoint.")


def unsupported(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    m = spec.market
    asked = {
        CAPACITY_BLOCK: ("market.capacityBlock", m.capacity_block),
        RESERVATION: ("market.reservationId", bool(m.reservation_id)),
        SPOT: ("market.spotPercent", m.spot_percent > 0),
        SPOT_MIX: ("market.spotPercent", 0 < m.spot_percent < 100),
        WARM_POOL: ("autoscaling.standby", spec.autoscaling.standby > 0),
        GPU_UTIL_SCALING: ("autoscaling.gpuUtilTarget", spec.autoscaling.gpu_util_target is not None),
    }
    for feature, (path, wanted) in asked.items():
        if wanted and feature in cloud.unsupported:
            yield Problem(_at(path), f"{spec.cloud} does not support {feature}: {cloud.unsupported[feature]}",
                          "remove the setting or choose another cloud.")


RULES: tuple[Rule, ...] = (instance_type, node_counts, market, fabric, autoscaling, job, job_as_read, spot_checkpoints,
                           placement, bundle_domain, storage_endpoint, unsupported)


def problems_of(spec: ClusterSpec) -> list[Problem]:
    """Every rule's findings for a spec whose shape is valid."""
    cloud = profile(spec.cloud)
    return [problem for rule in (*CHECKS, *RULES, *cloud.rules) for problem in rule(spec, cloud)]


def validate(raw: object, region: str, stack: str) -> ClusterSpec:
    """Shape and rules together: one SpecError with every problem, even when some keys are malformed."""
    try:
        spec = parse_spec(raw, region, stack)
    except ShapeError as error:
        dropped = {p.path for p in error.problems}
        extra = [p for p in problems_of(error.partial) if p.path not in dropped] if error.partial else []
        raise SpecError(error.problems + extra) from None
    problems = problems_of(spec)
    problems += candidate_problems(spec, problems_of)
    if problems:
        raise SpecError(problems)
    return spec
