"""The cloud as one `pulumi up`'s steps leave it, step after step, and what must hold after every step: an ENI on at
most one node; a fixed private address held by one node at a time; a name the cloud holds once held once; every node's
user-data (and every launch template's or configuration's) naming a code bundle that exists; each scaling group at the
size its plan says. What the model tracks of each resource type is its table's `model` (components/<cloud>/
forcing.yaml): nodes, launch settings, groups, ENIs and their attachments, code bundles."""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleet.update.engine import CREATE, DELETE, DELETE_REPLACED, REPLACE, UPDATE, Held, Step
from fleet.update.forcing import rule

# How user-data names its code bundle (plan/bootstrap.py renders the plan's code URI into node.env and node.json).
BUNDLE_KEY = re.compile(r"code/[0-9a-f]{64}\.tar\.gz")

Ref = tuple[str, int]


@dataclass(frozen=True)
class GroupSize:
    """What the plan says of a scaling group's size: `desired` when made; after that `desired` again, unless a scaling
    policy owns the size (`policy`), which keeps it between the bounds."""

    minimum: int
    desired: int
    maximum: int
    policy: bool


@dataclass
class Thing:
    """One resource as it exists in the cloud."""

    name: str
    key: str
    generation: int
    token: str
    inputs: Mapping[str, Any]
    refs: Mapping[str, tuple[Ref, ...]]
    retained: bool
    user_data: str | None = None  # a node: what it booted with
    size: int | None = None  # a group: how many nodes it holds
    said: GroupSize | None = None  # a group: its size as the plan it was last made or changed by says
    made_now: bool = False  # created in the update being checked
    changed_now: bool = False  # created or changed in the update being checked
    edges: frozenset[str] = frozenset()  # the resources it depends on (their keys)

    @property
    def ref(self) -> Ref:
        return self.key, self.generation

    @property
    def model(self) -> Mapping[str, Any]:
        return rule(self.token).model


def decoded(user_data: str) -> str:
    """User-data as the node reads it: gzip+base64 as the realizers hand it over, or the text itself."""
    try:
        return gzip.decompress(base64.b64decode(user_data, validate=True)).decode()
    except (binascii.Error, OSError, ValueError):
        return user_data


def _path(value: Any, path: str) -> list[Any]:
    """The values at a dotted path, through lists (`networkInterfaces.privateIpAddress`)."""
    values = [value]
    for part in path.split("."):
        found = []
        for item in values:
            for each in item if isinstance(item, list) else [item]:
                if isinstance(each, Mapping) and each.get(part) is not None:
                    found.append(each[part])
        values = found
    return [item for value in values for item in (value if isinstance(value, list) else [value])]


@dataclass
class Cloud:
    """The live resources, by (key, generation), and the plan's word on each group's size (by resource name): a
    group made or changed by a step is held to the plan of that update, one no step touched to the plan it was
    last made or changed by."""

    things: dict[Ref, Thing] = field(default_factory=dict)
    sizes: Mapping[str, GroupSize] = field(default_factory=dict)
    moved: list[str] = field(default_factory=list)  # what the last step did that no state shows (a shrunk group)

    @classmethod
    def of(cls, state: Iterable[Held], sizes: Mapping[str, GroupSize] | None = None) -> Cloud:
        """The cloud a deployed state describes (every resource made, each group at its plan's desired size)."""
        cloud = cls(sizes=sizes or {})
        state = list(state)
        generation = {held.key: held.generation for held in state}
        for held in state:
            if held.resource.custom:
                refs = {key: tuple((name, generation[name]) for name in names if name in generation)
                        for key, names in held.resource.property_dependencies.items()}
                cloud.make(held, refs)
        cloud.start()
        return cloud

    def start(self) -> None:
        """A new `pulumi up` begins: nothing of it is made yet."""
        for thing in self.things.values():
            thing.made_now = thing.changed_now = False

    def lose(self, name: str) -> None:
        """A node gone outside Pulumi (released, reclaimed): it, and the ENIs the cloud releases with it, leave."""
        gone = [thing for thing in self.things.values() if thing.name == name]
        released = [eni for eni in self._enis_of({thing.ref for thing in gone})
                    if eni.model.get("releasedWithNode") and eni.inputs.get(eni.model["releasedWithNode"])]
        for thing in (*gone, *released):
            self.things.pop(thing.ref, None)
        self._drop_dangling_attachments()

    def apply(self, step: Step) -> list[str]:
        """Carry out one step; what no longer holds after it."""
        if not step.held.resource.custom:
            return []
        if step.op in (CREATE, REPLACE):
            self.make(step.held, step.refs)
        elif step.op == UPDATE:
            self.change(step.held, step.refs, step.why)
        elif step.op in (DELETE, DELETE_REPLACED):
            self.remove(step.held)
        moved, self.moved = self.moved, []
        return [f"after `{step}`: {problem}" for problem in (*moved, *self.problems())]

    def make(self, held: Held, refs: Mapping[str, tuple[Ref, ...]]) -> None:
        resource = held.resource
        thing = Thing(resource.name, resource.key, held.generation, resource.type, resource.inputs, refs,
                      resource.retain_on_delete, made_now=True, changed_now=True, edges=frozenset(resource.edges()))
        model = thing.model
        if model.get("kind") == "node":
            thing.user_data = self._launch_value(thing, "userData")
        if model.get("kind") == "group":
            desired = resource.inputs.get(model["desired"])
            thing.size = self._clamped(thing, desired if desired is not None else resource.inputs[model["min"]])
            thing.said = self.sizes.get(thing.name)
        self.things[thing.ref] = thing

    def change(self, held: Held, refs: Mapping[str, tuple[Ref, ...]], changed: Iterable[str]) -> None:
        thing = self.things[(held.key, held.generation)]
        thing.inputs, thing.refs, thing.retained = held.resource.inputs, refs, held.resource.retain_on_delete
        thing.changed_now, thing.edges = True, frozenset(held.resource.edges())
        model = thing.model
        if model.get("kind") == "group":
            desired = thing.inputs.get(model["desired"])
            before = thing.size
            thing.size = self._clamped(thing, desired if model["desired"] in changed and desired is not None
                                       else thing.size)
            thing.said = self.sizes.get(thing.name)
            if thing.said and thing.said.policy and thing.size < before:
                self.moved.append(f"{_show(thing.ref)} went from {before} to {thing.size} node(s): its scaling "
                                  "policy owns the size and never scales in, so the update took ranks from the job")

    def remove(self, held: Held) -> None:
        thing = self.things.get((held.key, held.generation))
        if thing is None or thing.retained:
            return
        del self.things[thing.ref]
        if thing.model.get("kind") == "node":
            for eni in self._enis_of({thing.ref}):
                if eni.model.get("releasedWithNode") and eni.inputs.get(eni.model["releasedWithNode"]):
                    del self.things[eni.ref]

    def _clamped(self, group: Thing, size: int) -> int:
        model = group.model
        return max(group.inputs[model["min"]], min(group.inputs[model["max"]], size))

    def _launch_value(self, node: Thing, what: str) -> str | None:
        """A node's own value of `what` (user-data, fixed address), or its launch template's."""
        own = node.model.get(what)
        if own and node.inputs.get(own) is not None:
            return node.inputs[own]
        for key in _listed(node.model.get("template")):
            for ref in node.refs.get(key, ()):
                template = self.things.get(ref)
                if template is not None and template.model.get(what):
                    values = _path(template.inputs, template.model[what])
                    if values:
                        return values[0]
        return None

    def _attachments(self) -> list[Thing]:
        return [thing for thing in self.things.values() if thing.model.get("kind") == "eni-attachment"]

    def _enis_of(self, nodes: set[Ref]) -> list[Thing]:
        found = []
        for attachment in self._attachments():
            model = attachment.model
            if set(attachment.refs.get(model["node"], ())) & nodes:
                found += [self.things[ref] for ref in attachment.refs.get(model["eni"], ()) if ref in self.things]
        return found

    def _drop_dangling_attachments(self) -> None:
        """An attachment whose node or ENI the cloud released is gone with them."""
        for attachment in self._attachments():
            model = attachment.model
            ends = [*attachment.refs.get(model["node"], ()), *attachment.refs.get(model["eni"], ())]
            if any(ref not in self.things for ref in ends):
                del self.things[attachment.ref]

    def problems(self) -> list[str]:
        return [*self._eni_problems(), *self._address_problems(), *self._name_problems(), *self._bundle_problems(),
                *self._size_problems()]

    def _eni_problems(self) -> list[str]:
        problems = []
        holders: dict[Ref, set[Ref]] = {}
        for attachment in self._attachments():
            model = attachment.model
            for eni in attachment.refs.get(model["eni"], ()):
                for node in attachment.refs.get(model["node"], ()):
                    holders.setdefault(eni, set()).add(node)
                    if eni not in self.things:
                        problems.append(f"{_show(attachment.ref)} attaches ENI {_show(eni)}, which does not exist")
                    if node not in self.things:
                        problems.append(f"{_show(attachment.ref)} attaches to {_show(node)}, which does not exist")
        problems += [f"ENI {_show(eni)} is attached to {len(nodes)} nodes: "
                     f"{', '.join(sorted(map(_show, nodes)))}" for eni, nodes in holders.items() if len(nodes) > 1]
        return problems

    def _address_problems(self) -> list[str]:
        held: dict[str, list[Ref]] = {}
        for node in self.things.values():
            if node.model.get("kind") == "node" and (address := self._launch_value(node, "privateIp")):
                held.setdefault(address, []).append(node.ref)
        return [f"the fixed address {address} is asked for by {len(nodes)} nodes: "
                f"{', '.join(sorted(map(_show, nodes)))}" for address, nodes in held.items() if len(nodes) > 1]

    def _name_problems(self) -> list[str]:
        seen: Counter[tuple[str, str, str, Any]] = Counter()
        for thing in self.things.values():
            for name_field, scope in rule(thing.token).unique.items():
                value = thing.inputs.get(name_field)
                if value is None:
                    continue  # named by the bridge: a new suffix per resource
                where = scope if scope not in thing.inputs else (thing.refs.get(scope) or thing.inputs[scope])
                seen[(thing.token, name_field, repr(where), value)] += 1
        return [f"{token.rsplit(':', 1)[-1]} {name_field} {value!r} is held {count} times (unique per "
                f"{rule(token).unique[name_field]})" for (token, name_field, _, value), count in seen.items()
                if count > 1]

    def _bundle_problems(self) -> list[str]:
        """Every node's and launch setting's bundle exists; one made in this update besides exists first under any
        order the engine may take (the engine runs steps nothing orders at once): the node depends on it."""
        bundles = {thing.inputs.get(thing.model["key"]): thing for thing in self.things.values()
                   if thing.model.get("kind") == "bundle"}
        problems = []
        for thing in self.things.values():
            kind = thing.model.get("kind")
            user_data = thing.user_data if kind == "node" else (
                thing.inputs.get(thing.model["userData"]) if kind == "launch-settings" else None)
            if user_data is None:
                continue
            for key in sorted(set(BUNDLE_KEY.findall(decoded(user_data)))):
                bundle = bundles.get(key)
                if bundle is None:
                    problems.append(f"{_show(thing.ref)}'s user-data names the code bundle {key}, which does not "
                                    "exist")
                elif thing.changed_now and bundle.made_now and not self._depends(thing, bundle.key):
                    problems.append(f"{_show(thing.ref)} may boot before the code bundle {key} its user-data names "
                                    "exists: nothing orders its step after the bundle's")
        return problems

    def _depends(self, thing: Thing, key: str) -> bool:
        """Whether `thing` depends on the resource `key`, directly or through others."""
        edges = {t.key: t.edges for t in self.things.values()}
        seen, todo = set(), set(thing.edges)
        while todo:
            current = todo.pop()
            if current == key:
                return True
            seen.add(current)
            todo |= set(edges.get(current, ())) - seen
        return False

    def _size_problems(self) -> list[str]:
        problems = []
        for thing in self.things.values():
            said = thing.said
            if thing.model.get("kind") != "group" or said is None:
                continue
            if thing.made_now or not said.policy:
                if thing.size != said.desired:
                    made = "made with" if thing.made_now else "holds"
                    problems.append(f"{_show(thing.ref)} {made} {thing.size} node(s); its plan says {said.desired}")
            elif not said.minimum <= thing.size <= said.maximum:
                problems.append(f"{_show(thing.ref)} holds {thing.size} node(s), outside its plan's "
                                f"{said.minimum}-{said.maximum}")
        return problems


def _listed(value: Any) -> list[str]:
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def _show(ref: Ref) -> str:
    return f"{ref[0].rsplit('::', 1)[-1]}#{ref[1]}"
