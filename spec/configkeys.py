"""Which config keys a stack may hold besides the cluster: every key in gpufleet's namespace is one gpufleet reads,
and no provider key carries credentials in plain text or points the provider at another endpoint, or at plain HTTP.

A stack file is committed: a secret written in it is published, and an endpoint override sends the deploy's
credentials and the whole cluster's resources wherever it points. The providers' keys are those of the packages this
project pins (their `config/vars.py`, docs/cloud-facts.md#provider-config-keys).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from spec.errors import Problem

CLUSTER_KEY = "gpufleet:cluster"
# The key that once made a stack a bake (`fleet image build` now runs the bake as a program of its own,
# components/bake_program.py): refused wherever it is written, since `pulumi up` of a cluster's stack holding it would
# have replaced the cluster with one bake machine.
BAKE_KEY = "gpufleet:bake"
NAMESPACE = "gpufleet"


def bake_key_problem() -> Problem:
    return Problem(BAKE_KEY, "makes a stack a bake, which only `fleet image build` runs, as a program of its own: in a "
                   "cluster's stack, `pulumi up` would replace the cluster with one bake machine.",
                   "remove it; `fleet image build --stack NAME` bakes the stack's image.")


@dataclass(frozen=True)
class ProviderKeys:
    """One provider's config keys that gpufleet refuses in a stack file, and the environment it reads instead."""

    credentials: tuple[str, ...]  # refused unless encrypted (`{secure: ...}`, as `pulumi config set --secret` writes)
    endpoints: tuple[str, ...]  # refused whatever their value
    environment: str  # the variables the provider reads the credentials from
    insecure: str = ""  # a flag refused when true
    protocol: str = ""  # a key refused unless it says HTTPS


def _encrypted(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _provider(key: str, value: Any, keys: ProviderKeys) -> Iterator[Problem]:
    namespace, name = key.split(":", 1)
    if name in keys.credentials and not _encrypted(value):
        yield Problem(key, "holds a credential in plain text, in a file that is committed.",
                      f"remove it and set {keys.environment} in the environment `pulumi up` runs in, or store it "
                      f"encrypted: `pulumi config set --secret {key} ...`.")
    elif name in keys.endpoints:
        yield Problem(key, f"points the {namespace} provider at other endpoints: the deploy's credentials and every "
                      "resource of the cluster would go there.", "remove it; gpufleet uses the cloud's own endpoints.")
    elif name == keys.insecure and value not in (False, "false", None):
        yield Problem(key, "turns off TLS certificate checks for every call the provider makes.", "remove it.")
    elif name == keys.protocol and str(value).lower() != "https":
        yield Problem(key, f"is {value!r}: the provider would call the cloud's API without TLS.",
                      "remove it (HTTPS is the default).")


def config_key_problems(config: Mapping[str, Any], providers: Mapping[str, ProviderKeys]) -> list[Problem]:
    """Keys nothing would read (another gpufleet key, a key with no namespace), and provider keys that publish a
    credential or redirect the provider (`providers`: each provider's keys by its config namespace)."""
    problems = []
    for key, value in config.items():
        key = str(key)
        namespace = key.split(":", 1)[0] if ":" in key else None
        if namespace is None:
            problems.append(Problem(key, "has no namespace: Pulumi config keys are namespace:name, and gpufleet reads "
                                    f"only `{CLUSTER_KEY}` and the provider's region key.",
                                    f"move its settings under `{CLUSTER_KEY}`, or remove it."))
        elif key == BAKE_KEY:
            problems.append(bake_key_problem())
        elif namespace == NAMESPACE and key != CLUSTER_KEY:
            problems.append(Problem(key, f"is in gpufleet's namespace, but gpufleet reads only `{CLUSTER_KEY}`: this "
                                    "would be ignored.", f"move its settings under `{CLUSTER_KEY}`, or remove it "
                                    "(a note belongs in a YAML comment)."))
        elif (keys := providers.get(namespace)) is not None:
            problems += _provider(key, value, keys)
    return problems
