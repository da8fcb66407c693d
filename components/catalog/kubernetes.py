"""Kubernetes naming rules, taints and tolerations, as pure functions.

Shared by config validation (refuse a malformed taint before the cloud does), the components
(derive tolerations from taints) and the policy pack (check that operator daemonsets tolerate the
GPU nodes' taints). Rules: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/
and https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid Kubernetes label/taint key, or None."""
    prefix, _, name = key.rpartition("/")
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


class TaintFormatError(ValueError):
    """A taint string that is not ``key=value:Effect``."""


def parse_taint(text: str) -> Taint:
    """Parse ``key=value:Effect``.

    The ``=`` is mandatory: Yandex's node-group API refuses ``nvidia.com/gpu:NoSchedule`` and
    accepts ``nvidia.com/gpu=:NoSchedule`` (terraform-provider-yandex ``parseTaint``).
    """
    head, sep, effect = text.rpartition(":")
    if not sep or "=" not in head:
        raise TaintFormatError(
            f"taint {text!r} is not of the form key=value:Effect (for example nvidia.com/gpu=true:NoSchedule)"
        )
    key, _, value = head.partition("=")
    if effect not in TAINT_EFFECTS:
        raise TaintFormatError(f"taint {text!r}: effect {effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
    for problem in (label_key_problem(key), label_value_problem(value)):
        if problem:
            raise TaintFormatError(f"taint {text!r}: {problem}")
    return Taint(key, value, effect)


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
