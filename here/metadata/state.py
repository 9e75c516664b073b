"""What the metadata emulator serves, as files in one state directory, so that the harness and the local cluster
that write them, the tests and the server share no memory.

STATE/instances.json holds the cloud, the facts of its metadata service read from its profile (where the spot notice
and the session token are, the token's header and longest life), where the service listens and each instance. What
changes while the nodes run is a file per instance: STATE/<instance-id>/spot-notice and .../lifecycle-state.
"""

from __future__ import annotations

import ipaddress
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from here.metadata import trees
from here.metadata.instance import Instance
from plan.profile import CloudProfile

CONFIG = "instances.json"


@dataclass(frozen=True)
class Listener:
    """An address and port the service answers on: for one instance, or (instance_id None) for each instance by the
    address it asks from, as a cloud's link-local service does."""

    address: str
    port: int
    instance_id: str | None = None


def _path(url: str) -> list[str]:
    return [part for part in urlsplit(url).path.split("/") if part]


def _service(profile: CloudProfile) -> dict:
    """The profile's facts the service answers by; an unknown cloud or a missing fact is refused, named."""
    trees.dialect(profile.name)
    root, notice = _path(profile.metadata_url), _path(profile.spot_notice_url)
    if not root or notice[:len(root)] != root or len(notice) == len(root):
        raise ValueError(f"cloud '{profile.name}': its spot_notice_url {profile.spot_notice_url!r} is not under its "
                         f"metadata_url {profile.metadata_url!r}")
    token = None
    if profile.imds_token_header:
        if not profile.imds_token_url or profile.imds_token_max_ttl_s <= 0:
            raise ValueError(f"cloud '{profile.name}' names a metadata token header but no imds_token_url or "
                             "imds_token_max_ttl_s")
        token = {"path": "/" + "/".join(_path(profile.imds_token_url)), "header": profile.imds_token_header,
                 "max_ttl_s": profile.imds_token_max_ttl_s}
    return {"cloud": profile.name, "spot_notice": notice[len(root):], "token": token}


def listener(profile: CloudProfile) -> Listener:
    """Where the cloud's own service answers every instance: its metadata host's address, port 80 unless named."""
    url = urlsplit(profile.metadata_url)
    address = profile.metadata_hosts.get(url.hostname or "", url.hostname or "")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(f"cloud '{profile.name}': its metadata host {url.hostname!r} has no address "
                         "(CloudProfile.metadata_hosts)") from None
    return Listener(address, url.port or 80)


def host_names(profile: CloudProfile) -> dict[str, str]:
    """The metadata host names the cloud's URLs use -> their address, for the VPC's resolver."""
    urls = (profile.metadata_url, profile.spot_notice_url, profile.imds_token_url)
    return {name: profile.metadata_hosts[name] for url in urls if (name := urlsplit(url).hostname or "")
            in profile.metadata_hosts}


def write(state: Path, profile: CloudProfile, instances: list[Instance], listeners: list[Listener]) -> None:
    config = {**_service(profile), "listeners": [asdict(item) for item in listeners],
              "instances": [asdict(item) for item in instances]}
    state.mkdir(parents=True, exist_ok=True)
    (state / CONFIG).write_text(json.dumps(config))


def load(state: Path) -> dict:
    return json.loads((state / CONFIG).read_text())


def set_spot_notice(state: Path, instance_id: str, warning_s: float = 120) -> None:
    """The cloud's interruption notice for one instance, in that cloud's words (its notice path's leaf says which)."""
    body = trees.notice_body(load(state)["spot_notice"][-1], time.time() + warning_s)
    (state / instance_id).mkdir(parents=True, exist_ok=True)
    (state / instance_id / "spot-notice").write_text(body)


def clear_spot_notice(state: Path, instance_id: str) -> None:
    (state / instance_id / "spot-notice").unlink(missing_ok=True)


def set_lifecycle_state(state: Path, instance_id: str, value: str) -> None:
    """AWS warm pools: "Warmed:Stopped", "Warmed:Running", "InService"..."""
    (state / instance_id).mkdir(parents=True, exist_ok=True)
    (state / instance_id / "lifecycle-state").write_text(value)
