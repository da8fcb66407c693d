"""The admission policies, evaluated request by request by a real CEL runtime, for every token the program issues.

The runtime is ``cel-expr-python`` (the CEL C++ implementation), with the libraries it shares with Kubernetes'
admission CEL: the standard library and macros, optional types (``.?``, ``[?]``, ``orValue``, ``hasValue``; Kubernetes
enables them for admission), strings, math, base64 encoders and ``cel.bind``. Kubernetes' own libraries are not in
this runtime: lists (``isSorted``, ``sum``, ``indexOf`` on lists...), regex ``find``/``findAll``, ``url``,
``quantity``, ``ip``/``cidr``, ``semver``, ``authorizer``, and cel-go's ``sets`` extension; the policies use none of
them (an expression that did would not compile here: ``test_every_expression_compiles``). What differs: Kubernetes
type-checks each expression against the OpenAPI schema of the matched kind, while here every variable is ``dyn``;
so the policies iterate only maps and lists, never a typed object's fields (``test_the_policies_iterate_only_maps_and_lists``),
and runtime cost limits are not evaluated.

The inputs are built as the API server builds them for a ValidatingAdmissionPolicy (``tests.node_agent.sim.admission``,
whose docstring cites each piece): Kubernetes docs, "Validating Admission Policy" (the variables ``object``,
``oldObject``, ``request``, ``params``, ``namespaceObject``, ``variables``; match constraints and conditions;
``failurePolicy``; ``validationActions``; ``reason``); k8s.io/apiserver ``pkg/admission/plugin/cel/filter.go``
(``CreateAdmissionRequest``: the request without its objects; ``objectToResolveVal``: objects as unstructured JSON);
``pkg/registry/generic/registry/store.go`` (``Update``: the resourceVersion conflict before ``BeforeUpdate`` and
``updateValidation``; ``Create``: ``BeforeCreate`` before ``createValidation``); ``pkg/registry/core/node/strategy.go``
(``PrepareForUpdate``: the stored status); ``pkg/apis/core/v1/defaults.go`` and the default mutating plugins
ServiceAccount, Priority and DefaultTolerationSeconds (``plugin/pkg/admission/...``) for a pod; and
``pkg/authentication/serviceaccount/util.go`` for what a pod's bound token carries (its node since 1.30).

Three tokens: the **controller** (node updates and smoke pods: both policies, every request of a hand-over and of a
MIG rollout recorded from the real controller in the simulated world, and the sixteen kinds of request of issue #40
refused), the **executors** (node updates: their recorded reports allowed, everything else refused), and the **proof
Job's** ``gpu-platform-proof`` (``components.proof.component``): it creates the proof's CUDA pods, and no admission
policy applies to it; RBAC alone contains it (pods in its own namespace), which the last test states.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import (
    GPU_NODE_LABEL,
    HOST_DRIVER_REMOVAL_ENABLED,
    HOST_DRIVER_REMOVAL_LABEL,
    NODE_GROUP_LABEL,
    PROOF_NAMESPACE,
)
from components.catalog.node_agent import (
    AGENT_IMAGE,
    GPU_DEPLOY_DRIVER_LABEL,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_LABEL,
    MIG_TOGGLE_CONFIG,
    OPERAND_DEPLOY_LABELS,
    PAUSED_FOR_MIG,
    REASON_LABEL,
    REPORT_ANNOTATION,
    REQUEST_ANNOTATION,
    RETRY_ANNOTATION,
    STATE_LABEL,
    UPGRADE_SKIP_LABEL,
    State,
)
from components.catalog.upstream import GPU_OPERATOR_CHART, GPU_OPERATOR_SOURCE
from components.node_agent.admission import admission_policies
from components.node_agent.agent.controller.smoke import SMOKE_COMMAND, SMOKE_PRIORITY_CLASS, smoke_pod
from components.node_agent.agent.controller.view import NodeView, Record
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS
from components.node_agent.desired import operator_runtime_class
from components.proof import component as proof
from tests.helpers import ROOT
from tests.node_agent.sim import admission
from tests.node_agent.sim.admission import (
    Decision,
    Policies,
    Request,
    node_update,
    pod_create,
    service_account_user,
    stored_node,
)
from tests.node_agent.sim.world import NAMESPACE, World

CONTROLLER = service_account_user(NAMESPACE, admission.CONTROLLER_ACCOUNT, "node-agent-controller-7d9f-x2", "cpu-1")
PROOF = service_account_user(PROOF_NAMESPACE, proof.ACCOUNT, "gpu-platform-proof-3f2a-k8", "gpu-node-1")
POLICIES = admission.policies(NAMESPACE)
NEW_DRIVER = "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"


def executor(node: str) -> dict[str, Any]:
    return service_account_user(NAMESPACE, admission.EXECUTOR_ACCOUNT, f"node-agent-executor-{node}", node)


def decide(request: Request) -> Decision:
    return POLICIES.decide(request)


def _all_expressions() -> Iterator[tuple[str, str]]:
    for _, policy, _ in admission_policies(NAMESPACE, "c", "e", OPERATOR_RUNTIME_CLASS):
        spec = policy["spec"]
        for item in [*spec.get("matchConditions", []), *spec.get("variables", []), *spec["validations"]]:
            yield policy["metadata"]["name"], item["expression"]
            if "messageExpression" in item:
                yield policy["metadata"]["name"], item["messageExpression"]


# -- the runtime can check what Kubernetes would -------------------------------------------------------------
def test_every_expression_compiles() -> None:
    """Every expression compiles with this runtime's libraries only (a Kubernetes-only function would not)."""
    expressions = list(_all_expressions())
    assert len(expressions) > 30
    for _, expression in expressions:
        admission.compiled(expression)
    with pytest.raises(RuntimeError, match="undeclared reference"):
        admission.compiled("[1, 2].isSorted()")  # Kubernetes' lists library: not here, so not usable unseen


def _receivers(expression: str) -> list[str]:
    """The receiver text of every macro call (``x.all(...)``, ``.exists``, ``.filter``...), strings blanked."""
    text = re.sub(r"'[^']*'", "''", expression)
    found = []
    for match in re.finditer(r"\.(all|exists_one|exists|filter|map)\(", text):
        depth, index = 0, match.start() - 1
        while index >= 0:
            char = text[index]
            if char in ")]}":
                depth += 1
            elif char in "([{":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and char in " !&|=<>+-*/,":
                break
            index -= 1
        found.append(text[index + 1 : match.start()])
    return found


MAP_FIELDS = ("labels", "annotations", "nodeSelector")
LIST_VARIABLES = ("variables.labels", "variables.annotations")
MAP_VARIABLES = ("variables.newNotes", "variables.newLabels", "variables.oldLabels")


def _iterable(receiver: str) -> bool:
    if receiver in LIST_VARIABLES + MAP_VARIABLES or receiver.endswith(".orValue([])"):
        return True
    if receiver.endswith(".orValue({})"):
        return any(f".?{name}." in receiver for name in MAP_FIELDS)
    return bool(re.search(r"\.filter\([^()]*(\([^()]*\)[^()]*)*\)$", receiver))


def test_the_policies_iterate_only_maps_and_lists() -> None:
    """Kubernetes types ``object`` by its schema: a map (labels, annotations, nodeSelector) or a list can be iterated,
    a struct (``spec``, a container) cannot. This runtime would iterate anything, so each receiver is checked."""
    receivers = [(name, r) for name, expression in _all_expressions() for r in _receivers(expression)]
    assert len(receivers) > 10
    assert [(name, r) for name, r in receivers if not _iterable(r)] == []
    assert not _iterable("object.spec") and not _iterable("c.?securityContext.orValue({})")


# -- the flows' requests, recorded from the real controller --------------------------------------------------
def _handover(world: World) -> None:
    world.hosts["node-001"].modules_busy = True  # rmmod fails: the one reboot
    world.settle()
    world.hosts["node-002"].install("run")  # a host driver comes back after the hand-over
    world.run(1800.0)


def _mig_rollout(world: World) -> None:
    world.settle()


def _mig_toggle_and_paused_operands(world: World) -> None:
    world.mig.pod("node-000").no_restart = True  # a success earlier in this mig-manager pod's life
    world.mig.fail.add("node-000")
    world.settle()


def _mig_pending_taint(world: World) -> None:
    world.human_patch("node-000", {"spec": {"taints": [{"key": MIG_PENDING_TAINT_KEY, "effect": "NoSchedule"}]}})
    world.settle()


def _operator_note(world: World) -> None:
    world.run(600.0, until=lambda: world.state("node-000") == State.MIG_APPLYING)
    world.driver.set_image(NEW_DRIVER)
    world.settle()
    world.run(3600.0)


def _retry(world: World) -> None:
    world.hosts["node-000"].uninstall_rc = 1
    world.settle()
    world.hosts["node-000"].uninstall_rc = 0
    world.human_patch("node-000", {"metadata": {"annotations": {RETRY_ANNOTATION: "fixed the uninstaller"}}})
    world.settle()


def _cuda_proof(world: World) -> None:
    """A new node proven; another, of no flow (no desired layout), fails its CUDA proof and is cordoned
    (cordonOnProofFailure), then retried and proven."""
    world.run(900.0)
    world.smoke_failing.add("node-001")
    world.add_node("node-001")
    world.label("node-001", {MIG_DESIRED_LABEL: None})
    world.run(900.0)
    world.smoke_failing.discard("node-001")
    world.human_patch("node-001", {"metadata": {"annotations": {RETRY_ANNOTATION: "reseated the GPU"}}})
    world.run(900.0)


_DECLARED = {
    "a100": {
        "driver_version": "580.95.05",
        "driver_image": "nvcr.io/nvidia/driver:580.95.05",
        "owner": "gpu-platform-a100",
        "mig_config": "all-1g.10gb",
        "mig_resources": {"nvidia.com/mig-1g.10gb": 56},
    }
}


def _proof_world() -> World:
    settings = {"declarations": _DECLARED, "cordon_on_proof_failure": True}
    return World(nodes=1, flow="mig", start_layout="all-1g.10gb", pods_per_node=0, settings=settings)


SCENARIOS: dict[str, tuple[Callable[[], World], Callable[[World], None]]] = {
    "hand-over": (lambda: World(nodes=3, budget="1", settings={"recheck_seconds": 600}), _handover),
    "mig-rollout": (lambda: World(nodes=3, flow="mig", budget="1"), _mig_rollout),
    "mig-toggle": (lambda: World(nodes=1, flow="mig"), _mig_toggle_and_paused_operands),
    "mig-pending-taint": (lambda: World(nodes=1, flow="mig", start_layout="all-1g.10gb"), _mig_pending_taint),
    "operator-note": (lambda: World(nodes=1, flow="mig", budget="1"), _operator_note),
    "retry": (lambda: World(nodes=2, budget="2", operator_budget=2), _retry),
    "cuda-proof": (_proof_world, _cuda_proof),
}


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[Decision]]:
    """Every node update and pod create the controller and the executors made, per scenario, as the simulated API
    server handed them to the policies (only the requests that reached validating admission: a stale resourceVersion
    is a 409 first)."""
    found: dict[str, list[Decision]] = {}
    for name, (make, play) in SCENARIOS.items():
        with admission.recording() as seen:
            play(make())
        found[name] = list(seen)
    return found


def _is(user: dict[str, Any], account: str) -> bool:
    return str(user["username"]).endswith(f":{account}")


def _label_changes(request: Request) -> dict[str, tuple[str | None, str | None]]:
    old = (request.old_object or {}).get("metadata", {}).get("labels") or {}
    new = (request.object or {}).get("metadata", {}).get("labels") or {}
    return {k: (old.get(k), new.get(k)) for k in set(old) | set(new) if old.get(k) != new.get(k)}


def _note_changes(request: Request) -> dict[str, tuple[str | None, str | None]]:
    old = (request.old_object or {}).get("metadata", {}).get("annotations") or {}
    new = (request.object or {}).get("metadata", {}).get("annotations") or {}
    return {k: (old.get(k), new.get(k)) for k in set(old) | set(new) if old.get(k) != new.get(k)}


def effects(request: Request) -> set[str]:
    """What a controller request does, in the words of the policy's conditional rules."""
    if request.resource == "pods":
        return {"smoke-pod"}
    old, new = request.old_object or {}, request.object or {}
    found: set[str] = set()
    was, now = bool(old["spec"].get("unschedulable")), bool(new["spec"].get("unschedulable"))
    if now != was:
        found.add("cordon" if now else "uncordon")
    old_labels = old["metadata"].get("labels") or {}
    if now and not was and not (old_labels.get(MIG_DESIRED_LABEL) or old_labels.get(HOST_DRIVER_REMOVAL_LABEL)):
        found.add("cordon:cuda-proof-failed")  # a node no flow applies to: only with its proof's failure
    desired = (old["metadata"].get("labels") or {}).get(MIG_DESIRED_LABEL)
    for key, (before, after) in _label_changes(request).items():
        if key == MIG_LABEL:
            found.add("mig.config=desired" if after == desired else f"mig.config={after}")
        elif key in OPERAND_DEPLOY_LABELS:
            found.add(f"operand:{before}->{after}")
        elif key in (MIG_STATE_LABEL, UPGRADE_SKIP_LABEL, GPU_DEPLOY_DRIVER_LABEL):
            found.add(f"{key}={after}" if after is not None else f"{key}-")
    for key, (_, after) in _note_changes(request).items():
        if key == REQUEST_ANNOTATION and after:
            found.add(f"request:{json.loads(after)['step']}")
        elif key in (RETRY_ANNOTATION, operator.UPGRADE_INITIAL_STATE_ANNOTATION) and after is None:
            found.add(f"{key}-")
    old_taints = [t["key"] for t in old["spec"].get("taints") or []]
    new_taints = [t["key"] for t in new["spec"].get("taints") or []]
    if MIG_PENDING_TAINT_KEY in old_taints and MIG_PENDING_TAINT_KEY not in new_taints:
        found.add("mig-pending-taint-")
    return found


#: Every write the policy allows only under a condition: each is made by the real controller in some scenario.
GATED_WRITES = {
    "cordon",
    "uncordon",
    f"{UPGRADE_SKIP_LABEL}={operator.UPGRADE_SKIP_VALUE}",
    f"{UPGRADE_SKIP_LABEL}-",
    "request:inspect",
    "request:uninstall",
    "request:verify",
    "request:reboot",
    f"{GPU_DEPLOY_DRIVER_LABEL}=true",
    f"{GPU_DEPLOY_DRIVER_LABEL}=false",
    "mig.config=desired",
    f"mig.config={MIG_TOGGLE_CONFIG}",
    f"{MIG_STATE_LABEL}-",
    f"operand:{PAUSED_FOR_MIG}->true",
    "mig-pending-taint-",
    f"{RETRY_ANNOTATION}-",
    f"{operator.UPGRADE_INITIAL_STATE_ANNOTATION}-",
    "smoke-pod",
    "cordon:cuda-proof-failed",
}


def test_every_request_of_the_flows_is_allowed(recorded: dict[str, list[Decision]]) -> None:
    """Each node update and smoke pod the real controller made, and each report an executor wrote, evaluated again
    here, on its own: allowed by every policy that applies, and matched by the one meant for it."""
    counts: dict[str, int] = {}
    for scenario, decisions in recorded.items():
        for decision in decisions:
            request = decision.request
            again = decide(request)
            where = f"{scenario}: {request.resource} {request.name} by {request.user['username']}"
            assert again.allowed, f"{where}: {again.denials}\n{admission.as_json(request.object)}"
            if _is(request.user, admission.CONTROLLER_ACCOUNT):
                expected = "smoke-pods" if request.resource == "pods" else "controller-nodes"
            else:
                expected = "executor-own-node"
            assert again.matched == [f"gpu-platform-node-agent-{expected}"], where
            counts[scenario] = counts.get(scenario, 0) + 1
    assert set(counts) == set(SCENARIOS), counts
    assert sum(counts.values()) > 100, counts


def test_the_recorded_requests_make_every_write_the_policy_gates(recorded: dict[str, list[Decision]]) -> None:
    made = {
        effect
        for decisions in recorded.values()
        for decision in decisions
        if _is(decision.request.user, admission.CONTROLLER_ACCOUNT)
        for effect in effects(decision.request)
    }
    assert made >= GATED_WRITES, sorted(GATED_WRITES - made)
    assert not {e for e in made if e.startswith("mig.config=")} - {
        "mig.config=desired",
        f"mig.config={MIG_TOGGLE_CONFIG}",
    }


def test_an_executor_reports_on_its_own_node(recorded: dict[str, list[Decision]]) -> None:
    reports = [
        d.request
        for decisions in recorded.values()
        for d in decisions
        if _is(d.request.user, admission.EXECUTOR_ACCOUNT)
    ]
    assert len(reports) > 20
    for request in reports:
        assert set(_note_changes(request)) == {REPORT_ANNOTATION}
        assert request.user["extra"]["authentication.kubernetes.io/node-name"] == [request.name]


# -- nodes as the program labels them ------------------------------------------------------------------------
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
PENDING_TAINT = {"key": MIG_PENDING_TAINT_KEY, "effect": "NoSchedule"}
#: A node of a group handed over (the program's labels: GPU, pool, opt-in).
HANDOVER = stored_node(
    "v100-1",
    {GPU_NODE_LABEL: "true", NODE_GROUP_LABEL: "v100", HOST_DRIVER_REMOVAL_LABEL: HOST_DRIVER_REMOVAL_ENABLED},
    [GPU_TAINT],
)
#: A node of a MIG pool whose layout goes through the agent.
MIG = stored_node(
    "a100-1",
    {GPU_NODE_LABEL: "true", NODE_GROUP_LABEL: "a100", MIG_DESIRED_LABEL: "all-1g.10gb", MIG_LABEL: "all-disabled"},
    [GPU_TAINT, PENDING_TAINT],
)
#: A GPU node of a pool the agent does not maintain (no opt-in, no desired layout).
OTHER_GPU = stored_node("t4-1", {GPU_NODE_LABEL: "true", NODE_GROUP_LABEL: "t4"}, [GPU_TAINT])
CONTROL_PLANE = stored_node(
    "master-1",
    {"node-role.kubernetes.io/control-plane": ""},
    [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
)
CPU = stored_node("cpu-1", {"node.kubernetes.io/instance-type": "standard-v3"})


def _update(node: dict[str, Any], patch: dict[str, Any], user: dict[str, Any] = CONTROLLER) -> Decision:
    body = json.loads(json.dumps(patch))
    body.setdefault("metadata", {})["resourceVersion"] = node["metadata"]["resourceVersion"]
    return decide(node_update(node, body, user))


def _denied_by(decision: Decision, needle: str) -> None:
    assert not decision.allowed, "allowed"
    assert any(needle in denial for denial in decision.denials), decision.denials
    assert all("(Forbidden)" in denial for denial in decision.denials), decision.denials


def _request(step: str) -> str:
    return json.dumps({"at": 1.0, "id": f"uid.1.{step}", "step": step}, sort_keys=True, separators=(",", ":"))


# Issue #40, group 1 (node spec beyond the flows) and group 2 (nodes and requests outside the declaration): each
# request the controller's token could make, the node, and the rule (a words of its message) that refuses it.
NODE_DENIALS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "1 removes a taint that is not its own": (MIG, {"spec": {"taints": [PENDING_TAINT]}}, "may only remove the"),
    "2 adds a NoExecute taint under another key": (
        HANDOVER,
        {"spec": {"taints": [GPU_TAINT, {"key": "evict-everything", "effect": "NoExecute"}]}},
        "may only remove the",
    ),
    "2b gives its own taint the NoExecute effect": (
        MIG,
        {"spec": {"taints": [GPU_TAINT, {"key": MIG_PENDING_TAINT_KEY, "effect": "NoExecute"}]}},
        "may only remove the",
    ),
    "3 changes podCIDR": (HANDOVER, {"spec": {"podCIDR": "10.0.0.0/8", "podCIDRs": ["10.0.0.0/8"]}}, "podCIDR(s)"),
    "3b changes providerID": (HANDOVER, {"spec": {"providerID": "yandex://elsewhere"}}, "providerID"),
    "4 cordons a control-plane node": (CONTROL_PLANE, {"spec": {"unschedulable": True}}, "only GPU nodes of a pool"),
    "4b cordons a CPU node": (CPU, {"spec": {"unschedulable": True}}, "only GPU nodes of a pool"),
    "4c cordons a GPU node of a pool it does not maintain": (
        OTHER_GPU,
        {"spec": {"unschedulable": True}},
        "may cordon only a node a flow applies to",
    ),
    "4d cordons a GPU node of a pool it does not maintain with another failure's reason": (
        OTHER_GPU,
        {"spec": {"unschedulable": True}, "metadata": {"labels": {STATE_LABEL: "failed", REASON_LABEL: "mig-failed"}}},
        "may cordon only a node a flow applies to",
    ),
    "4e cordons a GPU node of a pool it does not maintain with the proof's reason but not failed": (
        OTHER_GPU,
        {"spec": {"unschedulable": True}, "metadata": {"labels": {REASON_LABEL: "cuda-proof-failed"}}},
        "may cordon only a node a flow applies to",
    ),
    "5 writes gpu.deploy.driver on a node of no hand-over pool": (
        OTHER_GPU,
        {"metadata": {"labels": {GPU_DEPLOY_DRIVER_LABEL: "true"}}},
        f"may set {GPU_DEPLOY_DRIVER_LABEL}",
    ),
    "5b writes gpu.deploy.driver on a MIG node": (
        MIG,
        {"metadata": {"labels": {GPU_DEPLOY_DRIVER_LABEL: "false"}}},
        f"may set {GPU_DEPLOY_DRIVER_LABEL}",
    ),
    "6 writes a MIG config on a node with no desired layout": (
        HANDOVER,
        {"metadata": {"labels": {MIG_LABEL: "all-1g.10gb"}}},
        f"may set {MIG_LABEL} only on a node with a desired MIG config",
    ),
    "6b writes a MIG config other than the desired one": (
        MIG,
        {"metadata": {"labels": {MIG_LABEL: "all-7g.80gb"}}},
        f"may set {MIG_LABEL} only on a node with a desired MIG config",
    ),
    "7 asks for an uninstall on a node whose group did not opt in": (
        MIG,
        {"metadata": {"annotations": {REQUEST_ANNOTATION: _request("uninstall")}}},
        "only on a node whose group opted in",
    ),
    "7b asks for an uninstall on a GPU node of another pool": (
        OTHER_GPU,
        {"metadata": {"annotations": {REQUEST_ANNOTATION: _request("uninstall")}}},
        "only on a node whose group opted in",
    ),
    # Beyond the issue's list: the same rules, other keys.
    "sets the skip label on a node no flow applies to": (
        OTHER_GPU,
        {"metadata": {"labels": {UPGRADE_SKIP_LABEL: "true"}}},
        f"may set {UPGRADE_SKIP_LABEL}",
    ),
    "pauses an operand": (
        MIG,
        {"metadata": {"labels": {OPERAND_DEPLOY_LABELS[0]: "false"}}},
        "left paused-for-mig-change",
    ),
    "writes mig-manager's state": (MIG, {"metadata": {"labels": {MIG_STATE_LABEL: "success"}}}, f"{MIG_STATE_LABEL}"),
    "writes a retry request itself": (
        HANDOVER,
        {"metadata": {"annotations": {RETRY_ANNOTATION: "again"}}},
        "may only remove",
    ),
    "writes a state it does not know": (HANDOVER, {"metadata": {"labels": {STATE_LABEL: "owned"}}}, "take only"),
    "changes the program's desired layout": (
        MIG,
        {"metadata": {"labels": {MIG_DESIRED_LABEL: "all-7g.80gb"}}},
        "may change only the labels",
    ),
    "adds a finalizer": (HANDOVER, {"metadata": {"finalizers": ["example.com/hold"]}}, "owner references"),
}


@pytest.mark.parametrize("what", sorted(NODE_DENIALS))
def test_the_controller_s_node_request_is_refused(what: str) -> None:
    node, patch, rule = NODE_DENIALS[what]
    _denied_by(_update(node, patch), rule)


# The same nodes, the writes the flows make there: allowed (so each refusal above is the rule's, not the node's).
NODE_ALLOWED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "its own taint removed": (MIG, {"spec": {"taints": [GPU_TAINT]}}),
    "a hand-over node cordoned and fenced": (
        HANDOVER,
        {"spec": {"unschedulable": True}, "metadata": {"labels": {UPGRADE_SKIP_LABEL: "true"}}},
    ),
    "a MIG node cordoned": (MIG, {"spec": {"unschedulable": True}}),
    "gpu.deploy.driver on an opted-in node": (HANDOVER, {"metadata": {"labels": {GPU_DEPLOY_DRIVER_LABEL: "true"}}}),
    "the desired MIG config, state cleared": (
        MIG,
        {"metadata": {"labels": {MIG_LABEL: "all-1g.10gb", MIG_STATE_LABEL: None}}},
    ),
    "the toggle": (MIG, {"metadata": {"labels": {MIG_LABEL: MIG_TOGGLE_CONFIG}}}),
    "an uninstall request on an opted-in node": (
        HANDOVER,
        {"metadata": {"annotations": {REQUEST_ANNOTATION: _request("uninstall")}}},
    ),
    "a state label on a GPU node of another pool, and its request cleared": (
        OTHER_GPU,
        {"metadata": {"labels": {STATE_LABEL: "idle"}, "annotations": {REQUEST_ANNOTATION: None}}},
    ),
    "an uncordon of a GPU node of another pool": (OTHER_GPU, {"spec": {"unschedulable": False}}),
    "a GPU node of another pool cordoned as its CUDA proof fails (cordonOnProofFailure)": (
        OTHER_GPU,
        {
            "spec": {"unschedulable": True},
            "metadata": {"labels": {STATE_LABEL: "failed", REASON_LABEL: "cuda-proof-failed"}},
        },
    ),
}


@pytest.mark.parametrize("what", sorted(NODE_ALLOWED))
def test_the_controller_s_flow_write_is_allowed(what: str) -> None:
    node, patch = NODE_ALLOWED[what]
    decision = _update(node, patch)
    assert decision.allowed, decision.denials


# -- the smoke pods -------------------------------------------------------------------------------------------
VIEW = NodeView(
    name="a100-1",
    uid="0b7f6c1e-2d2a-4c1b-9a57-1f0d7c3e9a11",
    rv="4711",
    pool="a100",
    labels={},
    annotations={},
    unschedulable=True,
    taints=[],
    allocatable={},
    record=None,
    request={},
    report={},
)


def _smoke(mutate: Callable[[dict[str, Any]], None] | None = None, runtime_class: str = OPERATOR_RUNTIME_CLASS) -> Any:
    pod = smoke_pod(VIEW, Record(uid=VIEW.uid, attempt=1), 0, "nvidia.com/mig-1g.10gb", NAMESPACE, runtime_class)
    if mutate is not None:
        mutate(pod)
    return pod


def _create(pod: dict[str, Any], policies: Policies = POLICIES) -> Decision:
    return policies.decide(pod_create(pod, NAMESPACE, CONTROLLER, admission.PROGRAM_PRIORITY_CLASSES))


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(pod["spec"]["containers"][0])


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(pod: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = pod
        for key in parents:
            node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
        node[last] = value

    return mutate


def _both(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(pod: dict[str, Any]) -> None:
        for each in mutations:
            each(pod)

    return mutate


C = "spec.containers.0"
RESTRICTED = "Pod Security"
# Issue #40, group 3: what a smoke pod may not be, each one change to the controller's own smoke pod.
POD_DENIALS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "8 runs as root": (
        _both(
            _set(f"{C}.securityContext.runAsUser", 0),
            _set(f"{C}.securityContext.runAsNonRoot", False),
            _set("spec.securityContext.runAsUser", 0),
            _set("spec.securityContext.runAsNonRoot", False),
        ),
        RESTRICTED,
    ),
    "8b names no user on an image whose user is root": (
        _both(
            lambda pod: pod["spec"]["containers"][0]["securityContext"].pop("runAsUser"),
            lambda pod: pod["spec"]["securityContext"].pop("runAsUser"),
        ),
        RESTRICTED,
    ),
    "9 Unconfined seccomp": (_set("spec.securityContext.seccompProfile", {"type": "Unconfined"}), RESTRICTED),
    "9b Unconfined seccomp in the container": (
        _set(f"{C}.securityContext.seccompProfile", {"type": "Unconfined"}),
        RESTRICTED,
    ),
    "10 Unconfined AppArmor": (_set(f"{C}.securityContext.appArmorProfile", {"type": "Unconfined"}), RESTRICTED),
    "10b Unconfined AppArmor by annotation": (
        _set("metadata.annotations", {"container.apparmor.security.beta.kubernetes.io/smoke": "unconfined"}),
        RESTRICTED,
    ),
    "11 an Unmasked proc mount": (_set(f"{C}.securityContext.procMount", "Unmasked"), RESTRICTED),
    "12 a host port": (_set(f"{C}.ports", [{"containerPort": 8080, "hostPort": 8080}]), "no args, env, probe"),
    "13 the system-node-critical priority class": (
        _set("spec.priorityClassName", "system-node-critical"),
        "PriorityClass",
    ),
    "14 bound to a control-plane node tolerating every taint": (
        _both(
            _set("spec.nodeName", "master-1"),
            _set("spec.nodeSelector", {"node-role.kubernetes.io/control-plane": ""}),
            _set("spec.tolerations", [{"operator": "Exists"}]),
        ),
        "selects a GPU node of a pool",
    ),
    "14b tolerating every taint": (_set("spec.tolerations", [{"operator": "Exists"}]), "tolerates only"),
    "14c tolerating every effect of the cordon's key": (
        _set("spec.tolerations", [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
        "tolerates only",
    ),
    "15 an arbitrary command in the agent image": (
        _set(f"{C}.command", ["python3", "-c", "import os; os.system('id')"]),
        "the command nvidia-smi -L",
    ),
    "15b the fixed command with args": (_set(f"{C}.args", ["--query"]), "the command nvidia-smi -L"),
    "15c a command in an exec probe": (
        _set(f"{C}.livenessProbe", {"exec": {"command": ["sh", "-c", "id"]}}),
        "the command nvidia-smi -L",
    ),
    "15d a command in a lifecycle hook": (
        _set(f"{C}.lifecycle", {"postStart": {"exec": {"command": ["sh", "-c", "id"]}}}),
        "the command nvidia-smi -L",
    ),
    "15e a second container": (
        lambda pod: pod["spec"]["containers"].append({**_container(pod), "name": "second"}),
        "runs one container",
    ),
    "16 another RuntimeClass": (_set("spec.runtimeClassName", "kata-qemu"), "RuntimeClass"),
    "16b no RuntimeClass where the operator installs one": (
        lambda pod: pod["spec"].pop("runtimeClassName"),
        "RuntimeClass",
    ),
    # Beyond the issue's list.
    "another image": (_set(f"{C}.image", "docker.io/library/busybox:1.36"), "the agent image"),
    "a privileged container": (_set(f"{C}.securityContext.privileged", True), RESTRICTED),
    "privilege escalation": (_set(f"{C}.securityContext.allowPrivilegeEscalation", True), RESTRICTED),
    "an added capability": (_set(f"{C}.securityContext.capabilities", {"add": ["SYS_ADMIN"]}), RESTRICTED),
    "capabilities not dropped": (_set(f"{C}.securityContext.capabilities", {}), RESTRICTED),
    "an env from a Secret": (_set(f"{C}.envFrom", [{"secretRef": {"name": "any"}}]), "no args, env"),
    "the host's PID namespace": (_set("spec.hostPID", True), "host namespace"),
    "a hostPath volume": (_set("spec.volumes", [{"name": "root", "hostPath": {"path": "/"}}]), "mounts no volume"),
    "the token mounted": (_set("spec.automountServiceAccountToken", True), "no token mounted"),
    "another service account": (_set("spec.serviceAccountName", "node-agent-controller"), "default service account"),
    "not bound to a node": (lambda pod: pod["spec"].pop("nodeName"), "bound to the node"),
    "an init container": (lambda pod: pod["spec"].update(initContainers=[_container(pod)]), "init or ephemeral"),
    "a sysctl": (_set("spec.securityContext.sysctls", [{"name": "kernel.shm_rmid_forced", "value": "1"}]), RESTRICTED),
    "SELinux options": (_set(f"{C}.securityContext.seLinuxOptions", {"type": "spc_t"}), RESTRICTED),
    "not a smoke pod": (_set("metadata.name", "miner"), "only smoke pods"),
    "restarts forever": (_set("spec.restartPolicy", "Always"), "runs once"),
}


def test_the_controller_s_smoke_pod_is_allowed_and_meets_restricted() -> None:
    pod = _smoke()
    decision = _create(pod)
    assert decision.allowed, decision.denials
    assert decision.matched == ["gpu-platform-node-agent-smoke-pods"]
    spec = pod["spec"]
    assert spec["priorityClassName"] == SMOKE_PRIORITY_CLASS and spec["runtimeClassName"] == OPERATOR_RUNTIME_CLASS
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["containers"][0]["command"] == list(SMOKE_COMMAND) and spec["containers"][0]["image"] == AGENT_IMAGE
    # What the policy saw carries the API server's own tolerations, which it allows.
    admitted = pod_create(pod, NAMESPACE, CONTROLLER, admission.PROGRAM_PRIORITY_CLASSES).object or {}
    assert {t["key"] for t in admitted["spec"]["tolerations"]} >= {"node.kubernetes.io/not-ready"}


@pytest.mark.parametrize("what", sorted(POD_DENIALS))
def test_the_controller_s_pod_is_refused(what: str) -> None:
    mutate, rule = POD_DENIALS[what]
    _denied_by(_create(_smoke(mutate)), rule)


def test_where_the_operator_installs_no_runtime_class_a_smoke_pod_names_none() -> None:
    """With CDI's NRI plugin the operator installs no RuntimeClass: the policy then refuses any."""
    policies = Policies([p for _, p, _ in admission_policies(NAMESPACE, "node-agent-controller", "e", "")])
    assert _create(_smoke(runtime_class=""), policies).allowed
    _denied_by(_create(_smoke(), policies), "RuntimeClass")


def test_the_runtime_class_is_the_one_the_operator_installs() -> None:
    """The default is the pinned chart's ``operator.runtimeClass`` and the operator's ``DefaultRuntimeClass``."""
    chart = yaml.safe_load((ROOT / GPU_OPERATOR_CHART.path / "values.yaml").read_text())
    assert chart["operator"]["runtimeClass"] == OPERATOR_RUNTIME_CLASS
    source = (ROOT / GPU_OPERATOR_SOURCE.path / "controllers/object_controls.go").read_text()
    assert re.search(rf'DefaultRuntimeClass\s*=\s*"{OPERATOR_RUNTIME_CLASS}"', source)
    assert operator_runtime_class({}) == OPERATOR_RUNTIME_CLASS
    assert operator_runtime_class({"operator": {"runtimeClass": "nvidia-cdi"}}) == "nvidia-cdi"
    assert operator_runtime_class({"cdi": {"nriPluginEnabled": True}}) == ""
    assert operator_runtime_class({"cdi": {"enabled": False, "nriPluginEnabled": True}}) == OPERATOR_RUNTIME_CLASS


def test_an_eviction_is_not_a_pod_create_for_the_smoke_pod_policy() -> None:
    """``pods/eviction`` is a subresource: the smoke-pod policy (``pods``) never sees it, so evictions pass."""
    decision = decide(admission.pod_eviction("team", "train-0", CONTROLLER))
    assert decision.allowed and decision.matched == []


# -- the executors' token -------------------------------------------------------------------------------------
EXECUTOR_DENIALS: dict[str, tuple[str, dict[str, Any], dict[str, Any], str]] = {
    "another node's report": ("a100-2", {"metadata": {"annotations": {REPORT_ANNOTATION: "{}"}}}, {}, "only its own"),
    "a label": ("a100-1", {"metadata": {"labels": {STATE_LABEL: "done"}}}, {}, "may not change a label"),
    "the controller's request": (
        "a100-1",
        {"metadata": {"annotations": {REQUEST_ANNOTATION: _request("reboot")}}},
        {},
        "may change only the annotation",
    ),
    "a cordon": ("a100-1", {"spec": {"unschedulable": True}}, {}, "may not change the spec"),
    "a finalizer": ("a100-1", {"metadata": {"finalizers": ["x"]}}, {}, "owner references"),
    "a token without a node": (
        "a100-1",
        {"metadata": {"annotations": {REPORT_ANNOTATION: "{}"}}},
        {"node": ""},
        "carries no node",
    ),
}


@pytest.mark.parametrize("what", sorted(EXECUTOR_DENIALS))
def test_an_executor_s_request_is_refused(what: str) -> None:
    target, patch, token, rule = EXECUTOR_DENIALS[what]
    node = {**MIG, "metadata": {**MIG["metadata"], "name": target}}
    user = service_account_user(
        NAMESPACE, admission.EXECUTOR_ACCOUNT, "node-agent-executor-x", token.get("node", "a100-1")
    )
    _denied_by(_update(node, patch, user), rule)


def test_an_executor_s_report_on_its_own_node_is_allowed() -> None:
    decision = _update(MIG, {"metadata": {"annotations": {REPORT_ANNOTATION: '{"id":"x"}'}}}, executor("a100-1"))
    assert decision.allowed and decision.matched == ["gpu-platform-node-agent-executor-own-node"]


# -- the proof Job's token --------------------------------------------------------------------------------------
def test_no_admission_policy_applies_to_the_proof_s_token() -> None:
    """The proof Job (``components.proof.component``) creates its CUDA pods under its own ServiceAccount: none of
    the agent's policies match it (their match conditions name the agent's accounts), so it is contained by its RBAC
    only: pods list/create/delete in ``gpu-platform-proof``, nodes list, reads in the operator's namespace."""
    pod = {
        "metadata": {"name": "gpu-platform-proof-cuda-v100-1"},
        "spec": {
            "nodeName": "v100-1",
            "priorityClassName": proof.PRIORITY_CLASS,
            "containers": [{"name": "cuda", "image": AGENT_IMAGE, "command": ["sh"]}],
        },
    }
    classes = [admission.PriorityClass(proof.PRIORITY_CLASS, proof.PRIORITY_VALUE)]
    decision = decide(pod_create(pod, PROOF_NAMESPACE, PROOF, classes))
    assert decision.allowed and decision.matched == []
    assert decide(node_update(HANDOVER, {"spec": {"unschedulable": True}}, PROOF)).matched == []
