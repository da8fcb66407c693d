"""The schema engine of the GPU Operator values contracts: which Helm value paths a chart reads.

Why: the gpu-operator chart ships no ``values.schema.json`` and Helm silently ignores keys no
template reads. Values copied from blog posts (``daemonsets.nodeSelector``, ``driver.env`` as a
map, ``driver.useOpenKernelModules``) therefore do nothing, and nobody notices until a node
misbehaves. The program builds its Helm values as one dict and checks it against the pinned
chart's contract before Pulumi ever renders the chart. This module holds no chart-version data:
each chart version is a tree built from these nodes in its own module (``v26_7_0``, ...).

A contract is a tree of nodes:
- ``Keys``: a fixed set of child keys (anything else is a violation);
- ``FreeMap``: arbitrary keys below (labels, nodeSelector, affinity, a ConfigMap's ``data``);
- ``ListOf``: a list whose items all follow one node (tolerations, env as ``{name, value}``);
- ``Scalar``: a leaf with a cheap type check (bool for ``enabled``, str for ``version``);
- ``Ignored``: a key the chart knows but does not render; setting it is a violation with the reason;
- ``AnyValue``: anything (``extraObjects`` items, which may be templated strings).
``Contract.paths()`` flattens a tree to marker paths such as ``daemonsets.labels.*`` and
``validator.driver.env[].name`` for reading and diffing versions.

Two value conventions: ``None`` is Helm's "delete the chart default" and is accepted anywhere;
values of types that are not plain data (e.g. a ``pulumi.Output``) are only known at deploy time
and are not type-checked.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, TypeAlias

from components.catalog.gpu_operator_chart import CHART_NAME

# --------------------------------------------------------------------------------------------
# Contract nodes


@dataclass(frozen=True, eq=False)
class Scalar:
    """A leaf value. ``kinds`` are "bool", "str", "int", "float"; ``choices`` an enum if set.

    ``refused`` lists values that pass the type check but that the chart drops (value, reason).
    """

    kinds: tuple[str, ...]
    choices: tuple[object, ...] = ()
    refused: tuple[tuple[object, str], ...] = ()


@dataclass(frozen=True, eq=False)
class Keys:
    """A mapping with a fixed set of keys, in values.yaml order."""

    children: Mapping[str, Node]
    required: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, eq=False)
class FreeMap:
    """A mapping with arbitrary keys; ``values`` (if set) checks each entry's value."""

    values: Node | None = None
    what: str = "a mapping"


@dataclass(frozen=True, eq=False)
class ListOf:
    """A list whose items all follow ``item``; ``what`` describes it in messages."""

    item: Node
    what: str


@dataclass(frozen=True, eq=False)
class Ignored:
    """A key the chart lists or once had, but does not render: setting it does nothing."""

    reason: str


@dataclass(frozen=True, eq=False)
class AnyValue:
    """Anything goes (and nothing below is checked)."""


Node: TypeAlias = Scalar | Keys | FreeMap | ListOf | Ignored | AnyValue


@dataclass(frozen=True, order=True)
class Violation:
    """One bad value path. ``path`` is dotted with ``[i]`` for list indices."""

    path: str
    message: str

    def __str__(self) -> str:
        return self.message


class ContractViolationError(ValueError):
    """Raised by ``Contract.require_valid``; carries every violation, not just the first."""

    def __init__(self, chart_version: str, violations: Sequence[Violation]) -> None:
        self.chart_version = chart_version
        self.violations = tuple(violations)
        lines = "\n".join(f"- {v.message}" for v in self.violations)
        super().__init__(f"{len(self.violations)} value path(s) not accepted by {CHART_NAME} {chart_version}:\n{lines}")


Rule = Callable[[Mapping[str, Any]], Iterable[Violation]]

# --------------------------------------------------------------------------------------------
# Path helpers

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TOKEN = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d*)\]|(?:^|\.)([^.\[\]]+)')


def join_path(parent: str, key: str) -> str:
    """Append a key; keys with dots or other specials are quoted (``data["config.yaml"]``).

    Public so that a chart version's ``Rule`` names paths exactly as the key-tree checks do.
    """
    if _PLAIN_KEY.match(key):
        return f"{parent}.{key}" if parent else key
    return f'{parent}["{key}"]'


def _index(parent: str, i: int | None) -> str:
    return f"{parent}[{'' if i is None else i}]"


def _tokens(path: str) -> list[tuple[str, str]] | None:
    """Split a path into ("key", name) and ("index", "") tokens; None if it does not parse."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            return None
        if m.group(1) is not None:
            out.append(("key", m.group(1)))
        elif m.group(2) is not None:
            out.append(("index", m.group(2)))
        else:
            out.append(("key", m.group(3)))
        pos = m.end()
    return out


def _marker(path: str) -> str:
    """``validator.driver.env[0].name`` -> ``validator.driver.env[].name``."""
    return re.sub(r"\[\d+\]", "[]", path)


def _sort_key(path: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order: ``env[2]`` before ``env[10]``."""
    parts = re.split(r"(\[\d+\])", path)
    key: list[tuple[int, int, str]] = []
    for part in parts:
        if re.fullmatch(r"\[\d+\]", part):
            key.append((1, int(part[1:-1]), ""))
        elif part:
            key.append((0, 0, part))
    return tuple(key)


_PLAIN_TYPES = (bool, int, float, str, Mapping, list, tuple)
_KIND_WORDS = {"bool": "a boolean", "str": "a string", "int": "an integer", "float": "a number"}


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------------------
# The contract


@dataclass(frozen=True, eq=False)
class Contract:
    """The value paths one chart version accepts, and the checks built on them."""

    chart_version: str
    root: Keys
    subcharts: Mapping[str, str] = field(default_factory=dict)  # values key -> subchart version
    hints: Mapping[str, str] = field(default_factory=dict)  # marker path -> advice
    rules: tuple[Rule, ...] = ()

    # -- public API ---------------------------------------------------------------------------

    def violations(self, values: Mapping[str, Any]) -> list[Violation]:
        """Every path in ``values`` the chart does not accept, sorted by path (natural order)."""
        out: list[Violation] = []
        if not isinstance(values, Mapping):
            return [Violation("", f"Helm values must be a mapping, got {_kind(values)}")]
        self._check(self.root, values, "", out)
        for rule in self.rules:
            out.extend(rule(values))
        unique = {(v.path, v.message): v for v in out}
        return sorted(unique.values(), key=lambda v: (_sort_key(v.path), v.message))

    def require_valid(self, values: Mapping[str, Any]) -> None:
        """Raise ``ContractViolationError`` listing all violations, if there are any."""
        found = self.violations(values)
        if found:
            raise ContractViolationError(self.chart_version, found)

    def accepts(self, path: str) -> bool:
        """True if the chart reads ``path`` (``[0]``, ``[]`` and ``*`` work as list/map markers)."""
        tokens = _tokens(path)
        if not tokens:
            return False
        node: Node = self.root
        for kind, name in tokens:
            if isinstance(node, AnyValue):
                return True
            if isinstance(node, FreeMap) and kind == "key":
                node = node.values if node.values is not None else AnyValue()
            elif isinstance(node, Keys) and kind == "key" and name in node.children:
                node = node.children[name]
            elif isinstance(node, ListOf) and kind == "index":
                node = node.item
            else:
                return False
        return not isinstance(node, Ignored)

    def suggest(self, path: str) -> str | None:
        """The nearest accepted path: ``path`` itself if accepted, else a corrected key, else None.

        A misspelt key is matched against its siblings, case-insensitively
        (``driver.upgradepolicy`` -> ``driver.upgradePolicy``); a key at the wrong depth is
        matched against the same key elsewhere in the same block (``driver.drain`` ->
        ``driver.upgradePolicy.drain``).
        """
        if self.accepts(path):
            return path
        tokens = _tokens(path)
        if not tokens:
            return None
        node: Node = self.root
        prefix = ""
        for kind, name in tokens:
            if isinstance(node, Keys) and kind == "key" and name in node.children:
                if isinstance(node.children[name], Ignored):
                    return self._same_key_elsewhere(prefix, name, tokens)
                node, prefix = node.children[name], join_path(prefix, name)
            elif isinstance(node, ListOf) and kind == "index":
                node, prefix = node.item, _index(prefix, int(name) if name.isdigit() else None)
            elif isinstance(node, Keys) and kind == "key":
                close = self._close_key(name, node)
                if close is not None:
                    return join_path(prefix, close)
                return self._same_key_elsewhere(prefix, name, tokens)
            else:
                return None
        return None

    def paths(self) -> list[str]:
        """Every accepted path in marker form (``x.*`` free map, ``x[]`` list items)."""
        return list(self._paths)

    @cached_property
    def _paths(self) -> tuple[str, ...]:
        out: list[str] = []
        self._walk_paths(self.root, "", out)
        return tuple(out)

    # -- checking -----------------------------------------------------------------------------

    def _where(self, path: str) -> str:
        top = (_tokens(path) or [("key", "")])[0][1]
        if top in self.subcharts:
            return f"the {top} {self.subcharts[top]} subchart of {CHART_NAME} {self.chart_version}"
        return f"{CHART_NAME} {self.chart_version}"

    def _hint(self, path: str) -> str:
        return self.hints.get(_marker(path), "")

    def _check(self, node: Node, value: Any, path: str, out: list[Violation]) -> None:
        if value is None or isinstance(node, AnyValue):
            return
        if not isinstance(value, _PLAIN_TYPES):
            return  # e.g. a pulumi.Output: only known at deploy time
        if isinstance(node, Keys):
            self._check_keys(node, value, path, out)
        elif isinstance(node, FreeMap):
            if not isinstance(value, Mapping):
                out.append(Violation(path, f"`{path}` must be {node.what}, got {_kind(value)}"))
                return
            for key, sub in value.items():
                if not isinstance(key, str):
                    out.append(Violation(path, f"`{path}` keys must be strings, got {_shown(key)}"))
                elif node.values is not None:
                    self._check(node.values, sub, join_path(path, key), out)
        elif isinstance(node, ListOf):
            if not isinstance(value, list | tuple):
                extra = f" ({self._hint(path)})" if self._hint(path) else ""
                out.append(Violation(path, f"`{path}` must be {node.what}, got {_kind(value)}{extra}"))
                return
            for i, item in enumerate(value):
                self._check(node.item, item, _index(path, i), out)
        elif isinstance(node, Scalar):
            self._check_scalar(node, value, path, out)

    def _check_keys(self, node: Keys, value: Any, path: str, out: list[Violation]) -> None:
        if not isinstance(value, Mapping):
            wanted = "a mapping with keys " + ", ".join(sorted(node.children))
            out.append(Violation(path, f"`{path or '(values)'}` must be {wanted}; got {_kind(value)}"))
            return
        for key in sorted(node.required - set(value)):
            out.append(Violation(path, f"`{path}` is missing the required key `{key}`"))
        for key, sub in value.items():
            if not isinstance(key, str):
                out.append(Violation(path, f"`{path or '(values)'}` keys must be strings, got {_shown(key)}"))
                continue
            child_path = join_path(path, key)
            child = node.children.get(key)
            if child is None:
                out.append(Violation(child_path, self._unknown_key_message(child_path, path, node)))
            elif isinstance(child, Ignored):
                out.append(
                    Violation(
                        child_path,
                        f"`{child_path}` is ignored by {self._where(child_path)}: {child.reason}",
                    )
                )
            else:
                self._check(child, sub, child_path, out)

    def _unknown_key_message(self, path: str, parent: str, node: Keys) -> str:
        accepted = sorted(k for k, v in node.children.items() if not isinstance(v, Ignored))
        owner = f"`{_marker(parent)}`" if parent else "the top level"
        message = f"`{path}` is not a key of {self._where(path)}; {owner} accepts: {', '.join(accepted)}"
        hint = self._hint(path)
        if hint:  # curated advice beats a look-alike key (top-level nodeSelector is not operator's)
            return f"{message} ({hint})"
        suggestion = self.suggest(path)
        if suggestion is not None and suggestion != path:
            message += f"; did you mean `{suggestion}`?"
        return message

    def _check_scalar(self, node: Scalar, value: Any, path: str, out: list[Violation]) -> None:
        kind = _kind(value)
        accepted = set(node.kinds)
        if "float" in accepted:
            accepted.add("int")
        if kind not in accepted:
            wanted = " or ".join(_KIND_WORDS.get(k, k) for k in node.kinds)
            hint = ""
            if kind == "str" and "bool" in node.kinds and value.lower() in ("true", "false"):
                hint = f" (use {value.lower() == 'true'} without quotes)"
            elif kind in ("int", "float") and node.kinds == ("str",):
                hint = f' (quote it: "{value}")'
            out.append(Violation(path, f"`{path}` must be {wanted}, got {kind} {_shown(value)}{hint}"))
            return
        if node.choices and value not in node.choices:
            choices = ", ".join(str(c) for c in node.choices)
            out.append(Violation(path, f"`{path}` must be one of {choices}; got {_shown(value)}"))
            return
        for refused, reason in node.refused:
            if type(value) is type(refused) and value == refused:
                out.append(Violation(path, f"`{path}: {_shown(value)}` has no effect: {reason}"))

    # -- suggestions and paths ------------------------------------------------------------------

    @staticmethod
    def _close_key(name: str, node: Keys) -> str | None:
        candidates = {k.lower(): k for k, v in node.children.items() if not isinstance(v, Ignored)}
        close = difflib.get_close_matches(name.lower(), list(candidates), n=1, cutoff=0.75)
        return candidates[close[0]] if close else None

    def _same_key_elsewhere(self, prefix: str, name: str, tokens: list[tuple[str, str]]) -> str | None:
        block = tokens[0][1]
        if not prefix:  # unknown top-level key: look one level down in every block
            block = ""
        matches = [
            p
            for p in self._paths
            if (not block or p == block or p.startswith(block + ".") or p.startswith(f'{block}["'))
            and p.rsplit(".", 1)[-1].lower() == name.lower()
            and not p.startswith(prefix + "." + name)
        ]
        if not matches:
            return None
        return min(matches, key=lambda p: (p.count("."), p))

    def _walk_paths(self, node: Node, path: str, out: list[str]) -> None:
        if isinstance(node, Keys):
            for key, child in node.children.items():
                if isinstance(child, Ignored):
                    continue
                child_path = join_path(path, key)
                out.append(child_path)
                self._walk_paths(child, child_path, out)
        elif isinstance(node, FreeMap):
            out.append(f"{path}.*")
        elif isinstance(node, ListOf):
            out.append(f"{path}[]")
            self._walk_paths(node.item, f"{path}[]", out)


# --------------------------------------------------------------------------------------------
# Shapes every chart version shares: plain types and Kubernetes core/v1 types. Shapes of the
# chart's own CRD (ClusterPolicy) change with the chart, so they live in the version modules.

BOOL = Scalar(("bool",))
STR = Scalar(("str",))
INT = Scalar(("int",))
INT_OR_STR = Scalar(("int", "str"))  # e.g. maxUnavailable: 1 or "25%"
PULL_POLICY = Scalar(("str",), choices=("Always", "IfNotPresent", "Never"))
STRING_MAP = FreeMap(values=STR, what="a mapping of strings")  # labels, annotations, nodeSelector
OBJECT = FreeMap(what="a mapping")  # affinity, securityContext, ... (validated by Kubernetes)
STRINGS = ListOf(STR, what="a list of strings")
OBJECTS = ListOf(OBJECT, what="a list of mappings")

# core/v1 EnvVar, for Deployments the chart renders itself and for the NFD subchart.
K8S_ENV = ListOf(
    Keys({"name": STR, "value": STR, "valueFrom": OBJECT}, required=frozenset({"name"})),
    what="a list of {name, value | valueFrom} objects",
)
TOLERATIONS = ListOf(
    Keys(
        {
            "key": STR,
            "operator": Scalar(("str",), choices=("Exists", "Equal")),
            "value": STR,
            "effect": Scalar(("str",), choices=("", "NoSchedule", "PreferNoSchedule", "NoExecute")),
            "tolerationSeconds": INT,
        }
    ),
    what="a list of tolerations ({key, operator, value, effect, tolerationSeconds})",
)
K8S_PULL_SECRETS = ListOf(Keys({"name": STR}, required=frozenset({"name"})), what="a list of {name} objects")
# core/v1 ResourceRequirements (limits, requests, claims).
K8S_RESOURCES = Keys({"limits": FreeMap(), "requests": FreeMap(), "claims": OBJECTS})


def keys(**children: Node) -> Keys:
    """A ``Keys`` node from keyword arguments, kept in the order given (values.yaml order)."""
    return Keys(MappingProxyType(dict(children)))
