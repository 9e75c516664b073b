"""CIDRs as networks, never as strings: parsed, normalised, and judged for how much of the internet they admit.

`0.0.0.0/00`, `0::0/0` and `10.0.0.0/255.255.0.0` are what they mean. The one judgement of "open to the internet"
here serves the spec (which stores canonical spellings), the plan (which marks the rules a stack opted in to) and the
policy (which refuses every other), so the three cannot disagree.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# A range wider than this (a shorter prefix) counts as the internet, and so does any set of ranges that together
# admit more internet addresses than one range of this size holds.
WIDEST_OPEN_PREFIX = 8
# Addresses no internet host has (docs/cloud-facts.md#limits-on-every-cloud: the IANA special-purpose registry's
# blocks that are not globally reachable, multicast and the reserved block).
NOT_INTERNET_V4 = tuple(ipaddress.collapse_addresses(map(ipaddress.IPv4Network, (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
    "240.0.0.0/4"))))
# IPv6 internet hosts are in the global unicast space IANA allocates from (2000::/3).
INTERNET_V6 = ipaddress.IPv6Network("2000::/3")


def parse_cidr(text: str, what: str = "a CIDR like 203.0.113.0/24") -> Network:
    """A CIDR as written in a stack, spaces around it ignored; ValueError saying what is wrong and the fix."""
    value = text.strip()
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as error:
        try:
            loose = ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValueError(f"{text!r} is not {what} ({error})") from None
        address = value.split("/", 1)[0]
        raise ValueError(f"{text!r} is not {what}: it has host bits set; write {loose} for the whole range, or "
                         f"{address}/{loose.max_prefixlen} for the one address") from None
    mapped = network.network_address.ipv4_mapped if network.version == 6 else None
    if mapped is not None and network.prefixlen >= 96:
        return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def normalised_cidr(text: str) -> str:
    """The canonical spelling of a CIDR: `0.0.0.0/00` is 0.0.0.0/0, `::ffff:203.0.113.0/120` is 203.0.113.0/24."""
    return str(parse_cidr(text))


def normalised_vpc_cidr(text: str) -> str:
    """A VPC range: an IPv4 CIDR in its canonical spelling."""
    what = "an IPv4 CIDR like 10.0.0.0/16"
    if "/" not in text:
        raise ValueError(f"{text!r} is not {what}: it has no prefix length; write the range, e.g. {text.strip()}/16")
    network = parse_cidr(text, what)
    if network.version != 4:
        raise ValueError(f"{text!r} is not {what}: a VPC's range is IPv4 (IPv6 blocks come from the cloud)")
    return str(network)


def _overlap(a: Network, b: Network) -> int:
    if a.version != b.version:
        return 0
    if a.subnet_of(b):
        return a.num_addresses
    return b.num_addresses if b.subnet_of(a) else 0


def internet_addresses(networks: Iterable[Network]) -> int:
    """How many internet hosts the union of these ranges admits (one address family)."""
    listed = list(networks)
    total = 0
    for network in ipaddress.collapse_addresses(n for n in listed if n.version == 4):
        total += network.num_addresses - sum(_overlap(network, other) for other in NOT_INTERNET_V4)
    for network in ipaddress.collapse_addresses(n for n in listed if n.version == 6):
        total += _overlap(network, INTERNET_V6)
    return total


def exposing(networks: Sequence[Network]) -> list[Network]:
    """Of these ingress ranges, those that open the cluster to the internet: each wider than a /8, and, in an address
    family where the others together admit more internet hosts than a /8 holds, all of those too."""
    wide = [n for n in networks if n.prefixlen < WIDEST_OPEN_PREFIX]
    found = list(wide)
    for version, bits in ((4, 32), (6, 128)):
        rest = [n for n in networks if n.version == version and n not in wide]
        if internet_addresses(rest) > 2 ** (bits - WIDEST_OPEN_PREFIX):
            found += rest
    return found


def network_of(text: object) -> Network | None:
    """A network as a resource input holds it (host bits allowed, as providers allow them), or None if it is none."""
    try:
        return ipaddress.ip_network(str(text).strip(), strict=False)
    except ValueError:
        return None
