"""Boot a plan's nodes for real: `with Boot(plan) as boot:` makes the network, starts the cloud's metadata service,
the object store holding the code bundle, the PyPI mirror and the image's apt mirror in the bridge namespace (also
under the mirror host names the plan's nodes are told, here.boot.mirrors), and powers on one machine per node
with the user-data the plan renders (plan.head.user_data / plan.worker.user_data),
gzip and base64 exactly as the realizers hand it to the cloud (components.realizers.encoding); a plan whose bucket is a
directory (the local cloud's) gets it mounted into every machine instead of the store. Leaving the block
ends every machine and process and deletes the namespaces, also after a failure; the run's directory (machines'
disks, service logs) stays for the report until `keep` is false.

What each machine's disk gets before its first boot besides the image is listed in `_disk_files`: the image's
datasource setting, the harness's static network (cloud-init must not replace the address), the VPC's resolver,
the run's CA in the system store, pip's and apt's mirrors (unless `internet` is false: the blocked-internet drill),
the key the harness's archive is signed with, with GF_FAKE_GPU the GPU stack (here.boot.gpu) and, where the boot runs
the monitor for real, Docker's settings (here.boot.docker). None of it is in user-data, which stays as the plan
renders it. A killed run leaves nothing the next one does not sweep (here.boot.lifetime).

The monitor runs for real (`monitor`: a bake, and nodes booted from a baked image, by default) with the monitor's
packages in the apt mirror and its images in a registry stand-in (here.boot.registry). Other boots get neither: their
monitor stops at once on apt (docker.io is not in the mirror), as it always has, and nothing waits on it.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clouds import booted_profile
from components.realizers.encoding import gzip_base64
from here.boot import (
    apt,
    baked,
    clouds,
    docker,
    fetched,
    gpu,
    lifetime,
    mirrors,
    network,
    pypi,
    registry,
    rootfs,
    store,
    storelog,
    tls,
    vpc,
)
from here.boot.machine import Machine, MachineConfig, cgroup_path
from here.local.cloudconfig import document
from here.metadata import state as metadata
from here.metadata.state import Instance
from plan import bundle
from plan.model import ClusterPlan

REPO = Path(__file__).resolve().parents[2]
RUNS = rootfs.CACHE / "runs"
# The driver and CUDA of AWS's Deep Learning AMI (image: auto): its 2026 releases ship 580.x / 595.x drivers.
DLAMI_DRIVER = "580.95.05"
DLAMI_CUDA = "12.8"
NETWORK_CFG = b"# gpufleet boot harness: the address is static (the plan's), not DHCP\nnetwork: {config: disabled}\n"


def node_settings(user_data: str) -> dict[str, str]:
    """The GF_* settings of rendered user-data's node.env (arrays as their shell text)."""
    env = next(f["content"] for f in document(user_data)["write_files"] if f["path"].endswith("/node.env"))
    settings = {}
    for line in env.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.startswith("GF_"):
            settings[key] = value if value.startswith("(") else shlex.split(value)[0] if value else ""
    return settings


def stand_in(plan: ClusterPlan) -> rootfs.Image:
    """The harness image that stands in for the plan's image, or for the one its baked image was baked from."""
    return rootfs.DLAMI if plan.cloud == "aws" and plan.image.has_drivers else rootfs.PLAIN


def lower(plan: ClusterPlan) -> Path:
    """The tree the plan's machines boot from: its baked image's (`fleet image build --boot`), else the stand-in's."""
    if not plan.image.baked:
        return rootfs.tree(stand_in(plan))
    tree = baked.tree(plan.image.ref)
    if tree is None:
        raise ValueError(f"image.baked: {plan.image.ref} is no image baked here; bake one with `fleet image build "
                         "--stack NAME --boot` and name the id it prints")
    return tree


def _array(settings: Mapping[str, str], *keys: str) -> tuple[str, ...]:
    """The items of node.env's bash arrays, in order."""
    return tuple(item for key in keys for item in shlex.split(settings.get(key, "()")[1:-1]))


def pip_packages(settings: Mapping[str, str]) -> tuple[str, ...]:
    """What a node may pip-install: the job's packages and its tools venv's (the store client, the cloud's API SDK)."""
    return _array(settings, "GF_PIP_PACKAGES", "GF_TOOLS")


def apt_packages(settings: Mapping[str, str], monitor: bool) -> tuple[str, ...]:
    """What the apt mirror serves: what the node scripts install, and the monitor's packages where it runs."""
    return (*apt.NODE_PACKAGES, *(_array(settings, "GF_MONITOR_PACKAGES") if monitor else ()))


@dataclass
class BootNode:
    """One booted node: its name and role, its instance as the metadata service knows it, settings, machine."""

    name: str
    role: str
    instance: Instance
    settings: dict[str, str]
    machine: Machine
    fake_gpu: gpu.FakeGpu | None


class Boot:
    """One harness run for a plan: the head and `workers` workers, booted at once."""

    def __init__(self, plan: ClusterPlan, *, workers: int = 1, fake_gpu: bool | None = None,
                 driver: str | None = None, lifecycle: Mapping[str, str] | None = None,
                 directory: Path | None = None, keep: bool = True, internet: bool = True,
                 monitor: bool | None = None,
                 files: Mapping[str, Mapping[str, tuple[bytes, int]]] | None = None) -> None:
        if node_settings(plan.head.user_data)["GF_LOCAL"] == "1":
            raise ValueError("a local-mode plan's nodes are processes, not machines: plan it with booted=True")
        self.plan = plan
        self.cloud = booted_profile(plan.cloud)
        clouds.hypervisor(self.cloud)  # a cloud the harness cannot play fails here, before anything is made
        self.roles = ("head", *("worker",) * workers)
        self.fake_gpu = gpu.enabled() if fake_gpu is None else fake_gpu
        self.driver = driver  # the fake GPU stack's driver instead of the image's (e.g. the plan's pin)
        self.lifecycle = dict(lifecycle or {})
        self.tag = "gfb" + secrets.token_hex(2)
        self.directory = directory or RUNS / self.tag
        self.keep = keep
        # False: the blocked-internet drill. Nothing stands in for the internet's package hosts (no pip.conf or
        # sources.list of the harness's): a node fetches only from the mirror hosts its plan names (here.boot.mirrors).
        self.internet = internet
        # The monitor for real: its packages in the apt mirror, its images in the registry stand-in, Docker's settings
        # on the disks. By default for nodes booted from a baked image, which hold them; a bake asks for it.
        self.monitor = plan.image.baked if monitor is None else monitor
        # node name -> files laid on its disk over the image before its first boot (path -> content, mode): a test's
        # change to one node's image, e.g. an image.json from an older bake.
        self.files = dict(files or {})
        self.nodes: list[BootNode] = []
        self.shares: dict[str, Path] = {}  # path on every machine -> this machine's directory mounted there
        self.net: network.BootNetwork | None = None
        self.mirrors: dict[Path, Path] = {}  # a mirror's log -> the directory it serves (here.boot.fetched)
        self._stack = contextlib.ExitStack()

    @property
    def state(self) -> Path:
        """The metadata service's state directory (spot notices, lifecycle states)."""
        return self.directory / "metadata"

    def node(self, name: str) -> BootNode:
        return next(n for n in self.nodes if n.name == name)

    def store_requests(self) -> list[dict]:
        """What the nodes asked of the store (and, on AWS, of EC2 and Auto Scaling) so far, one dict per request
        (here.boot.storelog), oldest first; none where the bucket is a directory."""
        return storelog.read(self.directory / storelog.NAME)

    def __enter__(self) -> Boot:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def _start(self) -> None:
        plan = self.plan
        tree = lower(plan)  # first: a baked image that is not here stops the run before anything is made
        lifetime.sweep(RUNS)
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.keep:
            self._stack.callback(shutil.rmtree, self.directory, True)
        service = metadata.listener(self.cloud)
        addresses = (service.address, *((registry.ADDRESS,) if self.monitor else ()))
        self.net = network.plan_network(self.tag, plan, self.roles, self.directory, addresses)
        lay = self.net.layout
        lifetime.record(self.directory, [lay.bridge_namespace, *(n.namespace for n in lay.nodes)],
                        [cgroup_path(self._machine_name(n.name)) for n in lay.nodes], self.keep)
        self._stack.callback(network.delete, self.net)
        network.create(self.net, plan.network.mtu)
        gateway = self.net.gateway

        endpoints = (*store.endpoints(plan), *store.api_endpoints(plan))
        user_data = {"head": plan.head.user_data, "worker": plan.worker.user_data}
        settings = {role: node_settings(text) for role, text in user_data.items()}
        registries = self._registries(settings["head"]) if self.monitor else ()
        certs = tls.issue(self.directory / "tls", (*endpoints, *registries), gateway)
        bucket = self.directory / "bucket"
        shared = store.shared_directory(plan)
        if shared:  # the bucket is a directory every machine mounts: the bundle goes in it
            self.shares = {shared: bucket}
            bundle.write_bundle((bucket / plan.storage.code_key).parent, plan.storage.code_sha256)
        else:
            # Raises when the plan's code_sha256 is not a bundle of this checkout (a plan rendered from other sources).
            code = bundle.write_bundle(bucket, plan.storage.code_sha256)
            seed = self.directory / "store-seed.json"
            seed.write_text(json.dumps(store.seed(plan, code)))
            self._service("store", [sys.executable, "-m", "here.boot.store", gateway, str(certs.cert),
                                    str(certs.key), str(certs.ca), str(seed), str(self.directory / storelog.NAME)],
                          timeout=120)

        packages = pip_packages(settings["head"])
        index = pypi.wheelhouse(packages) if packages else None
        image = stand_in(plan)
        repository = apt.repository(image, apt_packages(settings["head"], self.monitor))
        archive = apt.archive(repository) if settings["head"].get("GF_MIRRORS_APT") else None
        site = mirrors.site(self.directory, settings["head"], index, archive, stand_in=self.internet)
        self._service("mirrors", mirrors.serve_command(site, gateway), ready=None)
        self.mirrors[self.directory / "mirrors.log"] = site
        if self.internet:
            self._service("apt", apt.serve_command(repository, gateway), ready=None)
            self.mirrors[self.directory / "apt.log"] = repository
        if self.monitor:
            images = registry.build(self.directory / "registry", _array(settings["head"], "GF_MONITOR_IMAGES"),
                                    registry.busybox())
            self._service("registry", registry.serve_command(images, certs.cert, certs.key))
            self.mirrors[self.directory / "registry.log"] = images
        instances = []
        for index, lay_node in enumerate(self.net.layout.nodes):
            role = lay_node.role
            inst = clouds.instance(self.cloud, f"{self.tag}-{index}", private_ip=lay_node.address,
                                   mac=network.mac(lay_node.namespace), instance_type=plan.instance.name,
                                   region=plan.region, zone=plan.zone, image_id=plan.image.ref,
                                   role=role, role_name=f"{plan.name}-node",
                                   user_data_b64=gzip_base64(user_data[role]),
                                   spot=(plan.worker if role == "worker" else plan.head).spot)
            instances.append(inst)
            fake = self._fake_gpu(settings[role], image) if self.fake_gpu and int(settings[role]["GF_GPUS"]) else None
            self.nodes.append(BootNode(name=lay_node.name, role=role, instance=inst, settings=settings[role],
                                       machine=None, fake_gpu=fake))  # type: ignore[arg-type]
        metadata.write(self.state, self.cloud, instances, [service])
        for node in self.nodes:
            if node.name in self.lifecycle:
                metadata.set_lifecycle_state(self.state, node.instance.instance_id, self.lifecycle[node.name])
        self._service("metadata", [sys.executable, "-m", "here.metadata.service", str(self.state)])
        names = (dict.fromkeys((*endpoints, *mirrors.hosts(settings["head"])), gateway)
                 | dict.fromkeys(registries, registry.ADDRESS) | metadata.host_names(self.cloud))
        self._service("dnsmasq", vpc.dnsmasq_command(
            self.directory / "vpc", ipaddress.IPv4Network(plan.network.private.cidr), gateway,
            self.net.layout.bridge, plan.network.mtu, {i.mac: (i.private_ip, i.hostname) for i in instances}, names),
            ready=None)

        for node, lay_node in zip(self.nodes, self.net.layout.nodes, strict=True):
            files = self._disk_files(node, certs, tree)
            config = MachineConfig(name=self._machine_name(node.name), namespace=lay_node.namespace, lower=tree,
                                   directory=self.directory / "machines" / node.name,
                                   dmi=clouds.dmi(self.cloud, node.instance),
                                   files=files, links=gpu.links() if node.fake_gpu else {},
                                   gpus=node.fake_gpu.count if node.fake_gpu else 0, shares=self.shares)
            node.machine = self._stack.enter_context(Machine(config))

    def _registries(self, settings: Mapping[str, str]) -> tuple[str, ...]:
        """The registry hosts the stand-in answers as: the plan's Docker Hub mirror and, unless the internet is
        blocked, Docker Hub and the registries the images name."""
        mirror = settings.get("GF_MIRRORS_REGISTRY", "")
        images = _array(settings, "GF_MONITOR_IMAGES") if self.internet else ()
        return registry.hosts(images, mirror)

    def _machine_name(self, node: str) -> str:
        return f"{self.tag}-{node}"

    def _fake_gpu(self, settings: Mapping[str, str], image: rootfs.Image) -> gpu.FakeGpu:
        count = int(settings["GF_GPUS"])
        model = self.plan.instance.gpu_model
        if image is rootfs.DLAMI:
            return gpu.FakeGpu(count, model, self.driver or DLAMI_DRIVER, DLAMI_CUDA)
        return gpu.FakeGpu(count, model, self.driver or settings["GF_SOFTWARE_DRIVER"], settings["GF_SOFTWARE_CUDA"])

    def _disk_files(self, node: BootNode, certs: tls.Certificates, lower: Path) -> dict[str, tuple[bytes, int]]:
        gateway = self.net.gateway
        hosts = ["127.0.0.1 localhost", f"{node.instance.private_ip} {node.instance.hostname}"]
        ca = certs.ca.read_bytes()
        system_store = (lower / "etc/ssl/certs/ca-certificates.crt").read_bytes()
        files = {
            "/etc/cloud/cloud.cfg.d/90-gpufleet-boot-datasource.cfg": (clouds.datasources(self.cloud).encode(), 0o644),
            "/etc/cloud/cloud.cfg.d/99-gpufleet-boot-network.cfg": (NETWORK_CFG, 0o644),
            "/etc/hosts": (("\n".join(hosts) + "\n").encode(), 0o644),
            "/etc/resolv.conf": (f"nameserver {gateway}\n".encode(), 0o644),
            "/usr/local/share/ca-certificates/gpufleet-boot.crt": (ca, 0o644),
            "/etc/ssl/certs/ca-certificates.crt": (system_store + ca, 0o644),
        }
        if self.internet:  # the image's own pip and apt settings, which name the internet's hosts, stand-ins for them
            files["/etc/pip.conf"] = (pypi.pip_conf(gateway), 0o644)
            files["/etc/apt/sources.list"] = (apt.sources_list(gateway), 0o644)
        if node.settings.get("GF_MIRRORS_APT"):  # the harness's archive is signed as the distribution's is
            files["/etc/apt/trusted.gpg.d/gpufleet-boot-mirror.asc"] = (apt.trusted_key(), 0o644)
        user_data = base64.b64decode(node.instance.user_data_b64)
        files |= clouds.seed(self.cloud, node.instance, user_data)
        if node.fake_gpu:
            files |= gpu.files(node.fake_gpu)
        if self.monitor:
            files |= docker.files()
        return files | dict(self.files.get(node.name, {}))

    def _service(self, name: str, cmd: list[str], ready: str | None = "ready", timeout: float = 30) -> None:
        """A process in the bridge namespace for the whole run; waits for its "ready" line when it prints one."""
        log = self.directory / f"{name}.log"
        proc = subprocess.Popen(["ip", "netns", "exec", self.net.namespace, *cmd], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, stderr=open(log, "w"), start_new_session=True,  # noqa: SIM115
                                preexec_fn=lifetime.die_with_parent)
        self._stack.callback(_end, proc)
        if ready is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} ended at start:\n{log.read_text()[-2000:]}")
            readable, _, _ = select.select([proc.stdout], [], [], 0.5)
            if readable and proc.stdout.readline().strip() == ready:
                return
        raise RuntimeError(f"{name} was not ready in {timeout:.0f} s:\n{log.read_text()[-2000:]}")

    def fetched_outside(self) -> dict[str, int]:
        """Bytes each node fetched from outside the cluster's network so far (here.boot.fetched)."""
        sent = fetched.by_address(self.mirrors)
        return {node.name: sent[node.instance.private_ip] for node in self.nodes}

    def spot_notice(self, name: str, warning_s: float = 120) -> None:
        metadata.set_spot_notice(self.state, self.node(name).instance.instance_id, warning_s)

    def set_lifecycle(self, name: str, value: str) -> None:
        metadata.set_lifecycle_state(self.state, self.node(name).instance.instance_id, value)


def _end(proc: subprocess.Popen) -> None:
    """The service and anything it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
