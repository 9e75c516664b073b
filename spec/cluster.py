"""The `gpufleet:cluster` object as typed, frozen models: the one place a stack's shape is defined.

Shape errors come from pydantic; rules that need the catalog or a cloud's limits live in `clouds.rules`.
`load_spec` runs both and raises one SpecError listing every problem.
"""

from __future__ import annotations

import copy
import difflib
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationError, ValidationInfo, field_validator

from spec.cidrs import normalised_cidr, normalised_vpc_cidr
from spec.clouds import CLOUDS, REGION_KEYS
from spec.errors import Problem, SpecError
from spec.jobs import JobSettings, one_spelling, platform_owned
from spec.model import SpecModel
from spec.names import CLUSTER_NAME, checked_cluster_name, cluster_name
from spec.stackfile import CLUSTER_KEY

Cloud = Literal[tuple(CLOUDS)]
FabricChoice = Literal["auto", "efa", "erdma", "rdma", "tcp"]
SpotStrategy = Literal["price-capacity-optimized", "capacity-optimized", "lowest-price"]
_MIRROR = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._/-]*)?$")
# A package mirror: plain HTTP too, as the clouds' in-VPC mirrors serve (apt checks its signatures either way).
_PACKAGE_MIRROR = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._/~-]*)?$")
# A registry and repository prefix as an image reference starts (no scheme): "registry.example.com:5000/nvcr".
_REGISTRY_PREFIX = re.compile(r"^[A-Za-z0-9.-]+\.[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9._-]+)*$")
# What each mirror setting must look like, and the example its error gives.
_PACKAGE_FORM = (_PACKAGE_MIRROR, 'a mirror URL like "http://mirrors.example.com/pypi/simple"')
_MIRROR_FORMS = {
    "registry_mirror": (_MIRROR, 'a registry URL like "https://<id>.mirror.aliyuncs.com"'),
    "pip_mirror": _PACKAGE_FORM, "apt_mirror": _PACKAGE_FORM, "cuda_mirror": _PACKAGE_FORM,
    "nvcr_mirror": (_REGISTRY_PREFIX, 'a registry like "registry.example.com/nvcr" (no https://)'),
}
_PORT_RANGE = re.compile(r"^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$")
# A DNS name short enough that "<bucket>." (63 characters at most) in front of it stays within DNS's 253.
_DOMAIN = re.compile(r"^(?=.{4,189}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


class NodeCounts(SpecModel):
    """How many nodes the cluster has, head included: the scaling bounds and the count to start with."""

    min: int = Field(ge=1, description="Fewest nodes; the elastic job keeps training with this many.")
    desired: int = Field(ge=1, description="Nodes to start with.")
    max: int = Field(ge=1, description="Most nodes the scaling group may add.")


class Market(SpecModel):
    """Where capacity comes from: on-demand, spot, an On-Demand Capacity Reservation or a Capacity Block."""

    on_demand_base: int = Field(1, ge=0, description="Nodes always on-demand, the head node included.")
    spot_percent: int = Field(0, description="Share of nodes above the base that run on spot, 0-100.")
    spot_strategy: SpotStrategy = Field("price-capacity-optimized", description="How spot pools are picked.")
    max_spot_price: float | None = Field(
        None, gt=0, description="Highest USD/h per node paid for spot; unset: the on-demand price.")
    reservation_id: str | None = Field(None, description="Capacity reservation (AWS `cr-...`) the nodes launch into.")
    capacity_block: bool = Field(False, description="The reservation is an AWS Capacity Block for ML.")
    international_account: bool = Field(False, description="Tencent Cloud international account (no spot there).")


class Network(SpecModel):
    """The cluster's private network and its firewall."""

    vpc_cidr: str = Field("10.0.0.0/16", description="Private address range of the cluster's VPC.")
    fabric: FabricChoice = Field("auto", description="Inter-node fabric; `auto` picks the best the type has.")
    nccl_port_range: str | None = Field(
        None, description='Pin NCCL ports to "LO-HI" and open only those (plus rendezvous) inside the cluster.')
    ssh_cidrs: tuple[Annotated[str, AfterValidator(normalised_cidr)], ...] = Field(
        (), description="CIDRs allowed to SSH in; none by default.")
    allow_internet: bool = Field(
        False, description="Opt in to sshCidrs open to the internet (a range wider than a /8, such as 0.0.0.0/0, "
                           "or ranges that together admit more of it than a /8); policy rejects them otherwise.")
    rendezvous_port: int = Field(29400, ge=1024, le=65535, description="torchrun c10d rendezvous port on the head.")
    anti_affinity: bool = Field(False, description="Spread nodes over hosts or racks (a spread placement group), "
                                "where the cloud can; refused with the reason where it cannot.")
    registry_mirror: str | None = Field(
        None, description="Docker Hub mirror (an https:// URL) the nodes pull the monitoring containers through; "
                          "unset: the cloud's own in-VPC mirror where it has one, else Docker Hub.")
    pip_mirror: str | None = Field(
        None, description="PyPI index (a simple index URL, http:// or https://) the nodes install torch, the job's "
                          "packages and their tools from; unset: the cloud's in-VPC mirror where the region needs "
                          "one (Chinese mainland regions), else pypi.org.")
    apt_mirror: str | None = Field(
        None, description="Debian/Ubuntu archive mirror (the URL under which ubuntu/, debian/ and debian-security/ "
                          "lie) the nodes install packages from; unset: the cloud's in-VPC mirror where the region "
                          "needs one (Chinese mainland regions), else the image's own sources.")
    cuda_mirror: str | None = Field(
        None, description="Mirror of NVIDIA's CUDA repositories (the URL under which ubuntu2204/x86_64/ lies, as "
                          "under developer.download.nvidia.com/compute/cuda/repos) plain images install the driver "
                          "from; unset: the cloud's in-VPC mirror where it has one, else NVIDIA's.")
    nvcr_mirror: str | None = Field(
        None, description="Registry (and repository prefix, no scheme: \"registry.example.com/nvcr\") serving "
                          "nvcr.io's images under their own names, for the DCGM exporter; no cloud mirrors nvcr.io. "
                          "Unset: nvcr.io.")

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        return normalised_vpc_cidr(value)

    @field_validator("registry_mirror", "pip_mirror", "apt_mirror", "cuda_mirror", "nvcr_mirror")
    @classmethod
    def _mirror(cls, value: str | None, info: ValidationInfo) -> str | None:
        pattern, form = _MIRROR_FORMS[info.field_name]
        if value is not None and not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {form}")
        return value

    @field_validator("nccl_port_range")
    @classmethod
    def _ports(cls, value: str | None) -> str | None:
        if value is None:
            return None
        match = _PORT_RANGE.fullmatch(value)
        if not match:
            raise ValueError(f'{value!r} is not a port range like "50000-51000"')
        low, high = int(match[1]), int(match[2])
        if not (1024 <= low <= 65535 and 1024 <= high <= 65535):
            raise ValueError(f"{value!r} has ports outside 1024-65535")
        if low > high:
            raise ValueError(f'{value!r} is reversed: write "{high}-{low}"')
        return f"{low}-{high}"

    @property
    def port_range(self) -> tuple[int, int] | None:
        """The NCCL port range as numbers, when the stack pins one."""
        if self.nccl_port_range is None:
            return None
        low, high = self.nccl_port_range.split("-")
        return int(low), int(high)


class Autoscaling(SpecModel):
    """How the worker group grows and shrinks."""

    gpu_util_target: float | None = Field(None, description="Target-tracking on average GPU utilisation, percent.")
    standby: int = Field(0, ge=0, description="Stopped nodes kept warm for fast scale-out.")


class Storage(SpecModel):
    """Checkpoint storage and disks."""

    checkpoint_bucket: str | None = Field(None, description="Name of a new bucket the stack creates (and `pulumi "
                                          "destroy` deletes); unset: one named after the cluster and its identity.")
    existing_bucket: str | None = Field(None, description="Name of a bucket the account already has, for the "
                                        "checkpoints: the stack neither creates, configures nor ever deletes it.")
    bundle_domain: str | None = Field(
        None, description="Alibaba Cloud, Chinese mainland regions: a domain with an ICP filing; `pulumi up` binds "
                          "<bucket>.<this domain> to the bucket and writes the code bundle through it. Unset: through "
                          "the endpoint storage.endpoint names.")
    endpoint: Literal["internal", "public"] | None = Field(
        None, description="Alibaba Cloud, Chinese mainland regions: which OSS endpoint `pulumi up`, `fleet roll`, "
                          "`fleet heal` and the drift check write and read the bucket through, and so where the "
                          "pipeline runs. `internal` (the default there, for every account): inside the region, on "
                          "a self-hosted runner labelled gpufleet-<region>. `public`: the account activated OSS "
                          "before 2025-03-20, so OSS's public endpoint still takes its data calls and the pipeline "
                          "runs on GitHub's runners. Elsewhere the public endpoint takes every account's calls: "
                          "leave it unset.")
    root_volume_gb: int = Field(200, ge=50, le=16384, description="Encrypted root volume per node, GiB.")

    @field_validator("bundle_domain")
    @classmethod
    def _domain(cls, value: str | None) -> str | None:
        if value is not None and not _DOMAIN.fullmatch(value):
            raise ValueError(f"{value!r} is not a domain name like \"code.example.com\"")
        return value


class Candidate(SpecModel):
    """One more place the cluster may come up when the stack's own is sold out, tried in the order written; what it
    leaves out is the stack's. The whole cluster comes up on one candidate, so a fabric cluster stays in one zone
    and one placement group."""

    zone: str | None = Field(None, description="Zone; default: the stack's zone.")
    instance_type: str | None = Field(None, description="Instance type, a row of the catalog; default: the stack's.")
    market: Literal["stack", "on-demand"] = Field(
        "stack", description="`stack`: the stack's market; `on-demand`: every node on demand (no spot share).")


class BakedImage(SpecModel):
    """A node image `fleet image build` baked from this stack's software matrix: nodes check it and install nothing."""

    baked: str = Field(min_length=1, description="The baked image's id (the `image` output of `fleet image build`).")
    base: str = Field("auto", min_length=1, description="The image it was baked from, as `image` named it then: "
                      "`auto` or a plain image's id. It decides whether the matrix pins the driver.")


class ClusterSpec(SpecModel):
    """A whole cluster as the stack file states it, after defaults."""

    cloud: Cloud = Field(description=f"Where the cluster runs: {', '.join(CLOUDS)}.")
    name: str | None = Field(None, json_schema_extra={"pattern": CLUSTER_NAME.pattern},
                             description="Cluster name; default: the stack's name in lowercase letters, digits and "
                                         "dashes.")
    region: str = Field("", description="Set from the provider key (`aws:region`, ...), not written here.")
    zone: str = Field("local", description="The one zone every node and the placement group live in.")
    instance_type: str = Field(description="Instance type, a row of the catalog for this cloud.")
    image: str | BakedImage = Field("auto", description="Machine image; `auto` is the cloud's GPU deep-learning image; "
                                    "{baked: ID} a node image `fleet image build` made for this stack.")
    nodes: Annotated[int, Field(ge=1)] | NodeCounts = Field(
        description="Node count, or {min, desired, max} for an elastic cluster.")
    market: Market = Market()
    candidates: list[Candidate] = Field(
        default_factory=list, description="Where else the cluster may come up, in order, if the stack's own zone, "
        "type and market have no capacity at deploy time (`fleet plan` shows each one's availability).")
    network: Network = Network()
    autoscaling: Autoscaling = Autoscaling()
    storage: Storage = Storage()
    ranks_per_node: int | None = Field(None, ge=1, description="Training processes per node; default: one per GPU "
                                       "(two on CPU-only local nodes).")
    job: JobSettings = Field(default_factory=JobSettings, description="The training job's settings (those of "
                             "`python -m training.train --help`, camelCase); one left out keeps the job's default.")
    tags: dict[str, str] = Field(default_factory=dict, description="Extra tags on every resource.")
    gate: Literal["light", "deep"] = Field("light", description="The health gate's depth: `light` (about a minute "
                                           "per node) or `deep` (longer checks, DCGM level 2, a larger acceptance).")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else checked_cluster_name(value)

    @property
    def image_base(self) -> str:
        """The image a bake starts from: the stack's image, or the one its baked image was made from."""
        return self.image.base if isinstance(self.image, BakedImage) else self.image

    @property
    def counts(self) -> NodeCounts:
        """Node bounds whether the stack gave one number or three."""
        if isinstance(self.nodes, int):
            return NodeCounts(min=self.nodes, desired=self.nodes, max=self.nodes)
        return self.nodes


# Each field that is a plain value or a map: the tag pydantic puts in an error's location for the map's branch.
_UNIONS = {"nodes": "NodeCounts", "image": "BakedImage"}
# Tags pydantic puts in an error's location to say which branch of such a union failed.
_UNION_TAGS = {"int", "constrained-int", "str", *_UNIONS.values()}

_FIXES = {
    "missing": "add it.",
    "extra_forbidden": "remove it",
    "literal_error": "use one of the values listed.",
    "int_type": "write a whole number.",
    "int_parsing": "write a whole number.",
    "float_parsing": "write a number.",
    "bool_parsing": "write true or false.",
    "flag_for_number": "write a number.",
    "one_value": "write a single value.",
    "flag_for_word": "write it in quotes, e.g. 'off'.",
    "int_from_float": "write a whole number.",
    "finite_number": "write a finite number.",
    "string_type": "write a string.",
    "tuple_type": "write a list, e.g. [203.0.113.0/24].",
    "list_type": "write a list.",
    "dict_type": "write a map of keys and values.",
    "model_type": "write a map of keys and values.",
    "greater_than_equal": "raise it.",
    "less_than_equal": "lower it.",
    "greater_than": "raise it.",
    "less_than": "lower it.",
    "value_error": "correct the value as described.",
    "control_character": "write it on one line, in quotes (`|` and `>` blocks end in a line break; use `|-`).",
    "credential": "remove the user and password: gpufleet takes mirrors and endpoints that answer without them (a "
                  "mirror inside the VPC, or one that allows the nodes' network).",
}


def _path(loc: tuple[Any, ...]) -> str:
    parts = [str(part) for part in loc if not (isinstance(part, str) and part in (*_UNION_TAGS, "[key]"))]
    return ".".join([CLUSTER_KEY, *parts])


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The camelCase keys allowed where an unknown key was found, for a 'did you mean'."""
    model: type[BaseModel] = ClusterSpec
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) or next(
            (f for f in model.model_fields.values() if f.alias == part), None)
        annotation = getattr(field, "annotation", None)
        candidates = [a for a in getattr(annotation, "__args__", (annotation,)) if isinstance(a, type)]
        nested = next((a for a in candidates if issubclass(a, BaseModel)), None)
        if nested is None:
            return []
        model = nested
    return [f.alias or name for name, f in model.model_fields.items()]


def _problem(error: dict[str, Any], job_keys: dict[str, str]) -> Problem:
    """The problem pydantic's error stands for, at the key the stack wrote (``job_keys``: one_spelling's)."""
    loc = tuple(error["loc"])
    if loc[:1] == ("job",) and len(loc) > 1:
        loc = ("job", job_keys.get(str(loc[1]), loc[1]), *loc[2:])
    kind = error["type"]
    reason = platform_owned(str(loc[-1])) if loc[:1] == ("job",) and kind == "extra_forbidden" else None
    if reason:
        return Problem(_path(loc), f"is set by gpufleet on every node: {reason}.", "remove it.")
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), _fields_at(loc), n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        return Problem(_path(loc), f"unknown key{hint}.", "remove it or correct its spelling.")
    message = error["msg"].removeprefix("Value error, ")
    if kind == "literal_error":
        message = f"got {error.get('input')!r}; {message[0].lower()}{message[1:]}"
    if kind == "model_type":  # pydantic names the model's class, which the stack never sees
        message = f"got {error.get('input')!r}, where a map of keys and values belongs"
    return Problem(_path(loc), message.rstrip(".") + ".", _FIXES.get(kind, "correct the value."))


def _dedupe_union(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`nodes` is int | {min, desired, max}, `image` str | {baked, base}: report the branch that matches what the
    user wrote."""
    for field, tag in _UNIONS.items():
        by_field = [e for e in errors if e["loc"][:1] == (field,)]
        if not by_field:
            continue
        wrote_object = any(isinstance(e.get("input"), dict) for e in by_field if len(e["loc"]) == 2)
        keep = [e for e in by_field if (tag in e["loc"]) == wrote_object]
        errors = [e for e in errors if e["loc"][:1] != (field,)] + (keep or by_field[:1])
    return errors


def _without(data: dict[str, Any], loc: tuple[Any, ...]) -> None:
    """Drop the key a shape error points at, so the rest of the stack can still be checked."""
    keys = [part for part in loc if isinstance(part, str) and part not in _UNION_TAGS]
    node: Any = data
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and keys:
        node.pop(keys[-1], None)


class ShapeError(SpecError):
    """Shape problems, plus the spec that the rest of the stack makes once the bad keys are dropped (if any)."""

    def __init__(self, problems: list[Problem], partial: ClusterSpec | None) -> None:
        self.partial = partial
        super().__init__(problems)


def parse_spec(raw: Any, region: str, stack: str) -> ClusterSpec:
    """Shape-check the cluster object; the region comes from the provider key, the name from the stack."""
    if not isinstance(raw, dict):
        raise SpecError([Problem(CLUSTER_KEY, "is missing or not a map.",
                                 "add `gpufleet:cluster:` with at least cloud, instanceType and nodes.")])
    written_region = raw.get("region")
    data = {**copy.deepcopy(raw), "region": region}
    if data.get("name") is None:
        data["name"] = cluster_name(stack)
    refused: list[Problem] = []
    if written_region is not None:
        cloud = raw.get("cloud")
        own = REGION_KEYS[cloud] if isinstance(cloud, str) and cloud in REGION_KEYS else None
        keys = [own] if own else [key for key in REGION_KEYS.values() if key]
        refused.append(Problem(f"{CLUSTER_KEY}.region", f"is not a cluster setting: the region is the provider's "
                               f"own config key (e.g. {keys[0]}), so {written_region!r} here would be ignored.",
                               f"move it to config as {' or '.join(keys)} and remove it here."))
    job_keys: dict[str, str] = {}
    if isinstance(data.get("job"), dict):
        data["job"], job_keys, job_refused = one_spelling(data["job"])
        refused += job_refused
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as error:
        errors = _dedupe_union(error.errors())
        for item in errors:
            _without(data, tuple(item["loc"]))
        try:
            partial = ClusterSpec.model_validate(data)
        except ValidationError:
            partial = None
        raise ShapeError([_problem(e, job_keys) for e in errors] + refused, partial) from None
    if refused:
        raise ShapeError(refused, spec)
    return spec
