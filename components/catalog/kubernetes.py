"""Kubernetes naming rules, quantities, taints and tolerations, as pure functions.

Shared by config validation (refuse a malformed value before the API server does), the components
(derive tolerations from taints) and the policy pack. The rules follow k8s.io/apimachinery:
``pkg/util/validation/validation.go`` (IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName,
IsValidLabelValue, IsValidIP), ``pkg/api/resource/quantity.go`` (ParseQuantity),
``pkg/util/intstr`` with ``GetScaledValueFromIntOrPercent`` (maxUnavailable), and
k8s.io/kubernetes ``pkg/apis/scheduling/validation`` (PriorityClass names), plus
https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/ (reserved prefixes) and
https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/.
Every pattern matches the whole string (``\\Z``, never ``$``, which also accepts a final newline).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
# resource.Quantity: <signedNumber><suffix>, suffix binary (Ki..Ei), decimal (n u m k M G T P E) or exponent.
_QUANTITY = re.compile(r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?\Z")
_PERCENT = re.compile(r"([0-9]+)%\Z")
_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)+\Z"
)
#: Label and annotation prefixes Kubernetes reserves for its own components.
RESERVED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")
#: PriorityClass names Kubernetes creates; other names may not start with "system-".
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
#: The PriorityClass fields the API server refuses to change in place (``pkg/apis/scheduling/validation``
#: ``ValidatePriorityClassUpdate``: "value is immutable", ``preemptionPolicy`` through ``ValidateImmutableField``),
#: and pulumi-kubernetes lists no replacement for them (``provider/pkg/provider/diff.go``): a PriorityClass the
#: program owns is replaced when one changes (``replace_on_changes``). Running pods keep the priority they got.
PRIORITY_CLASS_IMMUTABLE_FIELDS = ("value", "preemptionPolicy")


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid Kubernetes label/taint key, or None."""
    prefix, _, name = key.rpartition("/")
    if not key or any(c.isspace() for c in key):
        return f"key {key!r} must not be empty or contain whitespace"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"key {key!r}: prefix {prefix!r} must be a DNS subdomain (lowercase, dots, at most 253 chars)"
    if not name or len(name) > 63 or not _NAME.match(name):
        return (
            f"key {key!r}: the name part must be 1-63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid Kubernetes label value, or None (empty is valid)."""
    if value and (len(value) > 63 or not _NAME.match(value)):
        return (
            f"value {value!r} must be at most 63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def dns_label_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 label (namespace and most object names), or None."""
    if len(name) > 63 or not _DNS_LABEL.match(name):
        return f"{name!r} must be 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit"
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 subdomain (most object names, PriorityClass names), or None."""
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return f"{name!r} must be a DNS subdomain: lowercase letters, digits, '-' and '.', at most 253 characters"
    return None


def reserved_label_key_problem(key: str, owned: Iterable[str] = (), owned_prefixes: Iterable[str] = ()) -> str | None:
    """Why a user may not set the label (or taint) ``key``: a prefix Kubernetes reserves, a key the platform owns,
    or a key in a family of keys the platform writes (``owned_prefixes``)."""
    prefix = key.rpartition("/")[0]
    if any(prefix == domain or prefix.endswith(f".{domain}") for domain in RESERVED_LABEL_DOMAINS):
        return f"key {key!r}: the {prefix}/ prefix is reserved for Kubernetes components"
    if key in set(owned):
        return f"key {key!r} is set by gpu-platform itself; a user label would override it"
    family = next((start for start in owned_prefixes if key.startswith(start)), None)
    if family is not None:
        return f"key {key!r}: keys starting with {family} are gpu-platform's own; name the key otherwise"
    return None


def quantity_problem(value: str) -> str | None:
    """Why ``value`` is not a non-negative Kubernetes quantity (``4``, ``500m``, ``16Gi``), or None."""
    if not isinstance(value, str) or not _QUANTITY.match(value):
        return (
            f"{value!r} is not a Kubernetes quantity: a non-negative number with an optional suffix "
            "(Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E), e.g. 8, 500m, 16Gi"
        )
    return None


#: A ResourceQuota counts an extended resource (``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``) only as
#: ``requests.<name>``: "only quota items with prefix requests. are allowed" (kubernetes.io, Resource Quotas,
#: "Resource Quota For Extended Resources"); the API accepts ``limits.<name>`` or a bare name but the quota
#: evaluator never counts them, so such a key caps nothing.
EXTENDED_RESOURCE_QUOTA_PREFIX = "requests."


def int_or_percent_problem(value: object, *, allow_zero: bool = True) -> str | None:
    """Why ``value`` is not a maxUnavailable-style count: an int >= 0 or ``"0%"``..``"100%"``, or None."""
    low = 0 if allow_zero else 1
    if isinstance(value, bool):
        return f"{value!r} must be a number of nodes (an integer >= {low}) or a percentage such as 25%"
    if isinstance(value, int):
        return None if value >= low else f"{value} must be at least {low} (or a percentage such as 25%)"
    match = _PERCENT.match(value) if isinstance(value, str) else None
    if match is None:
        return f"{value!r} must be a number of nodes (an integer >= {low}) or a percentage such as 25%"
    if not low <= int(match.group(1)) <= 100:
        return f"{value!r} must be a percentage from {low}% to 100%"
    return None


def priority_class_problem(name: str) -> str | None:
    """Why ``name`` cannot be a PriorityClass name, or None."""
    problem = dns_subdomain_problem(name)
    if problem:
        return problem
    if name.startswith("system-") and name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name!r}: names starting with 'system-' are reserved; allowed: {', '.join(SYSTEM_PRIORITY_CLASSES)}"
    return None


def hostname_problem(host: str) -> str | None:
    """Why ``host`` cannot be the platform's public host (an Ingress rule's host that is also a URL), or None.

    The Ingress rule takes a DNS-1123 subdomain or a ``*.`` wildcard and never an IP (k8s.io/kubernetes
    ``pkg/apis/networking/validation`` validateIngressRules). The host is also the URL users open and the name the
    TLS certificate is issued for, so a wildcard (no URL can name it) is refused, a name needs a dot, and each of
    its labels is at most 63 characters: DNS itself allows no longer label (RFC 1035 section 2.3.4, "labels 63
    octets or less"), which IsDNS1123Subdomain does not check.
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return f"{host!r} is an IP address; an Ingress host must be a DNS name (networking.k8s.io/v1 IngressRule)"
    if host.startswith("*"):
        return (
            f"{host!r} is a wildcard; the host is the URL users open and the name its TLS certificate is issued for, "
            "so it must be one name, e.g. kubeflow.example.com"
        )
    if dns_subdomain_problem(host) or "." not in host:
        return f"{host[:100]!r} must be a fully qualified DNS name in lowercase, e.g. kubeflow.example.com"
    longest = max(host.split("."), key=len)
    if len(longest) > 63:
        return f"{host[:100]!r} has a label of {len(longest)} characters; a DNS label is at most 63 (RFC 1035 2.3.4)"
    return None


def email_problem(address: str) -> str | None:
    """Why ``address`` is not an email address (user@domain.tld), or None."""
    if not _EMAIL.match(address):
        return f"{address!r} is not an email address (user@example.com)"
    return None


@dataclass(frozen=True)
class Taint:
    """A node taint ``key=value:Effect``."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"

    def toleration(self) -> dict[str, str]:
        """The exact toleration that lets a pod onto a node with this taint."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}

    @classmethod
    def from_object(cls, entry: Mapping[str, Any]) -> Taint | None:
        """A taint in its object form (a Node's ``spec.taints[]``: ``key``, ``value`` if any, ``effect``); None
        for an entry without a key or an effect. Values that are not strings count as absent."""
        key, value, effect = (entry.get(field) for field in ("key", "value", "effect"))
        if not isinstance(key, str) or not key or not isinstance(effect, str) or not effect:
            return None
        return cls(key, value if isinstance(value, str) else "", effect)


class TaintFormatError(ValueError):
    """A taint string that is not ``key=value:Effect`` or ``key:Effect``."""


#: The taint the docs and error messages suggest for GPU nodes.
EXAMPLE_GPU_TAINT = "nvidia.com/gpu=true:NoSchedule"
#: The effect that keeps pods without a toleration off a node (``PreferNoSchedule`` only discourages them).
GPU_NODE_TAINT_EFFECT = "NoSchedule"


def parse_taint(text: str, *, value_required: bool = False) -> Taint:
    """Parse ``key=value:Effect`` or ``key:Effect`` (an empty value).

    The forms kubectl and the kubelet accept: k8s.io/kubectl ``pkg/cmd/taint/utils.go`` ``parseTaint``
    (v1.32) splits on ``:`` into exactly two parts and the head on ``=`` into at most two; the key is a
    qualified name (``IsQualifiedName``), the value a label value (``IsValidLabelValue``).
    ``value_required``: the ``=`` is mandatory, as Yandex's node-group API wants it
    (``nvidia.com/gpu=:NoSchedule``, terraform-provider-yandex v0.161.0 ``parseTaint``); ``str(taint)``
    always writes that form.
    """
    head, sep, effect = text.rpartition(":")
    form = "key=value:Effect" if value_required else "key=value:Effect or key:Effect"
    if not sep or ":" in head or head.count("=") > 1 or (value_required and "=" not in head):
        raise TaintFormatError(f"taint {text!r} is not of the form {form} (for example {EXAMPLE_GPU_TAINT})")
    key, _, value = head.partition("=")
    if effect not in TAINT_EFFECTS:
        raise TaintFormatError(f"taint {text!r}: effect {effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
    for problem in (label_key_problem(key), label_value_problem(value)):
        if problem:
            raise TaintFormatError(f"taint {text!r}: {problem}")
    return Taint(key, value, effect)


def taint_key(text: str) -> str:
    """The key of a taint text as :func:`parse_taint` splits it, also of one that does not parse ("" without ``:``)."""
    return text.rpartition(":")[0].partition("=")[0]


#: A list of taint texts in one annotation value (``names.DECLARED_TAINTS_ANNOTATION``): no taint holds a comma
#: (the key is a qualified name, the value a label value, the effect a word).
TAINT_LIST_SEPARATOR = ","


def taint_list_text(texts: Iterable[str]) -> str:
    """Taint texts as one annotation value."""
    return TAINT_LIST_SEPARATOR.join(texts)


def taint_list_entries(value: str) -> list[str]:
    """The taint texts of an annotation value written by :func:`taint_list_text` (none for "")."""
    return [entry for entry in value.split(TAINT_LIST_SEPARATOR) if entry]


def canonical_taint_text(text: str) -> str:
    """``key:Effect`` as ``key=:Effect`` (the one form every receiver takes); text that does not parse, unchanged."""
    try:
        return str(parse_taint(text))
    except TaintFormatError:
        return text


def check_taints(
    texts: Iterable[str], *, value_required: bool = False
) -> tuple[list[Taint], list[tuple[int | None, str]]]:
    """Parse a list of taint texts once: the taints that parse, and ``(index or None, why)`` per problem.

    A malformed entry is reported at its index; a taint that repeats another's key and effect at the list
    (None): Kubernetes keeps one taint per key and effect (k8s.io/kubernetes ``pkg/apis/core/validation``
    ``validateNodeTaints``: "taints must be unique by key and effect pair").
    """
    parsed: list[Taint] = []
    problems: list[tuple[int | None, str]] = []
    for index, text in enumerate(texts):
        try:
            parsed.append(parse_taint(text, value_required=value_required))
        except TaintFormatError as error:
            problems.append((index, str(error)))
    problems.extend((None, problem) for problem in duplicate_taint_problems(parsed))
    return parsed, problems


def gpu_node_taint_problem(taints: Iterable[Taint]) -> str | None:
    """The rule "a GPU node carries a NoSchedule taint": why ``taints`` break it, or None.

    Why: an untainted GPU node accepts any pod, so a CPU-only workload can hold an expensive GPU node and
    a GPU job then waits for capacity that looks free. Callers name the node or group before the text.
    """
    taints = list(taints)
    if any(taint.effect == GPU_NODE_TAINT_EFFECT for taint in taints):
        return None
    shown = ", ".join(str(taint) for taint in taints) or "none"
    return (
        f"has no {GPU_NODE_TAINT_EFFECT} taint (taints: {shown}), so any pod can be scheduled onto its GPUs "
        f"and hold them; add one, for example {EXAMPLE_GPU_TAINT}, and give GPU workloads the matching toleration"
    )


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Kubernetes' matching rule: does ``toleration`` tolerate ``taint``?"""
    effect = toleration.get("effect")
    if effect and effect != taint.effect:
        return False
    operator = toleration.get("operator", "Equal")
    key = toleration.get("key")
    if operator == "Exists":
        return not key or key == taint.key
    return key == taint.key and (toleration.get("value") or "") == taint.value


def tolerations_for(taints: Iterable[Taint]) -> list[dict[str, str]]:
    """One toleration per distinct taint, in a stable order."""
    unique = sorted(set(taints), key=lambda t: (t.key, t.value, t.effect))
    return [taint.toleration() for taint in unique]


#: POSIX portable user names (useradd's default NAME_REGEX on Debian/RHEL: lowercase, digit, '_', '-';
#: at most 32 characters); no shell metacharacter can pass, since the name reaches an SSH command line.
_USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}\Z")


def user_name_problem(name: str) -> str | None:
    """Why ``name`` is not a safe login name (useradd's NAME_REGEX), or None."""
    if not _USER_NAME.match(name):
        return f"{name!r} must be a login name: lowercase letters, digits, '_' or '-', starting with a letter or '_'"
    return None


#: The largest cluster Kubernetes supports: 5,000 nodes (kubernetes.io/docs/setup/best-practices/cluster-large/).
MAX_CLUSTER_NODES = 5000


def duplicate_taint_problems(taints: Iterable[Taint]) -> list[str]:
    """Taints that repeat another's key and effect (Kubernetes keeps one taint per key and effect)."""
    seen: set[tuple[str, str]] = set()
    problems = []
    for taint in taints:
        if (taint.key, taint.effect) in seen:
            problems.append(f"taint {taint} repeats key {taint.key!r} with effect {taint.effect}; keep one")
        seen.add((taint.key, taint.effect))
    return problems


# ============================================================================================
# Names and keys the API server refuses, with whose rule it is
# (added for the Kubeflow values: each message says what is wrong, what is allowed and which
# Kubernetes function refuses it, so a config error reads like the API server's, before it runs)
# ============================================================================================

#: k8s.io/apimachinery ``pkg/api/validation/generic.go`` NameIsDNSSubdomain (IsDNS1123Subdomain in
#: ``pkg/util/validation/validation.go``): the name rule of Secrets (k8s.io/kubernetes
#: ``pkg/apis/core/validation`` ValidateSecretName, which ``pkg/apis/networking/validation``
#: validateTLSSecretName applies to an Ingress's ``spec.tls[].secretName``), of IngressClasses
#: (ValidateIngressClassName, which validateIngressSpec applies to ``spec.ingressClassName``) and of every
#: custom resource (k8s.io/apiextensions-apiserver ``pkg/registry/customresource/validator.go``). The same in
#: Kubernetes release-1.27 and master; an empty ``secretName`` is allowed there (the controller's default
#: certificate), refused here: the Kubeflow Ingress always names its TLS Secret.
SUBDOMAIN_NAME_RULE = "k8s.io/apimachinery NameIsDNSSubdomain"


def object_name_problem(name: str, kind: str, checked_by: str) -> str | None:
    """Why ``name`` cannot name a ``kind`` object (a DNS-1123 subdomain), or None; ``checked_by``: the validator."""
    if name and len(name) <= 253 and _DNS_SUBDOMAIN.match(name):
        return None
    return (
        f"{name!r} is not a valid {kind} name: the Kubernetes API server allows only a DNS-1123 subdomain, "
        "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 "
        f"characters ({SUBDOMAIN_NAME_RULE}, applied by {checked_by})"
    )


def secret_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be the Secret an Ingress's ``spec.tls[].secretName`` names, or None."""
    return object_name_problem(name, "Secret", "networking validateTLSSecretName")


def ingress_class_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an Ingress's ``spec.ingressClassName`` (an IngressClass name), or None."""
    return object_name_problem(name, "IngressClass", "networking ValidateIngressClassName")


def custom_resource_name_problem(name: str, kind: str) -> str | None:
    """Why ``name`` cannot name a custom resource of ``kind`` (a ClusterIssuer, a Profile...), or None."""
    return object_name_problem(name, kind, "the apiextensions-apiserver custom resource validator")


#: The quota resources without a ``/`` that a ResourceQuota accepts: k8s.io/kubernetes
#: ``pkg/apis/core/helper/helpers.go`` standardQuotaResources (the same list in release-1.23, release-1.26 and
#: master), plus the huge-page names (IsQuotaHugePageResourceName: ``hugepages-<size>``, ``requests.hugepages-<size>``).
STANDARD_QUOTA_RESOURCES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
)
_QUOTA_HUGEPAGES_PREFIXES = ("hugepages-", "requests.hugepages-")


def quota_resource_name_problem(key: str) -> str | None:
    """Why ``key`` cannot be a ResourceQuota ``spec.hard`` key, or None.

    k8s.io/kubernetes ``pkg/apis/core/validation`` validateResourceQuotaResourceName: a qualified name
    (``IsQualifiedName``); one without a ``/`` prefix must be a standard quota resource.
    """
    rule = "k8s.io/kubernetes validateResourceQuotaResourceName"
    problem = label_key_problem(key)
    if problem:
        return f"{problem} ({rule}: a quota key is a qualified name)"
    if "/" not in key and key not in STANDARD_QUOTA_RESOURCES and not key.startswith(_QUOTA_HUGEPAGES_PREFIXES):
        return (
            f"{key!r} is not a resource a ResourceQuota counts: without a '/' prefix it must be one of "
            f"{', '.join(STANDARD_QUOTA_RESOURCES)} or hugepages-<size>; an extended resource is written "
            f"requests.<domain>/<name>, e.g. requests.nvidia.com/gpu ({rule})"
        )
    return None


#: Whose rule the older checks above apply, for messages that name it: an Ingress rule's host
#: (k8s.io/kubernetes ``pkg/apis/networking/validation`` validateIngressRules: not an IP, a DNS-1123 subdomain or
#: a ``*.`` wildcard; ``hostname_problem`` also asks for a dot, a public name), a namespace's name
#: (ValidateNamespaceName = apimachinery NameIsDNSLabel) and a quantity (apimachinery ``resource.ParseQuantity``).
INGRESS_HOST_RULE = "the API server's Ingress rule host check, k8s.io/kubernetes validateIngressRules"
NAMESPACE_NAME_RULE = "the API server's namespace name rule, k8s.io/apimachinery NameIsDNSLabel"
QUANTITY_RULE = "the API server's quantity format, k8s.io/apimachinery resource.ParseQuantity"


# ----------------------------------------------------------------------------------------------
# Values the config layer checks by the receiving API's rule (issue #28): numbers past their field's
# type, label selectors, namespaces the platform must not take. Kept apart from the rules above so
# that other blocks can be appended below without touching these.

#: The largest value of an int32 field (Lease ``spec.leaseDurationSeconds``, Job ``ttlSecondsAfterFinished``,
#: ``activeDeadlineSeconds``' int64 aside, every count in core/v1, apps/v1 and batch/v1 that the program writes
#: is an int32: k8s.io/api ``core/v1/types.go``, ``coordination/v1/types.go``, ``batch/v1/types.go``).
INT32_MAX = 2**31 - 1
#: The longest Go ``time.Duration`` in whole seconds (an int64 of nanoseconds: Go ``time`` package,
#: ``maxDuration``); a timeout the provider or a controller turns into a duration must fit.
GO_DURATION_MAX_SECONDS = (2**63 - 1) // 10**9
#: Namespaces Kubernetes creates for itself (kubernetes.io, "Namespaces", Initial namespaces): the platform's
#: components never go there (kube-system holds the control plane's add-ons and is excluded from most
#: admission policies, so a privileged operator there escapes them).
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def int32_problem(value: int) -> str | None:
    """Why ``value`` does not fit the int32 fields Kubernetes stores counts and seconds in, or None."""
    if -INT32_MAX - 1 <= value <= INT32_MAX:
        return None
    return f"{value} does not fit an int32, the type of the Kubernetes field it is written to; at most {INT32_MAX}"


def system_namespace_problem(namespace: str) -> str | None:
    """Why the platform must not install into ``namespace``, or None."""
    if namespace in SYSTEM_NAMESPACES:
        return (
            f"{namespace!r} is a namespace Kubernetes keeps for itself (kube-system, kube-public, kube-node-lease); "
            "use a namespace of its own, e.g. gpu-operator"
        )
    return None


# Label selectors (``labels.Parse``) are ``components.catalog.label_selector``'s, a port of the parser itself.
