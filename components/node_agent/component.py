"""The NodeAgent ComponentResource: the agent's code in a ConfigMap, run by a DaemonSet on the GPU nodes.

The agent (``components/node_agent/agent``, standard library only) runs on the pinned official Python
image (``AGENT_IMAGE`` in the catalog) as root, privileged, with ``hostPID`` and the host's ``/`` at
``/host``: it must chroot, nsenter and run the uninstaller. RBAC is least privilege (nodes get/patch,
pods list, evictions, Leases and smoke pods in its namespace, Events in ``default``), and two
ValidatingAdmissionPolicies narrow it further with the node name the bound token carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import node_agent as names
from components.catalog.names import GPU_NODE_LABEL, NODE_AGENT_TYPE, PSA_PRIVILEGED
from components.node_agent.admission import admission_policies
from components.node_agent.config import NodeAgentConfig
from components.node_agent.rbac import CLUSTER_RULES, EVENT_RULES, NAMESPACE_RULES, PolicyRule

ROOT = Path(__file__).resolve().parents[2]
#: What the ConfigMap ships: the agent and the two pure catalog modules it reads its names from.
AGENT_FILES: tuple[str, ...] = (
    "components/catalog/names.py",
    "components/catalog/node_agent.py",
    "components/node_agent/agent/__init__.py",
    "components/node_agent/agent/executor.py",
    "components/node_agent/agent/host.py",
    "components/node_agent/agent/kube.py",
    "components/node_agent/agent/machine.py",
    "components/node_agent/agent/main.py",
)
ACCOUNT = "node-agent"
APP_LABEL = {"app.kubernetes.io/name": "node-agent", "app.kubernetes.io/managed-by": "gpu-platform"}
AGENT_DIR = "/agent"


def config_map_key(path: str) -> str:
    """ConfigMap keys cannot hold ``/``: ``components/catalog/names.py`` -> ``components.catalog.names.py``."""
    return path.replace("/", ".")


def agent_sources() -> dict[str, str]:
    return {config_map_key(path): (ROOT / path).read_text() for path in AGENT_FILES}


@dataclass(frozen=True)
class NodeAgentArgs:
    """Inputs: tuning, the budget of each pool (by its node-group label), and the MIG resources to smoke-test
    (by node group, or by node name for a bare-metal node)."""

    config: NodeAgentConfig
    pool_budgets: dict[str, int]
    mig_resources: dict[str, list[str]]
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)


def agent_settings(config: NodeAgentConfig, args: NodeAgentArgs) -> str:
    """The agent's ``Settings`` as JSON (``machine.Settings.from_json`` reads exactly these keys)."""
    settings = {
        "pool_budgets": dict(sorted(args.pool_budgets.items())),
        "mig_resources": {pool: sorted(res) for pool, res in sorted(args.mig_resources.items())},
        "dry_run": config.dry_run,
        "allow_reboot": config.allow_reboot,
        "eviction_timeout_seconds": config.eviction_timeout_seconds,
        "reboot_timeout_seconds": config.reboot_timeout_seconds,
        "driver_ready_timeout_seconds": config.driver_ready_timeout_seconds,
        "mig_timeout_seconds": config.mig_timeout_seconds,
        "smoke_timeout_seconds": config.smoke_timeout_seconds,
        "uninstall_timeout_seconds": config.uninstall_timeout_seconds,
        "lease_ttl_seconds": config.lease_ttl_seconds,
    }
    return json.dumps(settings, sort_keys=True)


def _rules(rules: tuple[PolicyRule, ...]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    return [
        k8s.rbac.v1.PolicyRuleArgs(api_groups=list(r.api_groups), resources=list(r.resources), verbs=list(r.verbs))
        for r in rules
    ]


class NodeAgent(pulumi.ComponentResource):
    """Namespace, ServiceAccount, RBAC, admission policies, the code ConfigMap and the DaemonSet."""

    daemon_set: k8s.apps.v1.DaemonSet
    pool_budgets: dict[str, int]

    def __init__(self, name: str, args: NodeAgentArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(NODE_AGENT_TYPE, name, None, opts)
        config = args.config
        self.pool_budgets = dict(sorted(args.pool_budgets.items()))
        ns = config.namespace
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels={**PSA_PRIVILEGED, **APP_LABEL}),
            opts=child,
        )
        in_ns = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=ns), opts=in_ns
        )
        subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=ACCOUNT, namespace=ns)
        role_ref = k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=ACCOUNT)
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-cluster-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"gpu-platform-{ACCOUNT}", labels=APP_LABEL),
            rules=_rules(CLUSTER_RULES),
            opts=child,
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-cluster-role-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"gpu-platform-{ACCOUNT}", labels=APP_LABEL),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group=role_ref.api_group, kind="ClusterRole", name=f"gpu-platform-{ACCOUNT}"
            ),
            subjects=[subject],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[cluster_role])),
        )
        for role_name, role_ns, rules in (("agent", ns, NAMESPACE_RULES), ("events", "default", EVENT_RULES)):
            role = k8s.rbac.v1.Role(
                f"{name}-{role_name}-role",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{ACCOUNT}-{role_name}", namespace=role_ns),
                rules=_rules(rules),
                opts=in_ns,
            )
            k8s.rbac.v1.RoleBinding(
                f"{name}-{role_name}-role-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{ACCOUNT}-{role_name}", namespace=role_ns),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="Role", name=f"{ACCOUNT}-{role_name}"
                ),
                subjects=[subject],
                opts=pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[role])),
            )
        policies: list[pulumi.Resource] = []
        for policy_name, policy, binding in admission_policies(ns, ACCOUNT):
            created = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{policy_name}-policy", metadata=policy["metadata"], spec=policy["spec"], opts=child
            )
            policies.append(created)
            policies.append(
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                    f"{name}-{policy_name}-binding",
                    metadata=binding["metadata"],
                    spec=binding["spec"],
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[created])),
                )
            )
        code = k8s.core.v1.ConfigMap(
            f"{name}-code",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{ACCOUNT}-code", namespace=ns, labels=APP_LABEL),
            data=agent_sources(),
            opts=in_ns,
        )
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=ns, labels=APP_LABEL),
            spec=self._spec(config, args),
            opts=pulumi.ResourceOptions.merge(
                in_ns, pulumi.ResourceOptions(depends_on=[account, code, *policies, *args.depends_on])
            ),
        )
        self.register_outputs({"namespace": ns})

    @staticmethod
    def _spec(config: NodeAgentConfig, args: NodeAgentArgs) -> k8s.apps.v1.DaemonSetSpecArgs:
        downward = {names.ENV_NODE_NAME: "spec.nodeName", names.ENV_NAMESPACE: "metadata.namespace"}
        env = [
            k8s.core.v1.EnvVarArgs(
                name=key,
                value_from=k8s.core.v1.EnvVarSourceArgs(field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=path)),
            )
            for key, path in sorted(downward.items())
        ]
        env += [
            k8s.core.v1.EnvVarArgs(name=names.ENV_SETTINGS, value=agent_settings(config, args)),
            k8s.core.v1.EnvVarArgs(name="PYTHONDONTWRITEBYTECODE", value="1"),
        ]
        return k8s.apps.v1.DaemonSetSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=APP_LABEL),
            update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="OnDelete"),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=APP_LABEL),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=ACCOUNT,
                    host_pid=True,
                    priority_class_name="system-node-critical",
                    node_selector={GPU_NODE_LABEL: "true"},
                    # It must run where it cordoned, and on nodes it has not untainted yet.
                    tolerations=[k8s.core.v1.TolerationArgs(operator="Exists")],
                    # A long host step (the uninstall) is finished, not cut, on SIGTERM.
                    termination_grace_period_seconds=config.uninstall_timeout_seconds + 60,
                    containers=[
                        k8s.core.v1.ContainerArgs(
                            name="agent",
                            image=names.AGENT_IMAGE,
                            command=[names.AGENT_PYTHON, "-m", "components.node_agent.agent.main"],
                            working_dir=AGENT_DIR,
                            env=env,
                            security_context=k8s.core.v1.SecurityContextArgs(
                                privileged=True, run_as_user=names.AGENT_IMAGE_USER, run_as_non_root=False
                            ),
                            resources=k8s.core.v1.ResourceRequirementsArgs(
                                requests={"cpu": "10m", "memory": "48Mi"}, limits={"memory": "192Mi"}
                            ),
                            volume_mounts=[
                                k8s.core.v1.VolumeMountArgs(
                                    name="host-root", mount_path="/host", mount_propagation="HostToContainer"
                                ),
                                k8s.core.v1.VolumeMountArgs(name="code", mount_path=AGENT_DIR, read_only=True),
                            ],
                        )
                    ],
                    volumes=[
                        k8s.core.v1.VolumeArgs(
                            name="host-root", host_path=k8s.core.v1.HostPathVolumeSourceArgs(path="/", type="Directory")
                        ),
                        k8s.core.v1.VolumeArgs(
                            name="code",
                            config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(
                                name=f"{ACCOUNT}-code",
                                default_mode=0o444,
                                items=[
                                    k8s.core.v1.KeyToPathArgs(key=config_map_key(path), path=path)
                                    for path in AGENT_FILES
                                ],
                            ),
                        ),
                    ],
                ),
            ),
        )
