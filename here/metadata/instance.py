"""One instance as the metadata emulator knows it: what the state file records (here.metadata.state) and each cloud's
tree is built from (here.metadata.trees)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Instance:
    """One instance as its metadata service knows it."""

    instance_id: str
    private_ip: str
    mac: str  # "" where the node has no interface of its own (the local cluster's loopback mode)
    instance_type: str
    region: str
    zone: str
    image_id: str
    role: str  # the instance role whose credentials it serves; "" = none
    hostname: str
    user_data_b64: str  # what the realizer hands the cloud; the service serves it decoded, as the clouds do
    tokens_required: bool
    spot: bool
