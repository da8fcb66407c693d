"""URNs the way the Pulumi engine forms them, and the aliases a registration carries, resolved to URNs.

Why: the engine matches a program's resources to the stack's state by URN, never by the object a
resource manages. A resource that moves to another parent or name gets a new URN; without an alias
naming its old URN, ``pulumi up`` creates the new one and deletes the old one, even when both are the
same Kubernetes object (TESTING.md, "Actors over time"). The review therefore needs the URNs the
engine would compute, not the mock monitor's: the mock puts ``pulumi:pulumi:Stack$`` in front of
top-level types and only the parent's last type in a child's (``pulumi/runtime/mocks.py`` ``make_urn``),
where the engine uses the parent's whole qualified type and nothing for the root stack
(``sdk/go/common/resource/urn.go`` ``NewURN``; ``pkg/resource/deploy/source_eval.go``, aliases).

Alias semantics followed here (pulumi ``Alias`` docstring and the engine's alias-spec handling): a spec's
missing name, type, project or stack default to the resource's own; its parent defaults to the
resource's current parent, ``noParent`` means the root stack; a child also inherits one alias per alias
of its parent (its own name and type under each of the parent's old URNs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.catalog.names import STACK_TYPE

_MOCK_ROOT_PREFIX = STACK_TYPE + "$"


@dataclass(frozen=True)
class UrnParts:
    """The pieces of ``urn:pulumi:<stack>::<project>::<qualified type>::<name>``."""

    stack: str
    project: str
    qualified_type: str
    name: str

    @property
    def type(self) -> str:
        """The resource's own type (the last of the qualified type's parts)."""
        return self.qualified_type.rsplit("$", 1)[-1]


def parse(urn: str) -> UrnParts:
    """The parts of a URN; the name may itself contain ``::``."""
    stack, project, qualified_type, *name = urn.removeprefix("urn:pulumi:").split("::")
    return UrnParts(stack, project, qualified_type, "::".join(name))


def make_urn(stack: str, project: str, parent: str | None, resource_type: str, name: str) -> str:
    """The engine's URN of a resource under ``parent`` (an engine URN, or None / the root stack: top level)."""
    qualified = resource_type
    if parent:
        parent_type = parse(parent).qualified_type
        if parent_type != STACK_TYPE:
            qualified = f"{parent_type}${resource_type}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def normalise(urn: str) -> str:
    """An engine URN from one the mock monitor or ``pulumi.create_urn`` made (the mock's root prefix dropped)."""
    parts = parse(urn)
    qualified = parts.qualified_type.removeprefix(_MOCK_ROOT_PREFIX)
    return f"urn:pulumi:{parts.stack}::{parts.project}::{qualified}::{parts.name}"


@dataclass(frozen=True)
class AliasSpec:
    """One alias as the program sent it: a whole URN, or a spec whose empty fields take the resource's own."""

    urn: str = ""
    name: str = ""
    type: str = ""
    stack: str = ""
    project: str = ""
    parent_urn: str = ""
    no_parent: bool = False

    @classmethod
    def from_wire(cls, alias: Mapping[str, Any]) -> AliasSpec:
        """From ``json_format.MessageToDict`` of an ``alias_pb2.Alias``."""
        if alias.get("urn"):
            return cls(urn=str(alias["urn"]))
        spec = alias.get("spec") or {}
        return cls(
            name=str(spec.get("name") or ""),
            type=str(spec.get("type") or ""),
            stack=str(spec.get("stack") or ""),
            project=str(spec.get("project") or ""),
            parent_urn=str(spec.get("parentUrn") or ""),
            no_parent=bool(spec.get("noParent")),
        )


class UrnBook:
    """Engine URNs of every registration so far, by the mock URN the program saw, and their resolved aliases."""

    def __init__(self, stack: str, project: str) -> None:
        self.stack, self.project = stack, project
        self._engine: dict[str, str] = {}
        self._aliases: dict[str, tuple[str, ...]] = {}

    def engine(self, urn: str) -> str:
        """The engine URN of a URN the program holds (a registered resource's, or one it built itself)."""
        return self._engine.get(urn) or normalise(urn)

    def register(self, mock_urn: str, parent: str, resource_type: str, name: str, aliases: Iterable[AliasSpec]) -> str:
        """Record one registration; returns its engine URN (its aliases are then ``aliases_of`` it)."""
        parent_urn = self.engine(parent) if parent else None
        urn = make_urn(self.stack, self.project, parent_urn, resource_type, name)
        self._engine[mock_urn] = urn
        resolved: list[str] = []
        for alias in aliases:
            if alias.urn:
                resolved.append(self.engine(alias.urn))
                continue
            old_parent = (
                None if alias.no_parent else (self.engine(alias.parent_urn) if alias.parent_urn else parent_urn)
            )
            resolved.append(
                make_urn(
                    alias.stack or self.stack,
                    alias.project or self.project,
                    old_parent,
                    alias.type or resource_type,
                    alias.name or name,
                )
            )
        for parent_alias in self._aliases.get(parent_urn or "", ()):  # inherited: the same child under the old parent
            resolved.append(make_urn(self.stack, self.project, parent_alias, resource_type, name))
        self._aliases[urn] = tuple(dict.fromkeys(a for a in resolved if a != urn))
        return urn

    def aliases_of(self, urn: str) -> tuple[str, ...]:
        """The old URNs an engine URN answers to (its own aliases and those inherited from its parents)."""
        return self._aliases.get(urn, ())


def urns_from_parents(resources: Sequence[Mapping[str, Any]], stack: str, project: str) -> list[str]:
    """Engine URNs of a ``resources.json`` that records no URN (an older preview): parents found by name.

    A parent is the nearest earlier registration of that name (a parent registers before its children).
    """
    urns: list[str] = []
    latest: dict[str, str] = {}
    for resource in resources:
        parent = resource.get("parent")
        parent_urn = latest.get(str(parent)) if parent else None
        urn = make_urn(stack, project, parent_urn, str(resource.get("type")), str(resource.get("name")))
        urns.append(urn)
        latest[str(resource.get("name"))] = urn
    return urns
