"""Every key that carries a value of a receiver's grammar gives that receiver's verdict on the grammar's edge cases.

The edge cases and their verdicts are the receivers' (``tests/grammar_cases.py``: distribution/reference,
apimachinery's validation and ``labels.Parse``, Helm, Prometheus, the GPU Operator), the keys are every leaf of
both stack files' surface (``tests/stack/test_config_surface.py``) that ends in such a receiver. Properties: a
value the receiver accepts is never refused; one it refuses is refused at the key the file has, and no refusal
names a key the mutated file does not have. Each key gets every edge case (deterministic); the property draws
keys and cases at random in ``make fuzz``.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.base.merge import spells_out
from components.base.problems import Problem, StackConfigError, join_path
from tests.grammar_cases import GRAMMARS
from tests.helpers import plan_raw, set_path, stack_raw
from tests.properties import examples
from tests.stack.test_config_surface import STACKS, SURFACE, pattern


def _one(value: Any) -> Any:
    return value


def _listed(value: Any) -> Any:
    return [value]


def _cpu_quota(value: Any) -> Any:
    return {"requests.cpu": value}


#: Leaf pattern -> (grammar, how a value is written there). The keys whose value ends in each receiver.
GRAMMAR_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "smokeTest.image": ("image reference", _one),
    "gpuOperator.namespace": ("DNS label", _one),
    "gpuOperator.kyverno.namespace": ("DNS label", _one),
    "nodeAgent.namespace": ("DNS label", _one),
    "observability.namespace": ("DNS label", _one),
    "kubeflow.profiles.[].name": ("DNS label", _one),
    "mig.configMapName": ("DNS subdomain", _one),
    "observability.metrics.configMapName": ("DNS subdomain", _one),
    "gpuOperator.kyverno.configMap": ("DNS subdomain", _one),
    "gpuOperator.kyverno.policies": ("DNS subdomain", _listed),
    "kubeflow.ingress.className": ("DNS subdomain", _one),
    "kubeflow.ingress.tls.secretName": ("DNS subdomain", _one),
    "kubeflow.ingress.tls.clusterIssuer": ("DNS subdomain", _one),
    "gpuOperator.releaseName": ("Helm release name", _one),
    "*upgradePolicy.drain.podSelector": ("label selector", _one),
    "*upgradePolicy.waitForCompletion.podSelector": ("label selector", _one),
    "observability.alerts.*.for": ("Prometheus duration", _one),
    "observability.alerts.*.threshold": ("alert threshold", _one),
    "kubeflow.ingress.host": ("public host", _one),
    "gpuOperator.maxUnavailable": ("operator maxUnavailable", _one),
    "kubeflow.profiles.[].resourceQuota": ("Kubernetes quantity", _cpu_quota),
}

Leaf = tuple[str, tuple[Any, ...], str]


def _grammar_leaves() -> list[Leaf]:
    found = []
    for stack, path in SURFACE:
        for glob in GRAMMAR_KEYS:
            if fnmatchcase(pattern(path), glob):
                found.append((stack, path, glob))
                break
    return found


LEAVES = _grammar_leaves()


#: Each stack file's config as written (read once; every mutation works on a copy).
WRITTEN = {stack: stack_raw(stack, expand_defaults=False) for stack in STACKS}


def _refusal(stack: str, path: tuple[Any, ...], value: Any) -> tuple[dict[str, Any], list[Problem] | None]:
    raw = set_path(WRITTEN[stack], path, value)  # a copy
    try:
        plan_raw(raw)
    except StackConfigError as error:
        return raw, list(error.problems)
    return raw, None


def _check(leaf: Leaf, value: Any, valid: bool) -> str | None:
    """Why the stack's verdict on ``value`` at ``leaf`` is not the receiver's, or None."""
    stack, path, glob = leaf
    grammar, written = GRAMMAR_KEYS[glob]
    raw, problems = _refusal(stack, path, written(value))
    key = join_path(*path)
    if valid:
        return None if problems is None else f"{stack}: {key}={value!r} is valid ({grammar}), refused: {problems}"
    if problems is None:
        return f"{stack}: {key}={value!r} is invalid ({grammar}), accepted"
    if not any(p.path == key or p.path.startswith((f"{key}[", f"{key}.")) for p in problems):
        return f"{stack}: {key}={value!r} refused, but not at {key}: {problems}"
    absent = [p for p in problems if not spells_out(raw, p.path)]
    return f"{stack}: {key}={value!r}: refusals name keys the file does not have: {absent}" if absent else None


def test_every_grammar_is_checked_at_keys_of_both_stacks() -> None:
    grammars = {GRAMMAR_KEYS[glob][0] for _, _, glob in LEAVES}
    assert grammars == set(GRAMMARS), f"grammars with no key on the stacks: {set(GRAMMARS) - grammars}"
    assert {stack for stack, _, _ in LEAVES} == set(STACKS)
    unmatched = [glob for glob in GRAMMAR_KEYS if not any(glob == g for _, _, g in LEAVES)]
    assert unmatched == [], f"patterns no key of either stack matches: {unmatched}"
    assert len(LEAVES) >= 30, len(LEAVES)


@pytest.mark.parametrize("leaf", LEAVES, ids=[f"{stack}:{join_path(*path)}" for stack, path, _ in LEAVES])
def test_every_edge_case_gets_its_receivers_verdict_at_the_key(leaf: Leaf) -> None:
    grammar = GRAMMAR_KEYS[leaf[2]][0]
    wrong = [why for value, valid in GRAMMARS[grammar] if (why := _check(leaf, value, valid))]
    assert wrong == [], "\n".join(wrong)


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), leaf=st.sampled_from(LEAVES))
def test_a_drawn_edge_case_gets_its_receivers_verdict(data: st.DataObject, leaf: Leaf) -> None:
    grammar = GRAMMAR_KEYS[leaf[2]][0]
    value, valid = data.draw(st.sampled_from(GRAMMARS[grammar]), label=f"{grammar} case")
    why = _check(leaf, value, valid)
    assert why is None, why
