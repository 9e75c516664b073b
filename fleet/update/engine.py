"""A model of Pulumi's update engine: the ordered steps one `pulumi up` takes from a stack's state and the program's
registrations, as pulumi/pulumi's step generator takes them (pkg/resource/deploy/step_generator.go at 1b59498,
docs/cloud-facts.md#day-two-model), on the provider facts of the forcing table (fleet/update/forcing.py).

What it keeps of the engine: registrations are handled in the order the program makes them (a dependency always
first); a resource without state is created, one with state is diffed: its changed inputs (an input that takes a
replaced resource's output is changed too, as it is unknown in a preview), less those it ignores (`ignoreChanges`
puts the old value back), replace it where the provider forces a new one (ForceNew) or the program says so
(`replaceOnChanges`, a changed `replacementTrigger`, `--replace`), else update it. A replacement creates the new
resource first and deletes the old one after every registration, unless it is delete-before-replace: then the
dependents a replacement of it would replace are deleted first (each one whose input taking its output forces a
new one), then it, and each is created again when it registers. Resources the program no longer declares are
deleted at the end, with the replaced ones, dependents first. `--target` (with `--target-dependents`) and
`--exclude` (with `--exclude-dependents`) leave every other resource as the state holds it, old inputs and all:
those whose program differs are left stale; one the program declares new is not created.

A replacement is created with the program's inputs, ignored ones too (the engine checks the goal's own properties
before a replacement: step_generator.go L2003-2020, and for `--replace` L1321-1331); only an update keeps them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleet.update.forcing import rule

CREATE, UPDATE, REPLACE, DELETE_REPLACED, DELETE = "create", "update", "replace", "delete-replaced", "delete"


class EngineError(Exception):
    """What the engine refuses: a targeted resource that needs one the run does not create."""


def mock_id(name: str) -> str:
    """The id the preview's mocks give a resource (fleet/preview.py): a value naming it refers to it."""
    return f"{name}-id"


@dataclass(frozen=True)
class Declared:
    """One registration as the engine receives it (a fleet.preview record). It and every resource it names are
    known by their key, `<type>::<name>` (a URN's tail: a component and a resource may share a name)."""

    key: str
    name: str
    type: str
    parent: str | None
    custom: bool
    inputs: Mapping[str, Any]
    dependencies: tuple[str, ...] = ()
    property_dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    provider: str | None = None
    delete_before_replace: bool = False
    replace_on_changes: tuple[str, ...] = ()
    replacement_trigger: Any = None
    ignore_changes: tuple[str, ...] = ()
    retain_on_delete: bool = False
    replace_with: tuple[str, ...] = ()

    def edges(self) -> set[str]:
        """Every resource this one depends on: parent, dependencies, property dependencies, replaceWith, provider
        (pkg/resource/state.go GetAllDependencies)."""
        found = {self.parent, self.provider, *self.dependencies, *self.replace_with}
        found.update(key for keys in self.property_dependencies.values() for key in keys)
        return found - {None}


def key_of(type_: str, name: str) -> str:
    return f"{type_}::{name}"


def _plain(value: Any) -> Any:
    """Inputs as values to compare: an asset is its file (the bundle's is named by its content hash)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    path = getattr(value, "path", None)
    return {"asset": str(path)} if path is not None and not isinstance(value, str) else value


def declared(records: Iterable[Mapping[str, Any]]) -> list[Declared]:
    """A preview's records as the engine's registrations, each name they use resolved to a key: a parent to the
    component of that name, any other reference to the resource of that name (a component where there is none)."""
    records = list(records)
    by_name: dict[str, dict[bool, str]] = {}
    for record in records:
        by_name.setdefault(record["name"], {})[bool(record["options"]["custom"])] = key_of(record["type"],
                                                                                        record["name"])

    def resource(name: str) -> str:
        return by_name[name].get(True) or by_name[name][False]

    def component(name: str | None) -> str | None:
        return None if name is None else by_name[name].get(False) or by_name[name][True]

    result = []
    for record in records:
        options = record["options"]
        provider = options.get("provider")
        result.append(Declared(
            key=key_of(record["type"], record["name"]), name=record["name"], type=record["type"],
            parent=component(record["parent"]), custom=options["custom"], inputs=_plain(record["inputs"]),
            dependencies=tuple(map(resource, options.get("dependsOn", ()))),
            property_dependencies={key: tuple(map(resource, names))
                                   for key, names in options.get("propertyDependencies", {}).items()},
            provider=resource(provider.split("::")[-2]) if provider else None,
            delete_before_replace=bool(options.get("deleteBeforeReplace")),
            replace_on_changes=tuple(options.get("replaceOnChanges", ())),
            replacement_trigger=options.get("replacementTrigger"),
            ignore_changes=tuple(options.get("ignoreChanges", ())),
            retain_on_delete=bool(options.get("retainOnDelete")),
            replace_with=tuple(map(resource, options.get("replaceWith", ())))))
    return result


@dataclass(frozen=True)
class Held:
    """One resource in the stack's state; its generation counts the replacements it went through."""

    resource: Declared
    generation: int = 0

    @property
    def key(self) -> str:
        return self.resource.key

    @property
    def name(self) -> str:
        return self.resource.name


@dataclass(frozen=True)
class Up:
    """One `pulumi up`: everything, or narrowed by --target/--replace/--exclude."""

    targets: frozenset[str] = frozenset()
    replace: frozenset[str] = frozenset()
    excludes: frozenset[str] = frozenset()
    target_dependents: bool = False
    exclude_dependents: bool = False


@dataclass(frozen=True)
class Step:
    """One thing the engine does, in order: the resource as the step leaves it (as it was, for a delete), why (the
    inputs or the option behind an update or replacement), and the generation each of its references names now."""

    op: str
    held: Held
    why: tuple[str, ...] = ()
    refs: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)

    def __str__(self) -> str:
        because = f" ({', '.join(self.why)})" if self.why else ""
        return f"{self.op} {self.held.name}#{self.held.generation}{because}"


@dataclass(frozen=True)
class Outcome:
    """What one `pulumi up` did: its steps in order, the state it leaves, the resources it declared but did not
    create (untargeted) and those it left as they were although the program differs (stale)."""

    steps: tuple[Step, ...]
    state: tuple[Held, ...]
    skipped: tuple[str, ...]
    stale: tuple[str, ...]

    def ops(self, op: str) -> list[str]:
        return [step.held.name for step in self.steps if step.op == op]


def deployed(program: Iterable[Declared]) -> tuple[Held, ...]:
    """The state a first `pulumi up` of a program leaves: every resource at generation 0, in registration order."""
    return tuple(Held(resource) for resource in program)


def _references(value: Any, keys: Iterable[str]) -> set[str]:
    """The resources whose mock id a value (a replacement trigger) holds."""
    text = repr(value)
    return {key for key in keys if mock_id(key.rsplit("::", 1)[-1]) in text}


class _Run:
    def __init__(self, state: tuple[Held, ...], up: Up, seen: Mapping[str, int]) -> None:
        self.old = {held.key: held for held in state}
        self.order = [held.key for held in state]
        self.up = up
        self.new: dict[str, Held] = {}
        self.seen = seen
        self.generation = {held.key: held.generation for held in state}
        self.renewed: set[str] = set()  # created or replaced now: a dependent reading its id sees a new one
        self.recomputed: set[str] = set()  # updated with outputs the provider recomputes
        self.deleted_early: dict[str, tuple[str, ...]] = {}  # deleted by a delete-before-replace chain, and why
        self.condemned: list[Held] = []
        self.steps: list[Step] = []
        self.targets, self.excludes = set(up.targets), set(up.excludes)
        self.skipped: list[str] = []
        self.stale: list[str] = []

    def included(self, resource: Declared) -> bool:
        """Whether the run operates on it (isIncludedInOperation), growing the targeted or excluded set as the
        engine does: a dependent of one is one too, with --target-dependents/--exclude-dependents."""
        if self.up.targets:
            hit = resource.key in self.targets or (self.up.target_dependents and resource.edges() & self.targets)
            if hit:
                self.targets.add(resource.key)
            return bool(hit)
        if self.up.excludes:
            hit = resource.key in self.excludes or (self.up.exclude_dependents and resource.edges() & self.excludes)
            if hit:
                self.excludes.add(resource.key)
            return not hit
        return True

    def refs(self, resource: Declared) -> dict[str, tuple[tuple[str, int], ...]]:
        return {key: tuple((name, self.generation[name]) for name in names if name in self.generation)
                for key, names in resource.property_dependencies.items()}

    def emit(self, op: str, held: Held, why: Iterable[str] = ()) -> None:
        self.steps.append(Step(op, held, tuple(why), self.refs(held.resource)))

    def changed(self, prior: Declared, resource: Declared) -> set[str]:
        """The inputs that differ, with those taking a renewed resource's id or a recomputed output."""
        keys = set(prior.inputs) | set(resource.inputs)
        changed = {key for key in keys if prior.inputs.get(key) != resource.inputs.get(key)}
        changed |= {key for key, names in resource.property_dependencies.items()
                    if set(names) & (self.renewed | self.recomputed)}
        return changed - {path.split(".")[0] for path in resource.ignore_changes}

    def trigger_changed(self, prior: Declared, resource: Declared) -> bool:
        """shouldTriggerReplace: no trigger on either side is no change; one naming a renewed resource changes."""
        if prior.replacement_trigger is None or resource.replacement_trigger is None:
            return False
        moved = _references(resource.replacement_trigger, self.generation) & self.renewed
        return bool(moved) or prior.replacement_trigger != resource.replacement_trigger

    def register(self, resource: Declared) -> None:
        prior = self.old.get(resource.key)
        included = self.included(resource)
        if prior is not None and resource.key in self.deleted_early:
            self.renew(Held(resource, prior.generation + 1), REPLACE, self.deleted_early[resource.key])
        elif prior is None:
            if not included:
                self.skipped.append(resource.key)
                return
            if resource.edges() & set(self.skipped):
                raise EngineError(f"{resource.name} needs {sorted(resource.edges() & set(self.skipped))}, which this "
                                  "targeted run does not create")
            self.renew(Held(resource, self.seen.get(resource.key, -1) + 1), CREATE)
        elif not included:
            self.new[resource.key] = prior
            if (self.changed(prior.resource, resource) or self.trigger_changed(prior.resource, resource)
                    or set(resource.replace_with) & self.renewed):
                self.stale.append(resource.key)
        else:
            self.diff(prior, resource)

    def diff(self, prior: Held, resource: Declared) -> None:
        changed = self.changed(prior.resource, resource)
        why: tuple[str, ...] = ()
        if resource.key in self.up.replace:
            why = ("--replace",)
        elif set(resource.replace_with) & self.renewed:
            why = ("replaceWith",)
        elif self.trigger_changed(prior.resource, resource):
            why = ("replacementTrigger",)
        elif resource.custom:
            why = tuple(sorted(rule(resource.type).forcing(changed, resource.inputs)
                               | (changed & set(resource.replace_on_changes))))
        if not why:
            if resource.custom and changed:
                self.new[resource.key] = Held(resource, prior.generation)
                self.emit(UPDATE, self.new[resource.key], sorted(changed))
                if rule(resource.type).recomputed:
                    self.recomputed.add(resource.key)
            else:
                self.new[resource.key] = Held(resource, prior.generation)
            return
        if self.delete_first(resource):
            self.delete_chain(prior, why)
        else:
            self.condemned.append(prior)
        self.renew(Held(resource, prior.generation + 1), REPLACE, why)

    def delete_first(self, resource: Declared) -> bool:
        """The program's deleteBeforeReplace, or the bridge's: a `name` the program gives, not the autonamer
        (pulumi-terraform-bridge nameRequiresDeleteBeforeReplace)."""
        return resource.delete_before_replace or (rule(resource.type).autonamed and "name" in resource.inputs)

    def delete_chain(self, root: Held, why: tuple[str, ...]) -> None:
        """calculateDependentReplacements: each dependent (in the old state, transitively, not yet registered)
        whose input taking a resource of the chain's output forces a new one is deleted before the root, dependents
        first; then the root."""
        chain = {root.key}
        doomed: list[Held] = []
        for name in self.order:
            held = self.old[name]
            if name in self.new or name in self.deleted_early or not held.resource.custom:
                continue
            if not held.resource.edges() & chain:
                continue
            taking = {key for key, names in held.resource.property_dependencies.items() if set(names) & chain}
            forcing = rule(held.resource.type).forcing(taking - set(held.resource.ignore_changes),
                                                       held.resource.inputs)
            forcing |= taking & set(held.resource.replace_on_changes)
            if forcing:
                chain.add(name)
                doomed.append(held)
                self.deleted_early[name] = tuple(sorted(forcing))
        for held in reversed(doomed):
            self.emit(DELETE_REPLACED, held, self.deleted_early[held.key])
        self.emit(DELETE_REPLACED, root, why)

    def renew(self, held: Held, op: str, why: Iterable[str] = ()) -> None:
        self.new[held.key] = held
        self.generation[held.key] = held.generation
        self.renewed.add(held.key)
        self.emit(op, held, why)

    def finish(self, program: list[Declared]) -> Outcome:
        declared = {resource.key for resource in program}
        gone = [name for name in self.order if name not in declared]
        deleted = set()
        for name in gone:
            held = self.old[name]
            if self.up.targets and name not in self.targets and not (
                    self.up.target_dependents and held.resource.edges() & self.targets):
                self.new[name] = held
                continue
            if self.up.excludes and (name in self.excludes or (
                    self.up.exclude_dependents and held.resource.edges() & self.excludes)):
                self.new[name] = held
                continue
            deleted.add(name)
        condemned = {held.key: held for held in self.condemned}
        for name in reversed(self.order):
            if name in condemned:
                self.emit(DELETE_REPLACED, condemned[name])
            if name in deleted:
                self.emit(DELETE, self.old[name])
        ordered = [self.new[resource.key] for resource in program if resource.key in self.new]
        kept = [self.new[name] for name in self.order if name not in declared and name in self.new]
        return Outcome(tuple(self.steps), tuple(ordered + kept), tuple(self.skipped), tuple(self.stale))


def update(state: tuple[Held, ...], program: Iterable[Declared], up: Up = Up(),
           seen: Mapping[str, int] | None = None) -> Outcome:
    """The steps one `pulumi up` of `program` over `state` takes, in order, and the state it leaves. `seen`: the
    last generation of resources the state no longer holds (a refresh dropped them), so a new one is told apart."""
    program = list(program)
    run = _Run(state, up, seen or {})
    for resource in program:
        run.register(resource)
    return run.finish(program)


def without(state: tuple[Held, ...], keys: Iterable[str]) -> tuple[Held, ...]:
    """The state after a refresh found these resources gone (the provider's read cleared their ids)."""
    keys = set(keys)
    return tuple(held for held in state if held.key not in keys)

