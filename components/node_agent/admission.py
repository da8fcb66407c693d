"""ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, served since Kubernetes 1.30) for the agent.

Three policies, bound with ``Deny``; every validation answers ``Forbidden`` (403), as RBAC would:

- **executor-own-node**: an executor may change only the Node its pod runs on, and there only its report
  annotation: no label, no other annotation, nothing in ``spec``, no owner reference, no finalizer. The node
  comes from the token: a pod's bound service-account token carries its node, and the API server puts it in
  the user's extra as ``authentication.kubernetes.io/node-name`` (``NodeNameKey`` in
  k8s.io/apiserver/pkg/authentication/serviceaccount/util.go; ServiceAccountTokenPodNodeInfo, on by default
  since 1.30). Kubernetes' own per-node policy reads it the same way
  (test/e2e/auth/e2edata/per_node_validatingadmissionpolicy.yaml).
- **controller-nodes**: the controller may write exactly what its flows write, and only where the node says the
  flow applies. What a node says is read from the labels the **program** sets (the controller can change none of
  them): ``gpu-platform.io/gpu=true`` and a ``gpu-platform.io/node-group`` (a GPU node of a pool), the hand-over
  opt-in ``gpu-platform.io/host-driver-removal=enabled``, and the desired MIG config
  ``gpu-platform.io/node-agent.mig-desired-config``. On a GPU node of a pool it may write its state, reason, flow,
  record and detail, uncordon, remove the skip label it set, its request, its MIG-pending taint, the retry
  annotation and the operator's initial-state note, and set back to ``true`` an operand label mig-manager left
  ``paused-for-mig-change``. Only where a flow applies (opted in, or a desired MIG config) may it cordon and set
  the GPU Operator's skip label, and elsewhere cordon only in the write that fails a node's CUDA proof (state
  ``failed``, reason ``cuda-proof-failed``: ``nodeAgent.cordonOnProofFailure``); only on an opted-in node may it
  ask the executor for a step or set ``nvidia.com/gpu.deploy.driver`` (``true``/``false``); only on a node with a desired MIG config may it set
  ``nvidia.com/mig.config`` (to that config, or the toggle ``all-disabled``) and remove mig-manager's state. In
  ``spec`` nothing else changes: no taint of another key added, removed or changed (no ``NoExecute`` that evicts
  around PodDisruptionBudgets), its own taint only removed, ``podCIDR(s)``, ``providerID``, ``externalID`` and
  ``configSource`` as they were; owner references and finalizers as they were.
- **smoke-pods**: the controller may create only smoke pods, and a smoke pod meets Pod Security "restricted"
  and more: bound to a node and selecting a GPU node of a pool (the kubelet refuses a bound pod whose node does not
  match its selector: a policy sees only the pod, never its node), one container on the agent's pinned image with
  the fixed command and no ``args``, ``env``, probe, hook or port, non-root, no privilege escalation, every
  capability dropped, the ``RuntimeDefault`` seccomp profile, no ``Unconfined`` AppArmor, no ``Unmasked`` proc
  mount, no SELinux options or sysctls, no host namespace, no volume, no token, the program's own PriorityClass,
  the GPU Operator's RuntimeClass (none where it installs none), and only the tolerations of a cordon and of the
  MIG-pending taint (and the API server's own ``not-ready``/``unreachable`` ones, with their seconds).

Evictions cannot be narrowed by admission: the object admission sees for ``pods/eviction`` is the ``Eviction``
(policy/v1: a pod name, a namespace, delete options; pkg/registry/core/pod/storage/eviction.go admits it
before it reads the pod), so the pod's node is not in the request, and CEL admission has no lookup of other
objects. So only the controller's ServiceAccount may evict at all (the executors have no eviction right),
and the controller evicts only pods it listed on a node whose Lease it holds (``controller/decide.py``).

The expressions use the CEL of Kubernetes' admission (the optional types, string functions) and nothing a plain
CEL runtime lacks: they are evaluated, request by request, by the CEL C++ runtime in
``tests/node_agent/test_admission_cel.py``. They iterate only maps (labels, annotations) and lists, never the fields
of a typed object, which Kubernetes' type checker refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import GPU_NODE_LABEL, HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    AGENT_IMAGE,
    CONTROLLER_ANNOTATIONS,
    CONTROLLER_LABELS,
    EXECUTOR_ANNOTATIONS,
    FLOW_LABEL,
    GPU_DEPLOY_DRIVER_LABEL,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_LABEL,
    MIG_TOGGLE_CONFIG,
    OPERAND_DEPLOY_LABELS,
    PAUSED_FOR_MIG,
    POOL_LABEL,
    REASON_LABEL,
    REQUEST_ANNOTATION,
    RETRY_ANNOTATION,
    SMOKE_LABEL,
    STATE_LABEL,
    UPGRADE_SKIP_LABEL,
    Flow,
    Reason,
    State,
)
from components.node_agent.agent.controller.smoke import (
    SMOKE_COMMAND,
    SMOKE_NAME_PREFIX,
    SMOKE_PRIORITY_CLASS,
    SMOKE_TOLERATIONS,
)
from components.node_agent.agent.labeller.membership import RELEASED_STATES, parse_memberships
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS

NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
TOKEN_NODE = f"request.userInfo.extra[?'{NODE_NAME_KEY}'][0].orValue('')"
EXECUTOR_POLICY = "gpu-platform-node-agent-executor-own-node"
CONTROLLER_POLICY = "gpu-platform-node-agent-controller-nodes"
SMOKE_POLICY = "gpu-platform-node-agent-smoke-pods"
#: Every validation answers 403 Forbidden (without a reason the API server answers 422 Invalid: Validation.reason).
REASON = "Forbidden"
#: Annotations the controller only ever removes: a person's retry request (read, then cleared) and the operator's
#: initial-state note (removed when the operator wrote it only because of the controller's cordon).
REMOVED_ONLY_ANNOTATIONS: tuple[str, ...] = (RETRY_ANNOTATION, operator.UPGRADE_INITIAL_STATE_ANNOTATION)
#: The tolerations the API server adds to every pod that has none for them (plugin DefaultTolerationSeconds,
#: plugin/pkg/admission/defaulttolerationseconds/admission.go: ``node.kubernetes.io/not-ready`` and
#: ``node.kubernetes.io/unreachable``, ``NoExecute``, 300 s), before any validating admission sees the pod.
DEFAULT_NO_EXECUTE_TOLERATIONS: tuple[str, ...] = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
DEFAULT_TOLERATION_SECONDS = 300
#: Pod Security "restricted" allows these AppArmor annotation values (``runtime/default``, ``localhost/*``); the
#: smoke pods use none, and the policy allows the runtime's default only.
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def _cel_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _changed(field: str) -> str:
    new = f"object.metadata.?{field}.orValue({{}})"
    old = f"oldObject.metadata.?{field}.orValue({{}})"
    return f"{new}.filter(k, !(k in {old}) || {old}[k] != {new}[k]) + {old}.filter(k, !(k in {new}))"


def _same(path: str, empty: str) -> str:
    return f"object.{path}.orValue({empty}) == oldObject.{path}.orValue({empty})"


def _validation(expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "message": message, "reason": REASON}


_OWNERS_AND_FINALIZERS = _validation(
    f"{_same('metadata.?ownerReferences', '[]')} && {_same('metadata.?finalizers', '[]')}",
    "owner references and finalizers of a Node are not the node agent's to change",
)


def _spec_fields_unchanged() -> str:
    """Every field of core/v1 NodeSpec but ``unschedulable`` and ``taints`` as it was (k8s.io/api core/v1 types.go
    ``NodeSpec``: podCIDR, podCIDRs, providerID, unschedulable, taints, configSource, externalID). Named one by one:
    a typed object's fields cannot be iterated in Kubernetes' CEL."""
    same = [_same(f"spec.?{name}", "''") for name in ("providerID", "podCIDR", "externalID")]
    same.append(_same("spec.?podCIDRs", "[]"))
    same.append(_same("spec.?configSource", "{}"))
    return " && ".join(same)


def _taints_unchanged_but_own_removed() -> str:
    """Every taint of another key exactly as it was (none added, removed, reordered or changed); its own taint only
    removed (or left as it was): never added, never another effect. Parenthesised: ``||`` binds looser than ``&&``."""
    ours = f"t.key == '{MIG_PENDING_TAINT_KEY}'"
    theirs = f"t.key != '{MIG_PENDING_TAINT_KEY}'"
    new, old = "object.spec.?taints.orValue([])", "oldObject.spec.?taints.orValue([])"
    others = f"({new}.filter(t, {theirs}) == {old}.filter(t, {theirs}))"
    own = f"({new}.filter(t, {ours}).size() == 0 || {new}.filter(t, {ours}) == {old}.filter(t, {ours}))"
    return f"{others} && {own}"


def _binding(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}


def _user(namespace: str, account: str) -> list[dict[str, str]]:
    return [
        {
            "name": "is-account",
            "expression": f"request.userInfo.username == 'system:serviceaccount:{namespace}:{account}'",
        }
    ]


def _node_rules() -> dict[str, Any]:
    return {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes"]}]
    }


#: The node's labels before and after the write, as the node policies' first variables.
_LABELS_BEFORE_AND_AFTER: list[dict[str, str]] = [
    {"name": "oldLabels", "expression": "oldObject.metadata.?labels.orValue({})"},
    {"name": "newLabels", "expression": "object.metadata.?labels.orValue({})"},
]


def _node_policy(name: str, namespace: str, account: str, body: dict[str, Any]) -> dict[str, Any]:
    """A policy on Node writes of one ServiceAccount, refusing when it cannot be evaluated; ``body``: its variables
    and validations (the executor's, the controller's and the labeller's policies differ only there)."""
    return {
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _node_rules(),
            "matchConditions": _user(namespace, account),
            **body,
        },
    }


def executor_policy(namespace: str, account: str) -> dict[str, Any]:
    return _node_policy(
        EXECUTOR_POLICY,
        namespace,
        account,
        {
            "variables": [
                {"name": "tokenNode", "expression": TOKEN_NODE},
                {"name": "annotations", "expression": _changed("annotations")},
            ],
            "validations": [
                _validation(
                    "variables.tokenNode != ''",
                    f"the token carries no node ({NODE_NAME_KEY}): the executor must run in a pod on a node",
                ),
                {
                    "expression": "object.metadata.name == variables.tokenNode",
                    "messageExpression": "'the executor on ' + variables.tokenNode + ' may change only its own node, "
                    "not ' + object.metadata.name",
                    "reason": REASON,
                },
                _validation(
                    f"variables.annotations.all(k, k in {_cel_list(EXECUTOR_ANNOTATIONS)})",
                    f"an executor may change only the annotation {', '.join(EXECUTOR_ANNOTATIONS)}",
                ),
                _validation(_same("metadata.?labels", "{}"), "an executor may not change a label"),
                _validation("object.spec == oldObject.spec", "an executor may not change the spec"),
                _OWNERS_AND_FINALIZERS,
            ],
        },
    )


def _changed_to(key: str, values: str) -> str:
    """``key`` unchanged, removed, or set to one of ``values`` (a CEL list)."""
    return f"!('{key}' in variables.labels) || !('{key}' in variables.newLabels) || variables.newLabels['{key}'] in {values}"


def controller_policy(namespace: str, account: str) -> dict[str, Any]:
    """What the controller's flows write, and where (see the module docstring). The node facts are variables: the
    program's labels are read only there, so no validation names a label the controller may not change."""
    states = _cel_list([state.value for state in State])
    reasons = _cel_list([reason.value for reason in Reason])
    flows = _cel_list([flow.value for flow in Flow])
    operands = _cel_list(OPERAND_DEPLOY_LABELS)
    label = "variables.newLabels"
    return _node_policy(
        CONTROLLER_POLICY,
        namespace,
        account,
        {
            "variables": [
                *_LABELS_BEFORE_AND_AFTER,
                {"name": "newNotes", "expression": "object.metadata.?annotations.orValue({})"},
                {"name": "labels", "expression": _changed("labels")},
                {"name": "annotations", "expression": _changed("annotations")},
                # What the node says, from the program's labels (unchanged: the controller may change none of them).
                {
                    "name": "gpuNodeOfPool",
                    "expression": f"variables.oldLabels[?'{GPU_NODE_LABEL}'].orValue('') == 'true' && "
                    f"variables.oldLabels[?'{POOL_LABEL}'].orValue('') != ''",
                },
                {
                    "name": "optedIn",
                    "expression": f"variables.oldLabels[?'{HOST_DRIVER_REMOVAL_LABEL}'].orValue('') == "
                    f"'{HOST_DRIVER_REMOVAL_ENABLED}'",
                },
                {"name": "desiredMig", "expression": f"variables.oldLabels[?'{MIG_DESIRED_LABEL}'].orValue('')"},
                {
                    "name": "cordons",
                    "expression": "object.spec.?unschedulable.orValue(false) && "
                    "!oldObject.spec.?unschedulable.orValue(false)",
                },
            ],
            "validations": [
                _validation(
                    "variables.gpuNodeOfPool",
                    f"the controller may change only GPU nodes of a pool (the program's {GPU_NODE_LABEL}=true and "
                    f"{POOL_LABEL} labels): not a control-plane, CPU or unlabelled node",
                ),
                _validation(
                    f"variables.labels.all(k, k in {_cel_list(CONTROLLER_LABELS)})",
                    f"the controller may change only the labels {', '.join(CONTROLLER_LABELS)}",
                ),
                _validation(
                    f"variables.annotations.all(k, k in {_cel_list(CONTROLLER_ANNOTATIONS)})",
                    f"the controller may change only the annotations {', '.join(CONTROLLER_ANNOTATIONS)}",
                ),
                _validation(
                    f"({_changed_to(STATE_LABEL, states)}) && ({_changed_to(REASON_LABEL, reasons)}) && "
                    f"({_changed_to(FLOW_LABEL, flows)})",
                    "the controller's state, reason and flow labels take only the values its controller knows",
                ),
                _validation(
                    "!variables.cordons || variables.optedIn || variables.desiredMig != '' || ("
                    f"{label}[?'{STATE_LABEL}'].orValue('') == '{State.FAILED.value}' && "
                    f"{label}[?'{REASON_LABEL}'].orValue('') == '{Reason.PROOF_FAILED.value}')",
                    "the controller may cordon only a node a flow applies to: opted in to the driver hand-over, or "
                    "with a desired MIG config; or any GPU node of a pool in the write that fails its CUDA proof "
                    f"(state {State.FAILED.value}, reason {Reason.PROOF_FAILED.value}: cordonOnProofFailure)",
                ),
                _validation(
                    f"!('{UPGRADE_SKIP_LABEL}' in variables.labels) || !('{UPGRADE_SKIP_LABEL}' in {label}) || "
                    f"({label}['{UPGRADE_SKIP_LABEL}'] == '{operator.UPGRADE_SKIP_VALUE}' && "
                    "(variables.optedIn || variables.desiredMig != ''))",
                    f"the controller may set {UPGRADE_SKIP_LABEL}={operator.UPGRADE_SKIP_VALUE} only on a node a flow "
                    "applies to (and may remove it)",
                ),
                _validation(
                    f"!('{REQUEST_ANNOTATION}' in variables.annotations) || "
                    f"!('{REQUEST_ANNOTATION}' in variables.newNotes) || variables.optedIn",
                    "the controller may ask an executor for a host step only on a node whose group opted in to the "
                    f"driver hand-over ({HOST_DRIVER_REMOVAL_LABEL}={HOST_DRIVER_REMOVAL_ENABLED})",
                ),
                _validation(
                    f"!('{GPU_DEPLOY_DRIVER_LABEL}' in variables.labels) || (variables.optedIn && "
                    f"{label}[?'{GPU_DEPLOY_DRIVER_LABEL}'].orValue('') in ['true', 'false'])",
                    f"the controller may set {GPU_DEPLOY_DRIVER_LABEL} (true or false) only on a node whose group "
                    "opted in to the driver hand-over",
                ),
                _validation(
                    f"!('{MIG_LABEL}' in variables.labels) || (variables.desiredMig != '' && "
                    f"{label}[?'{MIG_LABEL}'].orValue('') in [variables.desiredMig, '{MIG_TOGGLE_CONFIG}'])",
                    f"the controller may set {MIG_LABEL} only on a node with a desired MIG config, and only to that "
                    f"config or the toggle {MIG_TOGGLE_CONFIG}",
                ),
                _validation(
                    f"!('{MIG_STATE_LABEL}' in variables.labels) || (variables.desiredMig != '' && "
                    f"!('{MIG_STATE_LABEL}' in {label}))",
                    f"the controller may only remove {MIG_STATE_LABEL}, on a node with a desired MIG config",
                ),
                _validation(
                    f"variables.labels.filter(k, k in {operands}).all(k, variables.oldLabels[?k].orValue('') == "
                    f"'{PAUSED_FOR_MIG}' && {label}[?k].orValue('') == 'true')",
                    f"the controller may only set back to true an operand label left {PAUSED_FOR_MIG}",
                ),
                _validation(
                    f"variables.annotations.filter(k, k in {_cel_list(REMOVED_ONLY_ANNOTATIONS)})"
                    ".all(k, !(k in variables.newNotes))",
                    f"the controller may only remove {', '.join(REMOVED_ONLY_ANNOTATIONS)}",
                ),
                _validation(
                    _spec_fields_unchanged(),
                    "the controller may not change providerID, podCIDR(s), externalID or configSource",
                ),
                _validation(
                    _taints_unchanged_but_own_removed(),
                    f"the controller may only remove the {MIG_PENDING_TAINT_KEY} taint: no other taint added, removed "
                    "or changed",
                ),
                _OWNERS_AND_FINALIZERS,
            ],
        },
    )


def _effective(container_field: str, pod_field: str, default: str) -> str:
    """A security setting of container ``c``: its own, else the pod's, else ``default``."""
    return (
        f"c.?securityContext.?{container_field}.orValue(object.spec.?securityContext.?{pod_field}.orValue({default}))"
    )


def smoke_policy(namespace: str, account: str, runtime_class: str = OPERATOR_RUNTIME_CLASS) -> dict[str, Any]:
    """Only smoke pods (``components.node_agent.agent.controller.smoke``), "restricted" and more; see the module."""
    command = _cel_list(list(SMOKE_COMMAND))
    no_fields = ("args", "env", "envFrom", "ports", "volumeMounts", "volumeDevices")
    absent = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")
    container = " && ".join(
        [
            f"c.image == '{AGENT_IMAGE}'",
            f"c.?command.orValue([]) == {command}",
            *(f"c.?{name}.orValue([]).size() == 0" for name in no_fields),
            *(f"!c.?{name}.hasValue()" for name in absent),
        ]
    )
    restricted = " && ".join(
        [
            "!c.?securityContext.?privileged.orValue(false)",
            "c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false",
            "c.?securityContext.?capabilities.?add.orValue([]).size() == 0",
            "'ALL' in c.?securityContext.?capabilities.?drop.orValue([])",
            f"{_effective('runAsNonRoot', 'runAsNonRoot', 'false')} == true",
            f"{_effective('runAsUser', 'runAsUser', '0')} != 0",
            _effective("seccompProfile.?type", "seccompProfile.?type", "''") + " == 'RuntimeDefault'",
            _effective("appArmorProfile.?type", "appArmorProfile.?type", "'RuntimeDefault'") + " == 'RuntimeDefault'",
            "c.?securityContext.?procMount.orValue('Default') == 'Default'",
            "!c.?securityContext.?seLinuxOptions.hasValue()",
            "!c.?securityContext.?windowsOptions.?hostProcess.orValue(false)",
        ]
    )
    pod_security = " && ".join(
        [
            "object.spec.?securityContext.?appArmorProfile.?type.orValue('RuntimeDefault') == 'RuntimeDefault'",
            "!object.spec.?securityContext.?seLinuxOptions.hasValue()",
            "object.spec.?securityContext.?sysctls.orValue([]).size() == 0",
            "!object.spec.?securityContext.?windowsOptions.?hostProcess.orValue(false)",
            f"object.metadata.?annotations.orValue({{}}).all(k, !k.startsWith('{APPARMOR_ANNOTATION_PREFIX}') || "
            "object.metadata.annotations[k] == 'runtime/default')",
        ]
    )
    ours = " || ".join(
        f"(t.?key.orValue('') == '{key}' && t.?operator.orValue('') == 'Exists' && t.?effect.orValue('') == '{effect}')"
        for key, effect in SMOKE_TOLERATIONS
    )
    defaults = (
        f"(t.?key.orValue('') in {_cel_list(DEFAULT_NO_EXECUTE_TOLERATIONS)} && t.?effect.orValue('') == 'NoExecute' "
        f"&& t.?tolerationSeconds.orValue({DEFAULT_TOLERATION_SECONDS + 1}) <= {DEFAULT_TOLERATION_SECONDS})"
    )
    runtime = (
        f"object.spec.?runtimeClassName.orValue('') == '{runtime_class}'"
        if runtime_class
        else "!object.spec.?runtimeClassName.hasValue()"
    )
    return {
        "metadata": {"name": SMOKE_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "matchConditions": _user(namespace, account),
            "validations": [
                _validation(
                    f"object.metadata.?name.orValue('').startsWith('{SMOKE_NAME_PREFIX}') && "
                    f"object.metadata.?labels.orValue({{}})[?'{SMOKE_LABEL}'].orValue('') != ''",
                    f"the controller creates only smoke pods ({SMOKE_NAME_PREFIX}*, label {SMOKE_LABEL})",
                ),
                _validation(
                    "object.spec.?nodeName.orValue('') != '' && "
                    f"object.spec.?nodeSelector.orValue({{}})[?'{GPU_NODE_LABEL}'].orValue('') == 'true' && "
                    f"object.spec.?nodeSelector.orValue({{}})[?'{POOL_LABEL}'].orValue('') != ''",
                    f"a smoke pod is bound to the node it tests and selects a GPU node of a pool ({GPU_NODE_LABEL}="
                    f"true, {POOL_LABEL}): the kubelet refuses it on any other node",
                ),
                _validation(
                    "object.spec.?containers.orValue([]).size() == 1 && "
                    f"object.spec.?containers.orValue([]).all(c, {container})"
                    " && object.spec.?initContainers.orValue([]).size() == 0"
                    " && object.spec.?ephemeralContainers.orValue([]).size() == 0",
                    f"a smoke pod runs one container, the agent image with the command {' '.join(SMOKE_COMMAND)} and "
                    "nothing else: no args, env, probe, hook, port or mount; no init or ephemeral containers",
                ),
                _validation(
                    f"object.spec.?containers.orValue([]).all(c, {restricted}) && {pod_security}",
                    'a smoke pod meets Pod Security "restricted": non-root, no privilege (escalation), every '
                    "capability dropped, RuntimeDefault seccomp and AppArmor, the Default proc mount, no SELinux "
                    "options, sysctls or host process",
                ),
                _validation(
                    "!object.spec.?hostPID.orValue(false) && !object.spec.?hostIPC.orValue(false)"
                    " && !object.spec.?hostNetwork.orValue(false)",
                    "a smoke pod shares no host namespace",
                ),
                _validation(
                    "object.spec.?serviceAccountName.orValue('default') == 'default'"
                    " && object.spec.?automountServiceAccountToken.orValue(true) == false",
                    "a smoke pod runs as the namespace's default service account, with no token mounted",
                ),
                _validation(
                    "object.spec.?volumes.orValue([]).size() == 0 && object.spec.?resourceClaims.orValue([]).size() == 0",
                    "a smoke pod mounts no volume and claims no device through DRA",
                ),
                _validation(
                    f"object.spec.?priorityClassName.orValue('') == '{SMOKE_PRIORITY_CLASS}'",
                    f"a smoke pod has the program's PriorityClass {SMOKE_PRIORITY_CLASS} (never a system-critical one "
                    "the kubelet preempts workloads for)",
                ),
                _validation(
                    runtime,
                    f"a smoke pod runs on the GPU Operator's RuntimeClass ({runtime_class or 'none installed'})",
                ),
                _validation(
                    f"object.spec.?tolerations.orValue([]).all(t, {ours} || {defaults})",
                    "a smoke pod tolerates only the cordon and the MIG-pending taint (and the API server's own "
                    "not-ready/unreachable tolerations, with their seconds)",
                ),
                _validation(
                    "object.spec.?restartPolicy.orValue('') == 'Never'", "a smoke pod runs once (restartPolicy Never)"
                ),
            ],
        },
    }


def admission_policies(
    namespace: str, controller_account: str, executor_account: str, runtime_class: str = OPERATOR_RUNTIME_CLASS
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(role, policy, binding)`` for each policy; ``runtime_class``: the GPU Operator's ("" for none)."""
    return [
        ("executor-own-node", executor_policy(namespace, executor_account), _binding(EXECUTOR_POLICY)),
        ("controller-nodes", controller_policy(namespace, controller_account), _binding(CONTROLLER_POLICY)),
        ("smoke-pods", smoke_policy(namespace, controller_account, runtime_class), _binding(SMOKE_POLICY)),
    ]


# -- the pool labeller ---------------------------------------------------------------------------------------
#: The labeller's policy (``components.node_agent.agent.labeller``): the declared pools' labels, nothing else.
LABELLER_POLICY = "gpu-platform-node-agent-labeller-nodes"


def _cel_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _cel_string_map(values: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{_cel_string(k)}: {_cel_string(v)}" for k, v in sorted(values.items())) + "}"


def _old_labels_match(selector: Mapping[str, str]) -> str:
    """The node's old labels carry every key of ``selector`` with its value (matchLabels; "" is a value)."""
    return " && ".join(
        f"({_cel_string(key)} in variables.oldLabels && variables.oldLabels[{_cel_string(key)}] == {_cel_string(value)})"
        for key, value in sorted(selector.items())
    )


def labeller_policy(namespace: str, account: str, memberships: Mapping[str, Any]) -> dict[str, Any]:
    """What the pool labeller may write: each declared pool's labels, at their declared values, on a node whose old
    labels its selector matches (the first pool by name, as the labeller decides), and their removal from a node
    labelled for a declared pool whose labels no longer pick it (none that the pool it now picks declares); on a node
    the rollout controller holds, only its own pool's labels set. Nothing else: no other label, no annotation, nothing
    in ``spec``, owner references and finalizers as they were; never a node of a pool it does not declare.

    The memberships are CEL literals (``parse_memberships``, the labeller's own reading: sorted by pool name, selector
    keys never among the labels): a map of pool name to its labels, and the node's pool as a chain of conditionals
    over the selectors, so every literal is homogeneous (Kubernetes' CEL refuses mixed map and list literals). Matched
    on the labeller's user only: the rollout controller's and the executors' policies match on theirs, so none of the
    three applies to another's requests."""
    pools = parse_memberships(memberships)
    keys = sorted({key for pool in pools for key in pool.labels})
    picked = "''"
    for pool in reversed(pools):
        picked = f"({_old_labels_match(pool.selector)}) ? {_cel_string(pool.name)} : ({picked})"
    declared = "{" + ", ".join(f"{_cel_string(pool.name)}: {_cel_string_map(pool.labels)}" for pool in pools) + "}"
    new = "variables.newLabels"
    return _node_policy(
        LABELLER_POLICY,
        namespace,
        account,
        {
            "variables": [
                *_LABELS_BEFORE_AND_AFTER,
                {"name": "labels", "expression": _changed("labels")},
                {"name": "declared", "expression": declared},
                # The pool the node's old labels pick (the first by name), "" for none.
                {"name": "pool", "expression": picked},
                # The pool the node was labelled for (its pool label), "" for none.
                {"name": "current", "expression": f"variables.oldLabels[?'{POOL_LABEL}'].orValue('')"},
                {"name": "wanted", "expression": "variables.declared[?variables.pool].orValue({})"},
                {"name": "previous", "expression": "variables.declared[?variables.current].orValue({})"},
                {
                    "name": "held",
                    "expression": f"'{STATE_LABEL}' in variables.oldLabels && "
                    f"!(variables.oldLabels['{STATE_LABEL}'] in {_cel_list(sorted(RELEASED_STATES))})",
                },
            ],
            "validations": [
                _validation(
                    "variables.current == '' || variables.current in variables.declared",
                    f"the labeller never changes a node of a pool it does not declare ({POOL_LABEL} names another pool)",
                ),
                _validation(
                    f"variables.labels.all(k, k in {_cel_list(keys)})",
                    f"the labeller may change only the labels its pools declare: {', '.join(keys)}",
                ),
                _validation(
                    f"variables.labels.all(k, !(k in {new}) || (k in variables.wanted && {new}[k] == variables.wanted[k]))",
                    "the labeller may set a label only on a node a pool's selector picks (the first pool by name), and "
                    "only to the value that pool declares",
                ),
                _validation(
                    f"variables.labels.all(k, k in {new} || (k in variables.previous && !(k in variables.wanted)))",
                    f"the labeller may remove only a label of the pool the node was labelled for ({POOL_LABEL}), and "
                    "only one the pool the node's labels pick does not declare",
                ),
                _validation(
                    "!variables.held || variables.labels.size() == 0 || (variables.pool == variables.current && "
                    f"variables.labels.all(k, k in {new}))",
                    f"a node the rollout controller holds ({STATE_LABEL} not "
                    f"{', '.join(sorted(RELEASED_STATES))}) keeps its labels and its pool until released",
                ),
                _validation(_same("metadata.?annotations", "{}"), "the labeller may not change an annotation"),
                _validation("object.spec == oldObject.spec", "the labeller may not change the spec (taints, cordon)"),
                _OWNERS_AND_FINALIZERS,
            ],
        },
    )


def labeller_admission(
    namespace: str, account: str, memberships: Mapping[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(role, policy, binding)`` of the pool labeller's policy."""
    return ("labeller-nodes", labeller_policy(namespace, account, memberships), _binding(LABELLER_POLICY))
