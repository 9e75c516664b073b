"""Fabric layout: each node's fabric interfaces match what the catalog says its type has (EFA per network card,
eRDMA interfaces per type); types the catalog lacks are not judged."""

from __future__ import annotations

from collections.abc import Iterable

from policy.base import Inputs, known
from policy.readers import reader_for


def fabric_layout(kind: str, inputs: Inputs) -> Iterable[str]:
    reader = reader_for(kind)
    if reader is None or not known(inputs.get("instanceType")):
        return ()
    return reader.fabric_layout(kind, inputs)
