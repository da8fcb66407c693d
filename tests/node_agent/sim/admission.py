"""ValidatingAdmissionPolicy as the API server evaluates it, with a real CEL runtime (the CEL C++ implementation,
``cel-expr-python``): the policies of ``components.node_agent.admission`` decide every node write and pod create of
the simulated API server (``tests.node_agent.sim.api``) and of ``tests/node_agent/test_admission_cel.py``.

The evaluation, as Kubernetes does it (docs: "Validating Admission Policy"; k8s.io/apiserver
``pkg/admission/plugin/policy/validating``, ``pkg/admission/plugin/cel``):

- a policy applies when its ``matchConstraints.resourceRules`` match the request's operation, group, version and
  resource (``pods`` is the pod itself, never ``pods/eviction``), and every ``matchCondition`` is true;
- ``variables`` are evaluated in order, each seeing the ones before it as ``variables.<name>``;
- each validation must be ``true``; ``false`` denies with its ``message`` (or ``messageExpression``) and its
  ``reason`` (``Forbidden``: 403); an evaluation error denies too (``failurePolicy: Fail``); the bindings'
  ``validationActions`` are ``Deny``.

The inputs, as the API server builds them:

- ``object`` and ``oldObject``: the objects converted to unstructured JSON maps
  (``runtime.DefaultUnstructuredConverter.ToUnstructured``, ``cel/filter.go`` ``objectToResolveVal``): quantities
  are strings, integers are integers. For a node **update** (a JSON merge patch) ``object`` is the patch applied to
  the stored node, after the registry's ``PrepareForUpdate`` (pkg/registry/core/node/strategy.go: ``status`` is the
  old one's; ``configSource`` dropped when not in use), and validating admission runs only **after** the
  resourceVersion check (generic/registry/store.go ``Update``: a stale resourceVersion is a 409 before
  ``updateValidation``), so ``oldObject`` is the node the writer read. For a pod **create** ``object`` is the pod
  after decoding defaults (pkg/apis/core/v1/defaults.go), the mutating admission plugins enabled by default
  (ServiceAccount: ``serviceAccountName: default``; Priority: ``priority`` and ``preemptionPolicy`` from the class;
  DefaultTolerationSeconds: ``not-ready``/``unreachable`` ``NoExecute`` for 300 s) and the registry's
  ``PrepareForCreate`` (pkg/registry/core/pod/strategy.go: ``status.phase: Pending``, the AppArmor annotations and
  fields synchronised): ``createValidation`` runs after ``BeforeCreate``.
- ``request``: ``CreateAdmissionRequest`` (``cel/filter.go``): kind, resource, subResource, name, namespace,
  operation, userInfo, dryRun, options; never the objects. A ServiceAccount token of a pod carries in
  ``userInfo.extra`` the pod's name and uid, the credential id and, since 1.30, its node's name and uid
  (k8s.io/apiserver ``pkg/authentication/serviceaccount/util.go``: ``PodNameKey``, ``PodUIDKey``,
  ``CredentialIDKey``, ``NodeNameKey``, ``NodeUIDKey``); its groups are ``system:serviceaccounts``,
  ``system:serviceaccounts:<namespace>`` and ``system:authenticated``.
- ``params``: null (the policies have no ``paramKind``); ``namespaceObject``: null for a Node, the namespace for a pod.

What this runtime is not: Kubernetes type-checks each expression against the OpenAPI schema of the matched kinds;
here every variable is ``dyn``. So an expression that iterates a typed object's fields, which Kubernetes refuses,
would evaluate here: ``test_admission_cel.py`` checks that the policies iterate only maps and lists. Runtime cost
limits are not evaluated.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel  # type: ignore[import-untyped]  # .pyi stubs, no py.typed
from cel_expr_python.ext import (  # type: ignore[import-untyped]
    ext_bindings,
    ext_encoders,
    ext_math,
    ext_optional,
    ext_strings,
)

from components.node_agent import component
from components.node_agent.admission import admission_policies
from components.node_agent.agent.controller.smoke import SMOKE_PRIORITY_CLASS
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS

Obj = dict[str, Any]
#: The variables of a ValidatingAdmissionPolicy expression (Kubernetes docs, "Validation expression").
CEL_VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")


def environment() -> Any:
    """A CEL environment with every library this runtime shares with Kubernetes' admission: the standard library and
    macros, optional types (``.?``, ``[?]``, ``orValue``, ``hasValue``), strings, math, base64 encoders and
    ``cel.bind``. Kubernetes' own libraries (lists, regex ``find``, url, quantity, ip/cidr, semver, authorizer,
    sets) are not here: an expression using one fails to compile, so a policy cannot depend on one unseen."""
    return cel.NewEnv(
        variables={name: cel.Type.DYN for name in CEL_VARIABLES},
        extensions=[
            ext_optional.ExtOptional(),
            ext_strings.ExtStrings(),
            ext_math.ExtMath(),
            ext_encoders.ExtEncoders(),
            ext_bindings.ExtBindings(),
        ],
    )


@functools.cache
def _env() -> Any:
    return environment()


@functools.cache
def compiled(expression: str) -> Any:
    """The compiled expression (a compile error raises: Kubernetes refuses such a policy at creation)."""
    return _env().compile(expression)


# -- the requests ------------------------------------------------------------------------------------------
def service_account_user(namespace: str, account: str, pod: str = "", node: str = "") -> Obj:
    """``userInfo`` of a bound token of ``pod`` on ``node`` (util.go ``UserInfo``; the node since 1.30)."""
    extra: dict[str, list[str]] = {}
    if pod:
        extra["authentication.kubernetes.io/pod-name"] = [pod]
        extra["authentication.kubernetes.io/pod-uid"] = [f"uid-of-{pod}"]
        extra["authentication.kubernetes.io/credential-id"] = [f"JTI=jti-of-{pod}"]
    if node:
        extra["authentication.kubernetes.io/node-name"] = [node]
        extra["authentication.kubernetes.io/node-uid"] = [f"uid-of-{node}"]
    user: Obj = {
        "username": f"system:serviceaccount:{namespace}:{account}",
        "uid": f"uid-of-{account}",
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
    }
    if extra:
        user["extra"] = extra
    return user


@dataclass(frozen=True)
class Request:
    """One admission request, as the ValidatingAdmissionPolicy plugin sees it."""

    operation: str
    resource: str
    name: str
    namespace: str
    user: Obj
    object: Obj | None
    old_object: Obj | None
    group: str = ""
    version: str = "v1"
    kind: str = ""
    sub_resource: str = ""
    namespace_object: Obj | None = None
    #: What the request was, in words (a test's id).
    what: str = ""

    def cel_request(self) -> Obj:
        """``CreateAdmissionRequest``: omitempty fields left out, no objects."""
        gvk = {"group": self.group, "version": self.version, "kind": self.kind}
        gvr = {"group": self.group, "version": self.version, "resource": self.resource}
        request: Obj = {
            "uid": "request-uid",
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "operation": self.operation,
            "userInfo": self.user,
            "dryRun": False,
            "options": {"kind": f"{self.operation.title()}Options", "apiVersion": "meta.k8s.io/v1"},
        }
        if self.sub_resource:
            request["subResource"] = self.sub_resource
            request["requestSubResource"] = self.sub_resource
        if self.name:
            request["name"] = self.name
        if self.namespace:
            request["namespace"] = self.namespace
        return request


def stored_node(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A Node as the API server stores it (the kubelet's own labels and fields beside ``labels`` and ``taints``):
    the object the policies' requests are made of."""
    spec: dict[str, Any] = {"podCIDR": "10.112.3.0/24", "podCIDRs": ["10.112.3.0/24"], "providerID": f"yandex://{name}"}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "4711",
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": "8"}, "nodeInfo": {"kubeletVersion": "v1.31.0"}},
    }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``null`` deletes a key, a list replaces the whole list."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _json(value: Any) -> Any:
    """What the API server decodes: JSON (an enum member of the caller's is its string on the wire)."""
    return json.loads(json.dumps(value))


def node_update(stored: Obj, patch: Obj, user: Obj, what: str = "") -> Request:
    """A merge patch of a Node, as validating admission sees it (the resourceVersion check passed)."""
    old = _json(stored)
    new = merge_patch(old, _json(patch))
    new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion", "")
    new["metadata"]["uid"] = old["metadata"].get("uid", "")
    new["metadata"]["managedFields"] = [{"manager": "patch", "operation": "Update", "apiVersion": "v1"}]
    if "status" in old:  # PrepareForUpdate: status is the stored one's
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)
    if not (old.get("spec") or {}).get("configSource"):  # dropDisabledFields: configSource not in use
        (new.get("spec") or {}).pop("configSource", None)
    new.setdefault("apiVersion", "v1")
    new.setdefault("kind", "Node")
    old.setdefault("apiVersion", "v1")
    old.setdefault("kind", "Node")
    name = str(old["metadata"].get("name", ""))
    return Request("UPDATE", "nodes", name, "", user, new, old, kind="Node", what=what)


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"


#: Kubernetes' own classes (pkg/apis/scheduling/types.go: SystemCriticalPriority = 2 * HighestUserDefinablePriority).
SYSTEM_PRIORITY_CLASSES = (
    PriorityClass("system-node-critical", 2_000_001_000),
    PriorityClass("system-cluster-critical", 2_000_000_000),
)


def _quantity(value: Any) -> str:
    return str(value)


def admitted_pod(pod: Obj, namespace: str, priority_classes: Iterable[PriorityClass]) -> Obj:
    """The pod a validating admission policy sees on CREATE: defaults, the default mutating plugins, PrepareForCreate.

    Raises ``LookupError`` for a PriorityClass that does not exist (the Priority plugin refuses the pod)."""
    body = _json(pod)
    body.setdefault("apiVersion", "v1")
    body.setdefault("kind", "Pod")
    meta = body.setdefault("metadata", {})
    meta["namespace"] = namespace
    meta.setdefault("uid", f"uid-of-{meta.get('name', '')}")
    meta.setdefault("creationTimestamp", "2027-01-15T08:00:00Z")
    spec = body.setdefault("spec", {})
    # pkg/apis/core/v1/defaults.go: SetDefaults_PodSpec, SetDefaults_Container, SetDefaults_Pod (requests from limits).
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            image = str(container.get("image", ""))
            latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
            container.setdefault("imagePullPolicy", "Always" if latest and "@" not in image else "IfNotPresent")
            resources = container.setdefault("resources", {})
            limits = {name: _quantity(value) for name, value in (resources.get("limits") or {}).items()}
            if limits:
                resources["limits"] = limits
                requests = {name: _quantity(value) for name, value in (resources.get("requests") or {}).items()}
                resources["requests"] = {**limits, **requests}
    # plugin/pkg/admission/serviceaccount: the namespace's default account (no token volume: automount is off, or
    # the plugin adds the projected token volume).
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    if spec.get("automountServiceAccountToken", True) is not False:
        spec.setdefault("volumes", []).append({"name": "kube-api-access", "projected": {"sources": []}})
    # plugin/pkg/admission/priority: the class's value, or a refusal when it does not exist.
    classes = {c.name: c for c in priority_classes}
    name = spec.get("priorityClassName", "")
    if name:
        if name not in classes:
            raise LookupError(f"no PriorityClass with name {name} was found")
        spec["priority"] = classes[name].value
        spec["preemptionPolicy"] = classes[name].preemption_policy
    else:
        spec["priority"] = 0
    # plugin/pkg/admission/defaulttolerationseconds: not-ready and unreachable, unless tolerated already.
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") in (key, None, "") and t.get("effect") in ("NoExecute", None, "") for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    if not tolerations:
        spec.pop("tolerations")
    # pkg/registry/core/pod/strategy.go PrepareForCreate: phase Pending; the AppArmor annotations and fields made
    # to agree (applyAppArmorVersionSkew: an annotation sets the field where none is set).
    body["status"] = {"phase": "Pending", "qosClass": "Guaranteed" if spec.get("containers") else "BestEffort"}
    prefix = "container.apparmor.security.beta.kubernetes.io/"
    apparmor = {"runtime/default": "RuntimeDefault", "unconfined": "Unconfined"}
    for key, value in (meta.get("annotations") or {}).items():
        if key.startswith(prefix) and value in apparmor:
            for container in spec.get("containers") or []:
                if container.get("name") == key.removeprefix(prefix):
                    context = container.setdefault("securityContext", {})
                    context.setdefault("appArmorProfile", {"type": apparmor[value]})
    return body


def pod_create(
    pod: Obj, namespace: str, user: Obj, priority_classes: Iterable[PriorityClass] = (), what: str = ""
) -> Request:
    obj = admitted_pod(pod, namespace, [*SYSTEM_PRIORITY_CLASSES, *priority_classes])
    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    return Request(
        "CREATE",
        "pods",
        str(obj["metadata"].get("name", "")),
        namespace,
        user,
        obj,
        None,
        kind="Pod",
        namespace_object=namespace_object,
        what=what,
    )


def pod_eviction(namespace: str, name: str, user: Obj) -> Request:
    """``pods/eviction`` CREATE: the object is the Eviction, not the pod (pkg/registry/core/pod/storage/eviction.go)."""
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    return Request("CREATE", "pods", name, namespace, user, eviction, None, kind="Eviction", sub_resource="eviction")


# -- the evaluation ----------------------------------------------------------------------------------------
@dataclass
class Decision:
    """What the policies answered: ``denials`` ("policy: message"), empty when allowed."""

    request: Request
    matched: list[str] = field(default_factory=list)
    denials: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.denials


def _plain(value: Any) -> tuple[bool, Any]:
    """``(ok, value)`` of an evaluation result; an error value is not ok."""
    if value.type() == cel.Type.ERROR:
        return False, str(value.value())[:300]
    return True, value.plain_value()


def _rule_matches(rule: Obj, request: Request) -> bool:
    def has(values: list[str], wanted: str) -> bool:
        return "*" in values or wanted in values

    resource = f"{request.resource}/{request.sub_resource}" if request.sub_resource else request.resource
    resources = rule.get("resources") or []
    # "pods" is the pod only; "pods/eviction" its subresource; "*" every resource, "*/*" every subresource too.
    matched = resource in resources or (not request.sub_resource and "*" in resources) or "*/*" in resources
    return (
        matched
        and has(rule.get("operations") or [], request.operation)
        and has(rule.get("apiGroups") or [], request.group)
        and has(rule.get("apiVersions") or [], request.version)
    )


def _data(request: Request, cel_request: Obj, variables: Obj) -> Obj:
    return {
        "object": request.object,
        "oldObject": request.old_object,
        "request": cel_request,
        "params": None,
        "namespaceObject": request.namespace_object,
        "variables": variables,
        "authorizer": None,
    }


def evaluate(policy: Obj, request: Request) -> tuple[bool, list[str]]:
    """``(applies, denials)`` of one policy (bound with ``Deny``) for ``request``."""
    cel_request = request.cel_request()
    spec = policy["spec"]
    name = policy["metadata"]["name"]
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    if not any(_rule_matches(rule, request) for rule in spec["matchConstraints"]["resourceRules"]):
        return False, []
    variables: Obj = {}
    for condition in spec.get("matchConditions") or []:
        ok, value = _plain(compiled(condition["expression"]).eval(data=_data(request, cel_request, variables)))
        if not ok:
            return True, ([f"{name}: matchCondition {condition['name']} failed: {value}"] if fail else [])
        if value is not True:
            return False, []
    denials: list[str] = []
    for variable in spec.get("variables") or []:
        ok, value = _plain(compiled(variable["expression"]).eval(data=_data(request, cel_request, variables)))
        if not ok:
            denials.append(f"{name}: variable {variable['name']} failed: {value}")
        variables[variable["name"]] = value if ok else None
    if denials:
        return True, denials if fail else []
    data = _data(request, cel_request, variables)
    for validation in spec["validations"]:
        ok, value = _plain(compiled(validation["expression"]).eval(data=data))
        if not ok:
            if fail:
                denials.append(f"{name}: {validation['expression'][:80]}... failed: {value}")
            continue
        if value is not True:
            message = validation.get("message", "")
            if "messageExpression" in validation:
                shown, text = _plain(compiled(validation["messageExpression"]).eval(data=data))
                message = str(text) if shown else message
            denials.append(f"{name} ({validation.get('reason', 'Invalid')}): {message}")
    return True, denials


#: Open recordings (``recording``): every decision is appended to each.
_RECORDINGS: list[list[Decision]] = []


@contextlib.contextmanager
def recording() -> Iterator[list[Decision]]:
    """Every request the policies decide while open, with its decision (the simulated API server's included)."""
    seen: list[Decision] = []
    _RECORDINGS.append(seen)
    try:
        yield seen
    finally:
        _RECORDINGS.remove(seen)


@dataclass
class Policies:
    """The policies the program creates, each bound with ``Deny``."""

    policies: list[Obj]

    def decide(self, request: Request) -> Decision:
        decision = Decision(request)
        for policy in self.policies:
            applies, denials = evaluate(policy, request)
            if applies:
                decision.matched.append(policy["metadata"]["name"])
            decision.denials += denials
        for seen in _RECORDINGS:
            seen.append(decision)
        return decision


def as_json(value: Any) -> str:
    """A request's object, short, for a failure message."""
    return json.dumps(value, sort_keys=True)[:2000]


# -- the program's policies --------------------------------------------------------------------------------
#: The ServiceAccounts and PriorityClasses the program creates (``components.node_agent.component``).
CONTROLLER_ACCOUNT = component.CONTROLLER
EXECUTOR_ACCOUNT = component.EXECUTOR
PROGRAM_PRIORITY_CLASSES = (
    PriorityClass(SMOKE_PRIORITY_CLASS, component.SMOKE_PRIORITY_VALUE, component.SMOKE_PREEMPTION_POLICY),
)


@functools.cache
def policies(namespace: str, runtime_class: str = OPERATOR_RUNTIME_CLASS) -> Policies:
    """The three policies as the program renders them for the agent in ``namespace``."""
    rendered = admission_policies(namespace, CONTROLLER_ACCOUNT, EXECUTOR_ACCOUNT, runtime_class)
    return Policies([policy for _, policy, _ in rendered])
