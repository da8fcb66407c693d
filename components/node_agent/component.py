"""The NodeAgent ComponentResource: the rollout controller (a Deployment) and the node executors (a DaemonSet).

Both run standard-library Python shipped in the ``node-agent-code`` ConfigMap on the pinned official Python
image (``AGENT_IMAGE`` in the catalog): nothing to build, works air-gapped. The **controller** owns every
cluster-side decision (budget, cordon, eviction, uncordon, halts, Events, Leases); it runs unprivileged as
``nobody`` with a read-only root and reads its settings from the ``node-agent-settings`` ConfigMap at every
reconcile. The **executors** run as root, privileged, with ``hostPID`` and the host's ``/`` at ``/host`` (they
chroot, nsenter and run the uninstaller) and may change only their own Node's report annotation. RBAC is least
privilege per ServiceAccount, and three ValidatingAdmissionPolicies narrow it further. The smoke pods the controller
creates run under the program's own PriorityClass (``SMOKE_PRIORITY_CLASS``), which the smoke-pod policy pins.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base.kubernetes_args import downward_env, locked_down_container, non_root_pod_security
from components.base.shipped_code import SHIPPED_CATALOG, code_volume, shipped_container, shipped_sources
from components.catalog import node_agent as names
from components.catalog.kubernetes import PRIORITY_CLASS_IMMUTABLE_FIELDS
from components.catalog.names import GPU_NODE_LABEL, GPU_OPERATOR_NAMESPACE, NODE_AGENT_TYPE, PSA_PRIVILEGED
from components.node_agent.admission import admission_policies, labeller_admission
from components.node_agent.agent.controller.smoke import SMOKE_PRIORITY_CLASS
from components.node_agent.agent.labeller.membership import (
    MEMBERSHIPS_DIGEST_ANNOTATION,
    MEMBERSHIPS_DIR,
    MEMBERSHIPS_KEY,
)
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS
from components.node_agent.config import NodeAgentConfig
from components.node_agent.rbac import (
    CONTROLLER_CLUSTER_RULES,
    CONTROLLER_EVENT_RULES,
    CONTROLLER_NAMESPACE_RULES,
    CONTROLLER_OPERATOR_RULES,
    EXECUTOR_CLUSTER_RULES,
    LABELLER_CLUSTER_RULES,
    PolicyRule,
)

#: What the code ConfigMap ships: both programs and the pure catalog modules they read their names and facts from.
AGENT_FILES: tuple[str, ...] = (
    *SHIPPED_CATALOG,
    "components/node_agent/agent/__init__.py",
    "components/node_agent/agent/controller/__init__.py",
    "components/node_agent/agent/controller/actions.py",
    "components/node_agent/agent/controller/decide.py",
    "components/node_agent/agent/controller/decisions/__init__.py",
    "components/node_agent/agent/controller/decisions/context.py",
    "components/node_agent/agent/controller/decisions/cuda.py",
    "components/node_agent/agent/controller/decisions/eviction.py",
    "components/node_agent/agent/controller/decisions/halts.py",
    "components/node_agent/agent/controller/decisions/handover.py",
    "components/node_agent/agent/controller/decisions/mig.py",
    "components/node_agent/agent/controller/decisions/operands.py",
    "components/node_agent/agent/controller/decisions/pool_hold.py",
    "components/node_agent/agent/controller/decisions/release.py",
    "components/node_agent/agent/controller/decisions/reports.py",
    "components/node_agent/agent/controller/decisions/slots.py",
    "components/node_agent/agent/controller/decisions/writes.py",
    "components/node_agent/agent/controller/main.py",
    "components/node_agent/agent/controller/proving.py",
    "components/node_agent/agent/controller/reconcile.py",
    "components/node_agent/agent/controller/smoke.py",
    "components/node_agent/agent/controller/view.py",
    "components/node_agent/agent/controller/work.py",
    "components/node_agent/agent/executor/__init__.py",
    "components/node_agent/agent/executor/host.py",
    "components/node_agent/agent/executor/main.py",
    "components/node_agent/agent/executor/run.py",
    "components/node_agent/agent/kube.py",
    "components/node_agent/agent/labeller/__init__.py",
    "components/node_agent/agent/labeller/main.py",
    "components/node_agent/agent/labeller/membership.py",
    "components/node_agent/agent/loop.py",
    "components/node_agent/agent/objects.py",
    "components/node_agent/agent/settings.py",
    "components/node_agent/agent/watch.py",
)
CONTROLLER = "node-agent-controller"
EXECUTOR = "node-agent-executor"
CONTROLLER_LABEL = {"app.kubernetes.io/name": CONTROLLER, "app.kubernetes.io/managed-by": "gpu-platform"}
EXECUTOR_LABEL = {"app.kubernetes.io/name": EXECUTOR, "app.kubernetes.io/managed-by": "gpu-platform"}
AGENT_DIR = "/agent"
CODE_CONFIG_MAP = "node-agent-code"
#: The pool labeller (an existing cluster's pools): its ServiceAccount and Deployment, and its memberships ConfigMap.
LABELLER = "node-agent-labeller"
LABELLER_LABEL = {"app.kubernetes.io/name": LABELLER, "app.kubernetes.io/managed-by": "gpu-platform"}
LABELLER_CONFIG_MAP = "node-agent-labeller"
#: The smoke pods' PriorityClass: the value of a pod of no class, and never preempting. A smoke pod is bound to its
#: node by ``nodeName`` (the scheduler never preempts for it) on a node the controller has drained; the class is
#: there so that the admission policy can pin it: a smoke pod can never carry a system-critical class, for which
#: the kubelet would preempt workloads around their PodDisruptionBudgets.
SMOKE_PRIORITY_VALUE = 0
SMOKE_PREEMPTION_POLICY = "Never"


def agent_sources() -> dict[str, str]:
    """The shipped files as ConfigMap data."""
    return shipped_sources(AGENT_FILES)


@dataclass(frozen=True)
class NodeAgentArgs:
    """Inputs: tuning, each pool's budget at its full size (for the outputs; the controller counts live nodes),
    and the MIG resources a node should advertise (by node group, or by node name for a bare-metal node)."""

    config: NodeAgentConfig
    pool_budgets: dict[str, int]
    mig_resources: dict[str, Any]
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    operator_namespace: str = GPU_OPERATOR_NAMESPACE
    #: The RuntimeClass the GPU Operator installs ("" where it installs none): ``desired.operator_runtime_class``
    #: of the operator's values. The smoke pods run on it, and the smoke-pod policy allows only it.
    runtime_class: str = OPERATOR_RUNTIME_CLASS
    #: Per pool (node group, or bare-metal node name), what its nodes are proven against all the time: the plan's
    #: ``pool_declarations`` (``components.proof.steps``); a pool not here is not proven.
    declarations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Per pool, ``{"selector": {...}, "labels": {...}}``: the labels the pool labeller puts on every node the selector
    #: picks (the plan's ``node_agent_memberships``: an existing cluster, whose nodes the program cannot label itself).
    #: Empty: no labeller.
    memberships: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


def controller_settings(config: NodeAgentConfig, args: NodeAgentArgs) -> str:
    """The controller's settings as JSON (``Settings.from_json`` reads exactly these keys)."""
    resources: dict[str, Any] = {}
    for pool, value in sorted(args.mig_resources.items()):
        resources[pool] = dict(sorted(value.items())) if isinstance(value, dict) else sorted(value)
    settings = {
        "max_unavailable": str(config.max_unavailable),
        "mig_layout": config.mig_layout,
        "dry_run": config.dry_run,
        "eviction_timeout_seconds": config.eviction_timeout_seconds,
        "reboot_timeout_seconds": config.reboot_timeout_seconds,
        "driver_ready_timeout_seconds": config.driver_ready_timeout_seconds,
        "mig_timeout_seconds": config.mig_timeout_seconds,
        "smoke_timeout_seconds": config.smoke_timeout_seconds,
        "uninstall_timeout_seconds": config.uninstall_timeout_seconds,
        "cordon_on_proof_failure": config.cordon_on_proof_failure,
        "operator_namespace": args.operator_namespace,
        "mig_resources": resources,
        "runtime_class": args.runtime_class,
        "declarations": {pool: dict(sorted(value.items())) for pool, value in sorted(args.declarations.items())},
    }
    return json.dumps(settings, sort_keys=True)


def _rules(rules: tuple[PolicyRule, ...]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    return [
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=list(r.api_groups),
            resources=list(r.resources),
            verbs=list(r.verbs),
            resource_names=list(r.resource_names) or None,
        )
        for r in rules
    ]


class NodeAgent(pulumi.ComponentResource):
    """Namespace, two ServiceAccounts and their RBAC, admission policies, code and settings, controller, executors."""

    controller: k8s.apps.v1.Deployment
    daemon_set: k8s.apps.v1.DaemonSet
    metrics_service: k8s.core.v1.Service
    pool_budgets: dict[str, int]
    #: The pool labeller's Deployment, where ``memberships`` are given.
    labeller: k8s.apps.v1.Deployment | None = None

    def __init__(self, name: str, args: NodeAgentArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(NODE_AGENT_TYPE, name, None, opts)
        config = args.config
        self.pool_budgets = dict(sorted(args.pool_budgets.items()))
        ns = config.namespace
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels={**PSA_PRIVILEGED, **EXECUTOR_LABEL}),
            opts=child,
        )
        in_ns = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        accounts = {
            role: k8s.core.v1.ServiceAccount(
                f"{name}-{role}-account", metadata=k8s.meta.v1.ObjectMetaArgs(name=account, namespace=ns), opts=in_ns
            )
            for role, account in (("controller", CONTROLLER), ("executor", EXECUTOR))
        }
        grants: list[pulumi.Resource] = []
        for role, account, rules in (
            ("controller", CONTROLLER, CONTROLLER_CLUSTER_RULES),
            ("executor", EXECUTOR, EXECUTOR_CLUSTER_RULES),
        ):
            grants += self._cluster_role(name, role, account, ns, rules, child)
        for role, role_ns, rules in (
            ("controller", ns, CONTROLLER_NAMESPACE_RULES),
            ("events", "default", CONTROLLER_EVENT_RULES),
            ("operator", args.operator_namespace, CONTROLLER_OPERATOR_RULES),
        ):
            grants += self._role(name, role, role_ns, ns, rules, in_ns)
        for policy_name, policy, binding in admission_policies(ns, CONTROLLER, EXECUTOR, args.runtime_class):
            created = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{policy_name}-policy", metadata=policy["metadata"], spec=policy["spec"], opts=child
            )
            grants.append(created)
            grants.append(
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                    f"{name}-{policy_name}-binding",
                    metadata=binding["metadata"],
                    spec=binding["spec"],
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[created])),
                )
            )
        code = k8s.core.v1.ConfigMap(
            f"{name}-code",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CODE_CONFIG_MAP, namespace=ns, labels=EXECUTOR_LABEL),
            data=agent_sources(),
            opts=in_ns,
        )
        settings = k8s.core.v1.ConfigMap(
            f"{name}-settings",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=names.SETTINGS_CONFIG_MAP, namespace=ns, labels=CONTROLLER_LABEL),
            data={names.SETTINGS_KEY: controller_settings(config, args)},
            opts=in_ns,
        )
        # The Priority admission plugin refuses a pod naming a class that does not exist: the controller waits for it.
        smoke_priority = k8s.scheduling.v1.PriorityClass(
            f"{name}-smoke-priority-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=SMOKE_PRIORITY_CLASS, labels=CONTROLLER_LABEL),
            value=SMOKE_PRIORITY_VALUE,
            global_default=False,
            preemption_policy=SMOKE_PREEMPTION_POLICY,
            description="gpu-platform node agent: the smoke pods on a node in maintenance (they preempt nothing).",
            # The API server refuses a change of either in place: replace (under the same name, so delete first).
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    replace_on_changes=list(PRIORITY_CLASS_IMMUTABLE_FIELDS), delete_before_replace=True
                ),
            ),
        )
        ready = [*accounts.values(), code, *grants, *args.depends_on]
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=EXECUTOR, namespace=ns, labels=EXECUTOR_LABEL),
            spec=self._executors(config),
            opts=pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=ready)),
        )
        self.controller = k8s.apps.v1.Deployment(
            f"{name}-controller",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CONTROLLER, namespace=ns, labels=CONTROLLER_LABEL),
            spec=self._controller(),
            opts=pulumi.ResourceOptions.merge(
                in_ns, pulumi.ResourceOptions(depends_on=[*ready, settings, smoke_priority, self.daemon_set])
            ),
        )
        # The controller's gauges (``/metrics``): a Service for the stack's ServiceMonitor (components.observability),
        # annotated for a Prometheus that discovers Service endpoints by the ``prometheus.io`` convention instead.
        self.metrics_service = k8s.core.v1.Service(
            f"{name}-metrics-service",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=names.METRICS_SERVICE,
                namespace=ns,
                labels={**CONTROLLER_LABEL, "app.kubernetes.io/name": names.METRICS_SERVICE},
                annotations={
                    "prometheus.io/scrape": "true",
                    "prometheus.io/port": str(names.METRICS_PORT),
                    "prometheus.io/path": names.METRICS_PATH,
                },
            ),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=CONTROLLER_LABEL,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name=names.METRICS_PORT_NAME, port=names.METRICS_PORT, target_port=names.METRICS_PORT_NAME
                    )
                ],
            ),
            opts=in_ns,
        )
        if args.memberships:
            self.labeller = self._labeller(name, args.memberships, ns, child, in_ns, [code])
        self.register_outputs({"namespace": ns})

    def _labeller(
        self,
        name: str,
        memberships: dict[str, dict[str, dict[str, str]]],
        ns: str,
        child: pulumi.ResourceOptions,
        in_ns: pulumi.ResourceOptions,
        code: list[pulumi.Resource],
    ) -> k8s.apps.v1.Deployment:
        """The pool labeller (``components.node_agent.agent.labeller``): its ServiceAccount, its ClusterRole (nodes
        get/list/watch/patch), its ValidatingAdmissionPolicy, its memberships ConfigMap, and one pod on the agent's
        image and code ConfigMap.

        A controller of its own, not a part of the rollout controller, for containment: the labeller's token may write
        only the declared pools' labels (its policy), and the rollout controller's none of them (its own policy), so
        neither can make the other's writes. The pod starts only once its policy is bound."""
        account = k8s.core.v1.ServiceAccount(
            f"{name}-labeller-account", metadata=k8s.meta.v1.ObjectMetaArgs(name=LABELLER, namespace=ns), opts=in_ns
        )
        role_name = f"gpu-platform-{LABELLER}"
        grants = self._grant(
            f"{name}-labeller-cluster-role",
            "ClusterRole",
            role_name,
            k8s.meta.v1.ObjectMetaArgs(name=role_name, labels=LABELLER_LABEL),
            LABELLER,
            ns,
            LABELLER_CLUSTER_RULES,
            child,
        )
        role, policy, binding = labeller_admission(ns, LABELLER, memberships)
        created = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            f"{name}-{role}-policy", metadata=policy["metadata"], spec=policy["spec"], opts=child
        )
        bound = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-{role}-binding",
            metadata=binding["metadata"],
            spec=binding["spec"],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[created])),
        )
        data = json.dumps(memberships, sort_keys=True)
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-labeller-memberships",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=LABELLER_CONFIG_MAP, namespace=ns, labels=LABELLER_LABEL),
            data={MEMBERSHIPS_KEY: data},
            opts=in_ns,
        )
        return k8s.apps.v1.Deployment(
            f"{name}-labeller",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=LABELLER, namespace=ns, labels=LABELLER_LABEL),
            spec=self._labeller_spec(hashlib.sha256(data.encode()).hexdigest()),
            opts=pulumi.ResourceOptions.merge(
                in_ns, pulumi.ResourceOptions(depends_on=[account, *grants, created, bound, config_map, *code])
            ),
        )

    @staticmethod
    def _labeller_spec(digest: str) -> k8s.apps.v1.DeploymentSpecArgs:
        """One pod, Pod Security "restricted" (as the controller: ``nobody``, read-only root, no capability), its
        memberships mounted read-only; their digest on the template rolls the pod when they change."""
        container = shipped_container(
            "labeller",
            "components.node_agent.agent.labeller.main",
            AGENT_DIR,
            env=[k8s.core.v1.EnvVarArgs(name="PYTHONDONTWRITEBYTECODE", value="1")],
            security_context=locked_down_container(),
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={"cpu": "20m", "memory": "64Mi"}, limits={"memory": "256Mi"}
            ),
            mounts=[k8s.core.v1.VolumeMountArgs(name="memberships", mount_path=MEMBERSHIPS_DIR, read_only=True)],
        )
        return k8s.apps.v1.DeploymentSpecArgs(
            replicas=1,
            strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=LABELLER_LABEL),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    labels=LABELLER_LABEL, annotations={MEMBERSHIPS_DIGEST_ANNOTATION: digest}
                ),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=LABELLER,
                    security_context=non_root_pod_security(names.CONTROLLER_USER),
                    containers=[container],
                    volumes=[
                        code_volume(CODE_CONFIG_MAP, AGENT_FILES),
                        k8s.core.v1.VolumeArgs(
                            name="memberships",
                            config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(
                                name=LABELLER_CONFIG_MAP, default_mode=0o444
                            ),
                        ),
                    ],
                ),
            ),
        )

    def _cluster_role(
        self, name: str, role: str, account: str, ns: str, rules: tuple[PolicyRule, ...], opts: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        full = f"gpu-platform-{account}"
        metadata = k8s.meta.v1.ObjectMetaArgs(name=full, labels=EXECUTOR_LABEL)
        return self._grant(f"{name}-{role}-cluster-role", "ClusterRole", full, metadata, account, ns, rules, opts)

    def _role(
        self, name: str, role: str, role_ns: str, ns: str, rules: tuple[PolicyRule, ...], opts: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        role_name = f"{CONTROLLER}-{role}"
        metadata = k8s.meta.v1.ObjectMetaArgs(name=role_name, namespace=role_ns)
        return self._grant(f"{name}-{role}-role", "Role", role_name, metadata, CONTROLLER, ns, rules, opts)

    @staticmethod
    def _grant(
        resource_name: str,
        kind: str,
        object_name: str,
        metadata: k8s.meta.v1.ObjectMetaArgs,
        account: str,
        ns: str,
        rules: tuple[PolicyRule, ...],
        opts: pulumi.ResourceOptions,
    ) -> list[pulumi.Resource]:
        """A Role or ClusterRole with ``rules`` and its binding to ``account``; the binding waits for the role."""
        role_type = k8s.rbac.v1.ClusterRole if kind == "ClusterRole" else k8s.rbac.v1.Role
        binding_type = k8s.rbac.v1.ClusterRoleBinding if kind == "ClusterRole" else k8s.rbac.v1.RoleBinding
        created = role_type(resource_name, metadata=metadata, rules=_rules(rules), opts=opts)
        binding = binding_type(
            f"{resource_name}-binding",
            metadata=metadata,
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind=kind, name=object_name),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=account, namespace=ns)],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[created])),
        )
        return [created, binding]

    @staticmethod
    def _controller() -> k8s.apps.v1.DeploymentSpecArgs:
        env = downward_env({names.ENV_NAMESPACE: "metadata.namespace", names.ENV_POD_NAME: "metadata.name"})
        env.append(k8s.core.v1.EnvVarArgs(name="PYTHONDONTWRITEBYTECODE", value="1"))
        container = shipped_container(
            "controller",
            "components.node_agent.agent.controller.main",
            AGENT_DIR,
            env=env,
            security_context=locked_down_container(),
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={"cpu": "20m", "memory": "64Mi"}, limits={"memory": "256Mi"}
            ),
        )
        container.ports = [
            k8s.core.v1.ContainerPortArgs(name=names.METRICS_PORT_NAME, container_port=names.METRICS_PORT)
        ]
        return k8s.apps.v1.DeploymentSpecArgs(
            replicas=1,
            # One leader at a time anyway (its Lease); Recreate avoids two pods contending during a rollout.
            strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=CONTROLLER_LABEL),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=CONTROLLER_LABEL),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=CONTROLLER,
                    security_context=non_root_pod_security(names.CONTROLLER_USER),
                    containers=[container],
                    volumes=[code_volume(CODE_CONFIG_MAP, AGENT_FILES)],
                ),
            ),
        )

    @staticmethod
    def _executors(config: NodeAgentConfig) -> k8s.apps.v1.DaemonSetSpecArgs:
        env = downward_env({names.ENV_NODE_NAME: "spec.nodeName"})
        env += [
            k8s.core.v1.EnvVarArgs(name=names.ENV_ALLOW_REBOOT, value="true" if config.allow_reboot else "false"),
            k8s.core.v1.EnvVarArgs(name=names.ENV_UNINSTALL_TIMEOUT, value=str(config.uninstall_timeout_seconds)),
            k8s.core.v1.EnvVarArgs(name="PYTHONDONTWRITEBYTECODE", value="1"),
        ]
        return k8s.apps.v1.DaemonSetSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=EXECUTOR_LABEL),
            # An executor holds no state a restart loses (each step is recorded on the host before it starts),
            # so new code rolls out; the settings the controller reads live are in their own ConfigMap.
            update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=EXECUTOR_LABEL),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=EXECUTOR,
                    host_pid=True,
                    priority_class_name="system-node-critical",
                    node_selector={GPU_NODE_LABEL: "true"},
                    # It must run on cordoned nodes and on nodes that still carry the MIG-pending taint.
                    tolerations=[k8s.core.v1.TolerationArgs(operator="Exists")],
                    # A long host step (the uninstall) is finished, not cut, on SIGTERM.
                    termination_grace_period_seconds=config.uninstall_timeout_seconds + 60,
                    containers=[
                        shipped_container(
                            "executor",
                            "components.node_agent.agent.executor.main",
                            AGENT_DIR,
                            env=env,
                            security_context=k8s.core.v1.SecurityContextArgs(
                                privileged=True, run_as_user=names.AGENT_IMAGE_USER, run_as_non_root=False
                            ),
                            resources=k8s.core.v1.ResourceRequirementsArgs(
                                requests={"cpu": "10m", "memory": "48Mi"}, limits={"memory": "192Mi"}
                            ),
                            mounts=[
                                k8s.core.v1.VolumeMountArgs(
                                    name="host-root", mount_path="/host", mount_propagation="HostToContainer"
                                ),
                            ],
                        )
                    ],
                    volumes=[
                        k8s.core.v1.VolumeArgs(
                            name="host-root", host_path=k8s.core.v1.HostPathVolumeSourceArgs(path="/", type="Directory")
                        ),
                        code_volume(CODE_CONFIG_MAP, AGENT_FILES),
                    ],
                ),
            ),
        )
