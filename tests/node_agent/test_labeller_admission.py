"""The pool labeller's admission policy (``components.node_agent.admission.labeller_policy``), evaluated request by
request by the real CEL runtime (``tests.node_agent.sim.admission``: inputs as the API server builds them), beside the
three policies of the rollout controller and the executors, for the existing stack's memberships.

Every write the labeller decides (``membership.patches``: a new node, a drifted one, one that moves to another pool,
one that leaves, a held node's missing label) is allowed, and only the labeller's policy applies to it; everything
else its token could send is refused by the rule that names it; the other tokens' requests are not its policy's."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from components.catalog.names import GPU_MODEL_LABEL, GPU_NODE_LABEL, HOST_DRIVER_REMOVAL_LABEL, NODE_GROUP_LABEL
from components.catalog.node_agent import MIG_DESIRED_LABEL, REASON_LABEL, STATE_LABEL, State
from components.node_agent import component
from components.node_agent.admission import CONTROLLER_POLICY, LABELLER_POLICY, labeller_admission, labeller_policy
from components.node_agent.agent.labeller.membership import parse_memberships, patches
from tests.helpers import plan_raw, stack_raw
from tests.node_agent.sim import admission
from tests.node_agent.sim.admission import Decision, Policies, node_update, service_account_user, stored_node
from tests.node_agent.sim.world import NAMESPACE

MEMBERSHIPS: dict[str, Any] = plan_raw(stack_raw("existing")).node_agent_memberships
POOLS = parse_memberships(MEMBERSHIPS)
POOL_KEY = "node.example.com/pool"
INFER = MEMBERSHIPS["infer"]["labels"]
TRAIN = MEMBERSHIPS["train"]["labels"]
LABELLER = service_account_user(NAMESPACE, component.LABELLER, "node-agent-labeller-5c7d9-q1x2z", "cpu-1")
CONTROLLER = service_account_user(NAMESPACE, admission.CONTROLLER_ACCOUNT, "node-agent-controller-7d9f-x2", "cpu-1")
PERSON = {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}
POLICIES = Policies(
    [*admission.policies(NAMESPACE).policies, labeller_policy(NAMESPACE, component.LABELLER, MEMBERSHIPS)]
)


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return stored_node(name, labels, [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])


#: Nodes as whoever provisions them labels them, and as the labeller left them.
NEW_INFER = node("dgx-1", {POOL_KEY: "infer"})
NEW_TRAIN = node("dgx-2", {POOL_KEY: "train"})
INFER_NODE = node("dgx-3", {POOL_KEY: "infer", **INFER})
DRIFTED = node("dgx-4", {POOL_KEY: "infer", **INFER, GPU_MODEL_LABEL: "A100-80GB"})
MOVED = node("dgx-5", {POOL_KEY: "infer", **TRAIN})
LEFT = node("dgx-6", {POOL_KEY: "retired", **TRAIN, STATE_LABEL: State.DONE.value})
HELD_MISSING = node("dgx-7", {POOL_KEY: "train", **{k: v for k, v in TRAIN.items() if k != GPU_MODEL_LABEL}})
HELD_MISSING["metadata"]["labels"][STATE_LABEL] = State.EVICTING.value
HELD_LEFT = node("dgx-8", {POOL_KEY: "retired", **TRAIN, STATE_LABEL: State.MIG_APPLYING.value})
HELD_MOVED = node("dgx-9", {POOL_KEY: "infer", **TRAIN, STATE_LABEL: State.FAILED.value})
OTHER_STACK = node("dgx-10", {POOL_KEY: "train", **TRAIN, NODE_GROUP_LABEL: "other-stack"})
CONTROL_PLANE = node("master-1", {"node-role.kubernetes.io/control-plane": ""})
CPU = node("cpu-1", {"node.kubernetes.io/instance-type": "standard-v3"})
STRAY = node("cpu-2", {GPU_NODE_LABEL: "true"})  # a GPU label no pool of ours put there


def update(stored: dict[str, Any], patch: dict[str, Any], user: dict[str, Any] = LABELLER) -> Decision:
    body = json.loads(json.dumps(patch))
    body.setdefault("metadata", {})["resourceVersion"] = stored["metadata"]["resourceVersion"]
    return POLICIES.decide(node_update(stored, body, user))


def labels(**changes: str | None) -> dict[str, Any]:
    return {"metadata": {"labels": changes}}


def denied_by(decision: Decision, needle: str) -> None:
    assert not decision.allowed, "allowed"
    assert decision.matched == [LABELLER_POLICY]
    assert any(needle in denial for denial in decision.denials), decision.denials
    assert all("(Forbidden)" in denial for denial in decision.denials), decision.denials


# -- the runtime can check what Kubernetes would -------------------------------------------------------------
def _expressions() -> list[str]:
    spec = labeller_policy(NAMESPACE, component.LABELLER, MEMBERSHIPS)["spec"]
    return [item["expression"] for item in [*spec["matchConditions"], *spec["variables"], *spec["validations"]]]


def test_every_expression_compiles_and_iterates_only_label_maps_and_lists() -> None:
    """Kubernetes types ``object`` by its schema: the macros may receive only the label maps and the list of changed
    keys, never a struct (this runtime would iterate anything)."""
    for expression in _expressions():
        admission.compiled(expression)
    text = " ".join(re.sub(r"'[^']*'", "''", expression) for expression in _expressions())
    receivers = set(re.findall(r"([\w.?]+(?:\.orValue\(\{\}\))?)\.(?:all|exists|exists_one|filter|map)\(", text))
    assert receivers == {
        "object.metadata.?labels.orValue({})",
        "oldObject.metadata.?labels.orValue({})",
        "variables.labels",
    }


def test_the_memberships_are_homogeneous_literals() -> None:
    """Kubernetes' CEL refuses a map or list literal of mixed element types: the pools' labels are one map of pool
    name to a map of strings, the node's pool a chain of conditionals over string literals."""
    variables = {v["name"]: v["expression"] for v in labeller_policy(NAMESPACE, "a", MEMBERSHIPS)["spec"]["variables"]}
    declared = json.loads(variables["declared"].replace("'", '"'))
    assert declared == {name: value["labels"] for name, value in MEMBERSHIPS.items()}
    assert variables["pool"].count("?") == len(MEMBERSHIPS)


def test_it_matches_only_the_labellers_user_and_no_other_policy_matches_it() -> None:
    role, policy, binding = labeller_admission(NAMESPACE, component.LABELLER, MEMBERSHIPS)
    assert role == "labeller-nodes"
    assert binding["spec"] == {"policyName": LABELLER_POLICY, "validationActions": ["Deny"]}
    assert policy["spec"]["matchConditions"][0]["expression"] == (
        f"request.userInfo.username == 'system:serviceaccount:{NAMESPACE}:{component.LABELLER}'"
    )
    assert update(NEW_INFER, labels(**INFER)).matched == [LABELLER_POLICY]


# -- the labeller's own writes -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "stored",
    [NEW_INFER, NEW_TRAIN, DRIFTED, MOVED, LEFT, HELD_MISSING],
    ids=["new-infer", "new-train", "drifted", "moved", "left", "held-missing-label"],
)
def test_every_write_the_labeller_decides_is_allowed(stored: dict[str, Any]) -> None:
    (write,) = patches([stored], POOLS)
    decision = update(stored, write.patch)
    assert decision.allowed, decision.denials
    assert decision.matched == [LABELLER_POLICY]
    after = node_update(stored, write.patch, LABELLER).object
    assert after is not None
    assert patches([after], POOLS) == []  # one write, and the node is as its pool declares


@pytest.mark.parametrize("stored", [INFER_NODE, HELD_LEFT, HELD_MOVED, OTHER_STACK, CONTROL_PLANE, CPU, STRAY])
def test_the_labeller_decides_no_write_where_its_policy_would_refuse_one(stored: dict[str, Any]) -> None:
    assert patches([stored], POOLS) == []


# -- everything else its token could send ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stored", "patch", "needle"),
    [
        (NEW_INFER, labels(**INFER, team="vision"), "may change only the labels its pools declare"),
        (INFER_NODE, labels(**{STATE_LABEL: State.CORDONED.value}), "may change only the labels its pools declare"),
        (
            node("dgx-11", {POOL_KEY: "infer", **INFER, REASON_LABEL: "budget-full"}),
            labels(**{REASON_LABEL: None}),
            "may change only the labels its pools declare",
        ),
        (INFER_NODE, labels(**{POOL_KEY: "train"}), "may change only the labels its pools declare"),
        (NEW_INFER, labels(**{**INFER, GPU_MODEL_LABEL: "V100-32GB"}), "only to the value that pool declares"),
        (NEW_INFER, labels(**TRAIN), "only to the value that pool declares"),
        (NEW_INFER, labels(**{HOST_DRIVER_REMOVAL_LABEL: "enabled"}), "only to the value that pool declares"),
        (CONTROL_PLANE, labels(**INFER), "only on a node a pool's selector picks"),
        (CPU, labels(**{GPU_NODE_LABEL: "true"}), "only on a node a pool's selector picks"),
        (INFER_NODE, labels(**{GPU_NODE_LABEL: None}), "may remove only a label of the pool the node was labelled for"),
        (STRAY, labels(**{GPU_NODE_LABEL: None}), "may remove only a label of the pool the node was labelled for"),
        (MOVED, labels(**{MIG_DESIRED_LABEL: None}), "may remove only a label of the pool the node was labelled for"),
        (HELD_LEFT, labels(**dict.fromkeys(TRAIN)), "keeps its labels and its pool until released"),
        (HELD_MOVED, labels(**INFER), "keeps its labels and its pool until released"),
        (OTHER_STACK, labels(**{NODE_GROUP_LABEL: "train"}), "never changes a node of a pool it does not declare"),
        (
            node("x", {POOL_KEY: "retired", **{NODE_GROUP_LABEL: "other"}}),
            labels(**{NODE_GROUP_LABEL: None}),
            "does not declare",
        ),
    ],
    ids=[
        "another-label",
        "the-controllers-state",
        "the-controllers-reason",
        "the-selector-key",
        "a-wrong-value",
        "the-other-pools-labels",
        "another-pools-opt-in",
        "a-control-plane-node",
        "a-cpu-node",
        "removed-from-a-node-still-in-its-pool",
        "removed-from-a-node-of-no-pool",
        "removed-though-the-new-pool-declares-it",
        "removed-from-a-held-node",
        "a-held-node-moved",
        "a-node-of-another-stack",
        "removed-from-a-node-of-another-stack",
    ],
)
def test_a_label_write_other_than_the_declared_ones_is_refused(
    stored: dict[str, Any], patch: dict[str, Any], needle: str
) -> None:
    denied_by(update(stored, patch), needle)


def _with(stored: dict[str, Any], **spec: Any) -> dict[str, Any]:
    patch = labels(**INFER)
    patch["spec"] = spec
    return patch


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        (_with(NEW_INFER, unschedulable=True), "may not change the spec"),
        (_with(NEW_INFER, taints=[]), "may not change the spec"),
        (
            _with(NEW_INFER, taints=[*NEW_INFER["spec"]["taints"], {"key": "x", "effect": "NoExecute"}]),
            "may not change the spec",
        ),
        (_with(NEW_INFER, providerID="other://x"), "may not change the spec"),
        ({"metadata": {"labels": INFER, "annotations": {"note": "x"}}}, "may not change an annotation"),
        ({"metadata": {"labels": INFER, "annotations": {"node.alpha.kubernetes.io/ttl": None}}}, "annotation"),
        ({"metadata": {"labels": INFER, "finalizers": ["example.com/keep"]}}, "owner references and finalizers"),
        (
            {
                "metadata": {
                    "labels": INFER,
                    "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u"}],
                }
            },
            "owner references and finalizers",
        ),
    ],
    ids=[
        "cordon",
        "taints-removed",
        "taint-added",
        "provider-id",
        "annotation-added",
        "annotation-removed",
        "finalizer",
        "owner",
    ],
)
def test_anything_but_labels_is_refused_even_beside_a_right_label_write(patch: dict[str, Any], needle: str) -> None:
    denied_by(update(NEW_INFER, patch), needle)


# -- the other tokens ----------------------------------------------------------------------------------------
def test_another_users_write_is_not_the_labellers_policys() -> None:
    person = update(CPU, labels(**INFER, team="vision"), PERSON)
    assert person.matched == [] and person.allowed  # a person's RBAC decides, no policy of ours applies
    controller = update(INFER_NODE, labels(**{STATE_LABEL: State.IDLE.value}), CONTROLLER)
    assert controller.matched == [CONTROLLER_POLICY] and controller.allowed, controller.denials


def test_the_controller_cannot_make_the_labellers_writes() -> None:
    decision = update(NEW_INFER, labels(**INFER), CONTROLLER)
    assert decision.matched == [CONTROLLER_POLICY] and not decision.allowed
    moved = copy.deepcopy(INFER_NODE)
    decision = update(moved, labels(**{NODE_GROUP_LABEL: "train"}), CONTROLLER)
    assert not decision.allowed
