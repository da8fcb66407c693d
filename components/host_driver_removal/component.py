"""The HostDriverRemoval ComponentResource: a safe, one-node-at-a-time hand-over to the GPU Operator.

It runs ``components/host_driver_removal/host-driver-removal.sh`` (a state machine recorded on the Node; see
``components.catalog.host_driver_removal``) in a privileged DaemonSet on the nodes of groups that opted in.
RBAC is exactly what the script's kubectl calls need: nodes get/patch, pods list, pods/eviction
create, its own Lease, and Events in ``default``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.base.kubernetes_args import toleration_args
from components.catalog import host_driver_removal as contract
from components.catalog.kubernetes import Taint
from components.catalog.names import PSA_PRIVILEGED
from components.host_driver_removal.config import HostDriverRemovalConfig

#: The node-side script, next to this module; the component ships it in a ConfigMap.
SCRIPT_PATH = Path(__file__).parent / "host-driver-removal.sh"

APP_LABEL = {"app.kubernetes.io/name": "host-driver-removal", "app.kubernetes.io/managed-by": "gpu-platform"}
SCRIPT_KEY = "host-driver-removal.sh"


@dataclass(frozen=True)
class HostDriverRemovalArgs:
    """Inputs: tuning, the taints of opted-in nodes, the operator namespace and the provider."""

    config: HostDriverRemovalConfig
    taints: list[Taint]
    operator_namespace: str
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)


def _rules(rules: tuple[contract.PolicyRule, ...]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    return [
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=list(rule.api_groups),
            resources=list(rule.resources),
            verbs=list(rule.verbs),
            resource_names=list(rule.resource_names) or None,
        )
        for rule in rules
    ]


def script_environment(config: HostDriverRemovalConfig, operator_namespace: str) -> list[k8s.core.v1.EnvVarArgs]:
    """The script's env: its defaults, our settings, and the node and namespace from the downward API."""
    values = contract.env_defaults()
    values.update(
        {
            "DRY_RUN": str(config.dry_run).lower(),
            "ALLOW_REBOOT": str(config.allow_reboot).lower(),
            "EVICTION_TIMEOUT_SECONDS": str(config.eviction_timeout_seconds),
            "LOCK_TTL_SECONDS": str(config.lock_ttl_seconds),
            "HALT_ROLLOUT_ON_FAILURE": str(config.halt_rollout_on_failure).lower(),
            "OPERATOR_NAMESPACE": operator_namespace,
        }
    )
    downward = {"NODE_NAME": "spec.nodeName", "POD_NAMESPACE": "metadata.namespace"}
    env = [
        k8s.core.v1.EnvVarArgs(
            name=name,
            value_from=k8s.core.v1.EnvVarSourceArgs(
                field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=downward[name])
            ),
        )
        for name in sorted(downward)
    ]
    env.extend(
        k8s.core.v1.EnvVarArgs(name=name, value=value) for name, value in sorted(values.items()) if name not in downward
    )
    return env


def removal_tolerations(taints: list[Taint]) -> list[dict[str, str]]:
    """The opted-in nodes' taints, plus unschedulable: the script cordons the node it works on."""
    tolerations = [taint.toleration() for taint in sorted(set(taints), key=str)]
    tolerations.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
    return tolerations


class HostDriverRemoval(pulumi.ComponentResource):
    """Namespace, ServiceAccount, RBAC, the script ConfigMap and the DaemonSet."""

    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, args: HostDriverRemovalArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpu-platform:gpu:HostDriverRemoval", name, None, opts)
        config = args.config
        ns = config.namespace
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels={**PSA_PRIVILEGED, **APP_LABEL}),
            opts=child,
        )
        in_ns = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata=k8s.meta.v1.ObjectMetaArgs(name="host-driver-removal", namespace=ns), opts=in_ns
        )
        subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name="host-driver-removal", namespace=ns)
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-cluster-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-host-driver-removal", labels=APP_LABEL),
            rules=_rules(contract.CLUSTER_RULES),
            opts=child,
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-cluster-role-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-host-driver-removal", labels=APP_LABEL),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="gpu-platform-host-driver-removal"
            ),
            subjects=[subject],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[cluster_role])),
        )
        for role_name, role_ns, rules in (
            ("lock", ns, contract.LOCK_NAMESPACE_RULES),
            ("events", "default", contract.EVENT_NAMESPACE_RULES),
        ):
            role = k8s.rbac.v1.Role(
                f"{name}-{role_name}-role",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"host-driver-removal-{role_name}", namespace=role_ns),
                rules=_rules(rules),
                opts=in_ns,
            )
            k8s.rbac.v1.RoleBinding(
                f"{name}-{role_name}-role-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"host-driver-removal-{role_name}", namespace=role_ns),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="Role", name=f"host-driver-removal-{role_name}"
                ),
                subjects=[subject],
                opts=pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[role])),
            )
        script = k8s.core.v1.ConfigMap(
            f"{name}-script",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="host-driver-removal-script", namespace=ns),
            data={SCRIPT_KEY: SCRIPT_PATH.read_text()},
            opts=in_ns,
        )
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="host-driver-removal", namespace=ns, labels=APP_LABEL),
            spec=self._spec(config, args),
            opts=pulumi.ResourceOptions.merge(
                in_ns, pulumi.ResourceOptions(depends_on=[account, script, *args.depends_on])
            ),
        )
        self.register_outputs({"namespace": ns})

    @staticmethod
    def _spec(config: HostDriverRemovalConfig, args: HostDriverRemovalArgs) -> k8s.apps.v1.DaemonSetSpecArgs:
        return k8s.apps.v1.DaemonSetSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=APP_LABEL),
            update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="OnDelete"),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=APP_LABEL),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name="host-driver-removal",
                    host_pid=True,
                    priority_class_name="system-node-critical",
                    node_selector={contract.OPT_IN_LABEL: contract.OPT_IN_VALUE},
                    tolerations=toleration_args(removal_tolerations(args.taints)),
                    termination_grace_period_seconds=30,
                    containers=[
                        k8s.core.v1.ContainerArgs(
                            name="remove-host-driver",
                            image=config.image,
                            command=["bash", f"/scripts/{SCRIPT_KEY}"],
                            env=script_environment(config, args.operator_namespace),
                            security_context=k8s.core.v1.SecurityContextArgs(privileged=True),
                            resources=k8s.core.v1.ResourceRequirementsArgs(
                                requests={"cpu": "10m", "memory": "32Mi"}, limits={"memory": "128Mi"}
                            ),
                            volume_mounts=[
                                k8s.core.v1.VolumeMountArgs(
                                    name="host-root", mount_path="/host", mount_propagation="HostToContainer"
                                ),
                                k8s.core.v1.VolumeMountArgs(name="script", mount_path="/scripts", read_only=True),
                            ],
                        )
                    ],
                    volumes=[
                        k8s.core.v1.VolumeArgs(
                            name="host-root", host_path=k8s.core.v1.HostPathVolumeSourceArgs(path="/", type="Directory")
                        ),
                        k8s.core.v1.VolumeArgs(
                            name="script",
                            config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(
                                name="host-driver-removal-script", default_mode=0o555
                            ),
                        ),
                    ],
                ),
            ),
        )
