"""The values contract of the pinned GPU Operator chart: which Helm value paths it really reads.

Why: the gpu-operator chart ships no ``values.schema.json`` and Helm silently ignores keys no
template reads. Values copied from blog posts (``daemonsets.nodeSelector``, ``driver.env`` as a
map, ``driver.useOpenKernelModules``) therefore do nothing, and nobody notices until a node
misbehaves. The program builds its Helm values as one dict and checks it against this contract
before Pulumi ever renders the chart.

The contract is a tree of nodes, one entry per chart version in ``CONTRACTS``:
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

Sources for v26.7.0 (see also ``gpu_operator_chart``):
- chart values.yaml at tag v26.7.0: every key it sets, plus keys it documents in comments
  (``validator.version``, ``hostPaths.kubeletRootDir``, ``dcgmExporter.config``,
  ``dcgmExporter.hpcJobMapping``, ``dcgmExporter.podLabelAllowlistRegex``,
  ``operator.metrics.serviceMonitor``, ``draDriver.*.kubeletPlugin``/``controller`` fields);
- templates/clusterpolicy.yaml (via the project's research notes): ``validator.{driver,toolkit,
  cuda,vfioPCI,vgpuManager,vgpuDevices}.env`` are rendered though absent from values.yaml;
  ``driver.nvidiaDriverCRD.nodeSelector`` is no longer rendered (commit 53770fc2b);
  ``sandboxDevicePlugin.enabled`` is only rendered when truthy;
- templates/_helpers.tpl (upstream revision 0826073, not checked at the tag; not in the research
  notes): ``nameOverride``, ``fullnameOverride``, ``operator.labels``;
- ClusterPolicy CRD types (api/nvidia/v1/clusterpolicy_types.go): ``EnvVar`` is ``{name, value}``
  with string value, ``imagePullSecrets``/``args`` are ``[]string``, operand ``resources`` are
  ``{limits, requests}``, enums for kernelModuleType, mig.strategy, updateStrategy,
  defaultWorkload; ``psp`` is deprecated ("Pod Security Policies are no longer supported");
- node-feature-discovery 0.19.0 subchart values.yaml and values.schema.json (the full key tree
  of master, worker, topologyUpdater, gc, prometheus; free maps where the schema refers to a
  Kubernetes type such as Affinity or SecurityContext).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, TypeAlias

from components.catalog.gpu_operator_chart import (
    CHART_NAME,
    MIG_STRATEGIES,
    RELEASES,
    unsupported_version_message,
)

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


def _join(parent: str, key: str) -> str:
    """Append a key; keys with dots or other specials are quoted (``data["config.yaml"]``)."""
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
                node, prefix = node.children[name], _join(prefix, name)
            elif isinstance(node, ListOf) and kind == "index":
                node, prefix = node.item, _index(prefix, int(name) if name.isdigit() else None)
            elif isinstance(node, Keys) and kind == "key":
                close = self._close_key(name, node)
                if close is not None:
                    return _join(prefix, close)
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
                    self._check(node.values, sub, _join(path, key), out)
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
            child_path = _join(path, key)
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
                child_path = _join(path, key)
                out.append(child_path)
                self._walk_paths(child, child_path, out)
        elif isinstance(node, FreeMap):
            out.append(f"{path}.*")
        elif isinstance(node, ListOf):
            out.append(f"{path}[]")
            self._walk_paths(node.item, f"{path}[]", out)


# --------------------------------------------------------------------------------------------
# Reusable shapes (types from Kubernetes core/v1 and the ClusterPolicy CRD)

BOOL = Scalar(("bool",))
STR = Scalar(("str",))
INT = Scalar(("int",))
INT_OR_STR = Scalar(("int", "str"))  # e.g. maxUnavailable: 1 or "25%"
PULL_POLICY = Scalar(("str",), choices=("Always", "IfNotPresent", "Never"))
STRING_MAP = FreeMap(values=STR, what="a mapping of strings")  # labels, annotations, nodeSelector
OBJECT = FreeMap(what="a mapping")  # affinity, securityContext, ... (validated by Kubernetes)
STRINGS = ListOf(STR, what="a list of strings")
OBJECTS = ListOf(OBJECT, what="a list of mappings")

# ClusterPolicy `EnvVar` is {name, value} with a string value; no valueFrom.
ENV = ListOf(
    Keys({"name": STR, "value": STR}, required=frozenset({"name"})),
    what='a list of {name, value} objects, e.g. [{"name": "X", "value": "1"}]',
)
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
# ClusterPolicy imagePullSecrets are []string (secret names), not [{name: ...}].
PULL_SECRET_NAMES = ListOf(STR, what="a list of secret names (strings)")
K8S_PULL_SECRETS = ListOf(Keys({"name": STR}, required=frozenset({"name"})), what="a list of {name} objects")
# ClusterPolicy ResourceRequirements has only limits and requests; core/v1 adds claims.
RESOURCES = Keys({"limits": FreeMap(), "requests": FreeMap()})
K8S_RESOURCES = Keys({"limits": FreeMap(), "requests": FreeMap(), "claims": OBJECTS})


def _keys(**children: Node) -> Keys:
    return Keys(MappingProxyType(dict(children)))


def _image(*, secrets: bool = True) -> dict[str, Node]:
    """The image fields of an operand block (repository, image, version, pull policy/secrets)."""
    out: dict[str, Node] = {"repository": STR, "image": STR, "version": STR, "imagePullPolicy": PULL_POLICY}
    if secrets:
        out["imagePullSecrets"] = PULL_SECRET_NAMES
    return out


def _driver_manager() -> Keys:
    return _keys(**_image(secrets=False), env=ENV)


def _named(key: str = "name") -> Keys:
    return Keys(MappingProxyType({key: STR}))


# --------------------------------------------------------------------------------------------
# node-feature-discovery 0.19.0 subchart (its values.yaml / values.schema.json, in file order).
# The schema refers to Kubernetes types for affinity, securityContext, podSecurityContext and
# resources: those stay free maps here (Kubernetes validates them at apply time).

_PROBE = _keys(initialDelaySeconds=INT, timeoutSeconds=INT, periodSeconds=INT, failureThreshold=INT)
_READINESS_PROBE = _keys(
    initialDelaySeconds=INT, timeoutSeconds=INT, periodSeconds=INT, successThreshold=INT, failureThreshold=INT
)
_SERVICE_ACCOUNT = _keys(create=BOOL, annotations=STRING_MAP, name=STR)
_RBAC = _keys(create=BOOL)
_NETWORK_POLICY = _keys(enabled=BOOL, egress=OBJECTS, ingress=OBJECTS)  # note: `enabled`
_PDB = _keys(  # note: `enable`; the rest is policy/v1 PodDisruptionBudgetSpec
    enable=BOOL,
    minAvailable=INT_OR_STR,
    maxUnavailable=INT_OR_STR,
    unhealthyPodEvictionPolicy=Scalar(("str",), choices=("IfHealthyBudget", "AlwaysAllow")),
    selector=OBJECT,
)


def _nfd_pod(**extra: Node) -> dict[str, Node]:
    """Keys every NFD component (master, worker, topologyUpdater, gc) shares."""
    return {
        "enable": BOOL,
        "extraArgs": STRINGS,
        "extraEnvs": K8S_ENV,
        "hostNetwork": BOOL,
        "hostUsers": BOOL,
        "dnsPolicy": STR,
        "serviceAccount": _SERVICE_ACCOUNT,
        "revisionHistoryLimit": INT,
        "rbac": _RBAC,
        "port": INT,
        "podSecurityContext": OBJECT,
        "initContainers": OBJECTS,
        "livenessProbe": _PROBE,
        "readinessProbe": _READINESS_PROBE,
        "resources": K8S_RESOURCES,
        "nodeSelector": STRING_MAP,
        "tolerations": TOLERATIONS,
        "annotations": STRING_MAP,
        "labels": STRING_MAP,
        "affinity": OBJECT,
        "networkPolicy": _NETWORK_POLICY,
        **extra,
    }


_NFD_0_19_0 = _keys(
    image=_keys(repository=STR, pullPolicy=PULL_POLICY, tag=STR),
    imagePullSecrets=K8S_PULL_SECRETS,
    nameOverride=STR,
    fullnameOverride=STR,
    namespaceOverride=STR,
    featureGates=FreeMap(what="a mapping of feature gate names"),
    checksumValuesOnly=BOOL,
    priorityClassName=STR,
    postDeleteCleanup=BOOL,
    **{"global": _keys(imagePullSecrets=K8S_PULL_SECRETS)},
    master=_keys(
        **_nfd_pod(
            config=OBJECT,  # nfd-master configuration file
            instance=STR,
            resyncPeriod=STR,
            denyLabelNs=STRINGS,
            extraLabelNs=STRINGS,
            enableTaints=BOOL,
            nfdApiParallelism=INT,
            deploymentAnnotations=STRING_MAP,
            replicaCount=INT,
            securityContext=OBJECT,
            podDisruptionBudget=_PDB,
            startupProbe=_PROBE,
        )
    ),
    worker=_keys(
        **_nfd_pod(
            ownerRefs=STRINGS,
            config=OBJECT,  # nfd-worker configuration file (sources.pci.deviceClassWhitelist, ...)
            daemonsetAnnotations=STRING_MAP,
            securityContext=OBJECT,
            mountUsrSrc=BOOL,
            priorityClassName=STR,
            updateStrategy=_keys(
                type=Scalar(("str",), choices=("RollingUpdate", "OnDelete")),
                rollingUpdate=_keys(maxUnavailable=INT_OR_STR, maxSurge=INT_OR_STR),
            ),
        )
    ),
    topologyUpdater=_keys(
        **_nfd_pod(
            config=OBJECT,  # nfd-topology-updater configuration file
            createCRDs=BOOL,
            kubeletConfigPath=STR,
            kubeletPodResourcesSockPath=STR,
            updateInterval=STR,
            watchNamespace=STR,
            kubeletStateDir=STR,
            securityContext=OBJECT,
            daemonsetAnnotations=STRING_MAP,
            podSetFingerprint=BOOL,
        )
    ),
    gc=_keys(
        **_nfd_pod(
            replicaCount=INT,
            interval=STR,
            deploymentAnnotations=STRING_MAP,
            podDisruptionBudget=_PDB,
        )
    ),
    prometheus=_keys(enable=BOOL, scrapeInterval=STR, labels=STRING_MAP),
)


# --------------------------------------------------------------------------------------------
# gpu-operator v26.7.0 (values.yaml order)

_USE_NFD_SCOPE = (
    "operands are placed by the operator's nvidia.com/gpu.deploy.<operand> node labels; restrict "
    "them with node-feature-discovery.worker.nodeSelector or the node label "
    "nvidia.com/gpu.deploy.operands=false"
)

_GPU_OPERATOR_V26_7_0 = _keys(
    nameOverride=STR,  # templates/_helpers.tpl
    fullnameOverride=STR,  # templates/_helpers.tpl
    # Helm passes `global` to every subchart (the NFD subchart reads global.imagePullSecrets).
    **{"global": OBJECT},
    platform=_keys(openshift=BOOL),
    nfd=_keys(enabled=BOOL, nodefeaturerules=BOOL),
    psa=_keys(enabled=BOOL),
    cdi=_keys(enabled=BOOL, nriPluginEnabled=BOOL),
    sandboxWorkloads=_keys(
        enabled=BOOL,
        defaultWorkload=Scalar(("str",), choices=("container", "vm-passthrough", "vm-vgpu")),
        mode=Scalar(("str",), choices=("kubevirt", "kata")),
    ),
    hostPaths=_keys(rootFS=STR, driverInstallDir=STR, kubeletRootDir=STR),  # last: commented
    daemonsets=_keys(
        labels=STRING_MAP,
        annotations=STRING_MAP,
        priorityClassName=STR,
        tolerations=TOLERATIONS,
        updateStrategy=Scalar(("str",), choices=("RollingUpdate", "OnDelete")),
        rollingUpdate=_keys(maxUnavailable=INT_OR_STR),
    ),
    validator=_keys(
        **_image(),
        env=ENV,
        args=STRINGS,
        resources=RESOURCES,
        hostNetwork=BOOL,
        plugin=_keys(env=ENV),
        # Rendered by templates/clusterpolicy.yaml but absent from values.yaml:
        driver=_keys(env=ENV),
        toolkit=_keys(env=ENV),
        cuda=_keys(env=ENV),
        vfioPCI=_keys(env=ENV),
        vgpuManager=_keys(env=ENV),
        vgpuDevices=_keys(env=ENV),
    ),
    operator=_keys(
        **_image(),
        env=K8S_ENV,
        priorityClassName=STR,
        runtimeClass=STR,
        nodeSelector=STRING_MAP,
        use_ocp_driver_toolkit=BOOL,
        cleanupCRD=BOOL,
        upgradeCRD=BOOL,
        tolerations=TOLERATIONS,
        annotations=STRING_MAP,
        labels=STRING_MAP,  # templates/_helpers.tpl
        affinity=OBJECT,
        logging=_keys(
            timeEncoding=Scalar(("str",), choices=("epoch", "millis", "nano", "iso8601", "rfc3339", "rfc3339nano")),
            level=Scalar(("str", "int")),
            develMode=BOOL,
        ),
        resources=K8S_RESOURCES,
        metrics=_keys(  # commented example in values.yaml
            serviceMonitor=_keys(interval=STR, honorLabels=BOOL, additionalLabels=STRING_MAP, relabelings=OBJECTS)
        ),
    ),
    mig=_keys(strategy=Scalar(("str",), choices=MIG_STRATEGIES)),
    driver=_keys(
        enabled=BOOL,
        nvidiaDriverCRD=_keys(
            enabled=BOOL,
            deployDefaultCR=BOOL,
            driverType=Scalar(("str",), choices=("gpu", "vgpu", "vgpu-host-manager")),
            nodeSelector=Ignored(
                "still in values.yaml but no longer rendered into the default NVIDIADriver "
                "(commit 53770fc2b: the default NVIDIADriver covers the whole cluster); create "
                "your own NVIDIADriver CRs with spec.nodeSelector and set deployDefaultCR: false"
            ),
        ),
        kernelModuleType=Scalar(("str",), choices=("auto", "open", "proprietary")),
        useOpenKernelModules=Ignored("deprecated and made a no-op (values.yaml note); use driver.kernelModuleType"),
        usePrecompiled=BOOL,
        **_image(),
        startupProbe=_keys(initialDelaySeconds=INT, periodSeconds=INT, timeoutSeconds=INT, failureThreshold=INT),
        rdma=_keys(enabled=BOOL, useHostMofed=BOOL),
        upgradePolicy=_keys(
            autoUpgrade=BOOL,
            maxParallelUpgrades=INT,
            maxUnavailable=INT_OR_STR,
            waitForCompletion=_keys(timeoutSeconds=INT, podSelector=STR),
            gpuPodDeletion=_keys(force=BOOL, timeoutSeconds=INT, deleteEmptyDir=BOOL),
            drain=_keys(enable=BOOL, force=BOOL, podSelector=STR, timeoutSeconds=INT, deleteEmptyDir=BOOL),
        ),
        manager=_driver_manager(),
        env=ENV,
        resources=RESOURCES,
        repoConfig=_named("configMapName"),
        certConfig=_named(),
        licensingConfig=_keys(secretName=STR, nlsEnabled=BOOL),
        virtualTopology=_named("config"),
        kernelModuleConfig=_named(),
        secretEnv=STR,
        hostNetwork=BOOL,
    ),
    toolkit=_keys(enabled=BOOL, **_image(), env=ENV, resources=RESOURCES, installDir=STR, hostNetwork=BOOL),
    devicePlugin=_keys(
        enabled=BOOL,
        **_image(),
        args=STRINGS,
        env=ENV,
        resources=RESOURCES,
        # ConfigMap data is map[string]string: each entry is one config file as a string.
        config=_keys(create=BOOL, name=STR, default=STR, data=STRING_MAP),
        mps=_keys(root=STR),
        hostNetwork=BOOL,
    ),
    dcgm=_keys(enabled=BOOL, **_image(secrets=False), args=STRINGS, env=ENV, resources=RESOURCES, hostNetwork=BOOL),
    dcgmExporter=_keys(
        enabled=BOOL,
        annotations=STRING_MAP,
        **_image(secrets=False),
        env=ENV,
        resources=RESOURCES,
        hostPID=BOOL,
        hostNetwork=BOOL,
        hpcJobMapping=_keys(enabled=BOOL, directory=STR),  # commented example in values.yaml
        enablePodLabels=BOOL,
        enablePodUID=BOOL,
        podLabelAllowlistRegex=STRINGS,  # commented example in values.yaml
        service=_keys(internalTrafficPolicy=Scalar(("str",), choices=("Cluster", "Local"))),
        serviceMonitor=_keys(
            enabled=BOOL,
            interval=STR,
            scrapeTimeout=STR,
            honorLabels=BOOL,
            additionalLabels=STRING_MAP,
            relabelings=OBJECTS,
        ),
        # Commented example in values.yaml; templates/dcgm_exporter_config.yaml renders it.
        # `data` is the CSV text of the metrics file (a string, not a mapping).
        config=_keys(name=STR, create=BOOL, data=STR),
    ),
    gfd=_keys(enabled=BOOL, **_image(), env=ENV, resources=RESOURCES, hostNetwork=BOOL),
    migManager=_keys(
        enabled=BOOL,
        **_image(),
        env=ENV,
        resources=RESOURCES,
        config=_keys(default=STR, create=BOOL, name=STR, data=STRING_MAP),
        gpuClientsConfig=_named(),
        hostNetwork=BOOL,
    ),
    nodeStatusExporter=_keys(enabled=BOOL, **_image(), resources=RESOURCES, hostNetwork=BOOL),
    gds=_keys(enabled=BOOL, **_image(), env=ENV, args=STRINGS),
    gdrcopy=_keys(enabled=BOOL, **_image(), env=ENV, args=STRINGS),
    vgpuManager=_keys(
        enabled=BOOL,
        **_image(),
        env=ENV,
        resources=RESOURCES,
        driverManager=_driver_manager(),
        kernelModuleConfig=_named(),
        hostNetwork=BOOL,
    ),
    vgpuDeviceManager=_keys(enabled=BOOL, **_image(), env=ENV, config=_keys(name=STR, default=STR), hostNetwork=BOOL),
    vfioManager=_keys(
        enabled=BOOL,
        **_image(),
        env=ENV,
        resources=RESOURCES,
        driverManager=_driver_manager(),
        hostNetwork=BOOL,
    ),
    kataManager=_keys(
        enabled=BOOL,
        config=OBJECT,  # k8s-kata-manager config (artifactsDir, runtimeClasses, ...)
        imagePullPolicy=PULL_POLICY,
        imagePullSecrets=PULL_SECRET_NAMES,
        env=ENV,
        resources=RESOURCES,
        hostNetwork=BOOL,
    ),
    sandboxDevicePlugin=_keys(
        enabled=Scalar(
            ("bool",),
            refused=(
                (
                    False,
                    "templates/clusterpolicy.yaml renders sandboxDevicePlugin.enabled only when it "
                    "is true, so false is dropped and the operator keeps its default; the plugin "
                    "only runs on vm-passthrough nodes (sandboxWorkloads.enabled: true) anyway",
                ),
            ),
        ),
        **_image(),
        args=STRINGS,
        env=ENV,
        resources=RESOURCES,
        hostNetwork=BOOL,
    ),
    kataSandboxDevicePlugin=_keys(
        enabled=BOOL, **_image(), args=STRINGS, env=ENV, resources=RESOURCES, hostNetwork=BOOL
    ),
    ccManager=_keys(enabled=BOOL, defaultMode=STR, **_image(), resources=RESOURCES, hostNetwork=BOOL),
    clusterPolicy=_keys(deployCR=BOOL),
    gpuCluster=_keys(deployCR=BOOL),
    draDriver=_keys(
        **_image(),
        featureGates=FreeMap(values=BOOL, what="a mapping of feature gate -> bool"),
        gpus=_keys(kubeletPlugin=_keys(env=ENV, resources=K8S_RESOURCES, healthcheck=_keys(enabled=BOOL, port=INT))),
        computeDomains=_keys(
            enabled=BOOL,
            controller=_keys(env=ENV, resources=K8S_RESOURCES),
            kubeletPlugin=_keys(env=ENV, resources=K8S_RESOURCES, healthcheck=_keys(enabled=BOOL, port=INT)),
        ),
    ),
    extraObjects=ListOf(AnyValue(), what="a list of Kubernetes manifests"),
    **{"node-feature-discovery": _NFD_0_19_0},
)


# --------------------------------------------------------------------------------------------
# Value rules the key tree cannot express (each one a silent no-op or a broken operand).

# Environment variables that only one component reads (research notes, section 2):
# the validator reads DISABLE_DEV_CHAR_SYMLINK_CREATION (cmd/nvidia-validator/main.go), and
# mig-manager reads WITH_REBOOT (mig-parted cmd/nvidia-mig-manager/main.go).
ENV_HOMES: Mapping[str, str] = MappingProxyType(
    {"DISABLE_DEV_CHAR_SYMLINK_CREATION": "validator.driver.env", "WITH_REBOOT": "migManager.env"}
)
_ENV_KEYS = ("env", "extraEnvs")


def _iter_env_lists(value: Any, path: str) -> Iterator[tuple[str, Sequence[Any]]]:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if not isinstance(key, str):
                continue
            sub_path = _join(path, key)
            if key in _ENV_KEYS and isinstance(sub, list | tuple):
                yield sub_path, sub
            else:
                yield from _iter_env_lists(sub, sub_path)


def misplaced_env_rule(values: Mapping[str, Any]) -> Iterable[Violation]:
    """An env var set on a container that never reads it (e.g. the validator flag on the driver)."""
    for path, items in _iter_env_lists(values, ""):
        for i, item in enumerate(items):
            name = item.get("name") if isinstance(item, Mapping) else None
            home = ENV_HOMES.get(name) if isinstance(name, str) else None
            if home is not None and path != home:
                yield Violation(
                    f"{path}[{i}].name",
                    f"`{path}[{i}]` sets {name}, which only the `{home}` container reads; move it to `{home}`",
                )


def mig_config_rule(values: Mapping[str, Any]) -> Iterable[Violation]:
    """migManager.config: create without data is skipped; data must hold the key config.yaml.

    values.yaml v26.7.0: "If create=true but data is empty, ConfigMap creation is skipped" and
    "Custom ConfigMaps must contain a key named "config.yaml"".
    """
    manager = values.get("migManager")
    config = manager.get("config") if isinstance(manager, Mapping) else None
    if not isinstance(config, Mapping):
        return
    data = config.get("data")
    if config.get("create") is True and not data:
        yield Violation(
            "migManager.config.data",
            "`migManager.config.create: true` with empty `data` creates no ConfigMap (the chart "
            'skips it silently); put the mig-parted file under data["config.yaml"]',
        )
    if isinstance(data, Mapping) and data and "config.yaml" not in data:
        yield Violation(
            "migManager.config.data",
            "`migManager.config.data` must contain the key `config.yaml` (mig-manager reads only "
            f"that key); got: {', '.join(sorted(str(k) for k in data))}",
        )


# Advice for keys that commonly appear in published values but do not exist (marker paths).
_HINTS_V26_7_0: Mapping[str, str] = MappingProxyType(
    {
        "daemonsets.nodeSelector": _USE_NFD_SCOPE,
        "nodeSelector": _USE_NFD_SCOPE,
        "psp": "PodSecurityPolicy support is gone (ClusterPolicy CRD: 'Pod Security Policies are no "
        "longer supported'); use psa.enabled",
        "node-feature-discovery.enableNodeFeatureApi": "absent from the NFD 0.19.0 values and "
        "schema; older NFD charts had it",
        "driver.env": "a mapping here is a classic mistake: write [{name: ..., value: ...}]; and "
        "DISABLE_DEV_CHAR_SYMLINK_CREATION is read by the validator: it belongs under validator.driver.env",
        "validator.driver.env": 'write [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]',
    }
)

CONTRACTS: Mapping[str, Contract] = MappingProxyType(
    {
        "v26.7.0": Contract(
            chart_version="v26.7.0",
            root=_GPU_OPERATOR_V26_7_0,
            subcharts=MappingProxyType({"node-feature-discovery": RELEASES["v26.7.0"].nfd_subchart_version}),
            hints=_HINTS_V26_7_0,
            rules=(misplaced_env_rule, mig_config_rule),
        ),
    }
)


def contract_for(chart_version: str) -> Contract:
    """The values contract of one chart version; an unknown version lists the supported ones."""
    try:
        return CONTRACTS[chart_version]
    except KeyError:
        raise ValueError(
            unsupported_version_message(chart_version).replace("is not supported", "has no values contract")
        ) from None
