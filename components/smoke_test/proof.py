"""The proof of a driver step: one awaited Job per step that passes only when every node of the step's pools
runs the declared driver and CUDA on it.

Why a Job: ``pulumi up`` awaits a Job until it completes (pulumi-kubernetes), so the next step (the next
NVIDIADriver resources, the smoke Jobs) depends on this resource and never on an NVIDIADriver's status, which
cannot tell an old ``ready`` from a new one (``components.catalog.nvidia_driver``). The Job runs the shipped
checker (``components/node_agent/agent/proof``: standard library Python on the node agent's pinned image, with
the node agent's API client) as ``nobody`` with a read-only root, under a ServiceAccount that may list nodes,
list driver pods and DaemonSets in the operator's namespace and create/delete its CUDA pods there: nothing else.

``GpuProofAccess`` is registered once (ServiceAccount, RBAC, the code ConfigMap); ``GpuProof`` once per step.
The Job's name carries a digest of the step's settings: a changed driver is a new Job, so the proof runs again
for every change, and an unchanged step is not re-run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base.kubernetes_args import downward_env, locked_down_container, non_root_pod_security
from components.base.shipped_code import code_volume, shipped_container, shipped_sources
from components.catalog import node_agent as agent_names
from components.catalog.names import GPU_PROOF_ACCESS_TYPE, GPU_PROOF_TYPE, MANAGED_BY_LABELS, PROOF_NAMESPACE

#: What the checker imports, shipped in the code ConfigMap (standard library only; see pyproject's contracts).
PROOF_FILES: tuple[str, ...] = (
    "components/catalog/names.py",
    "components/catalog/node_agent.py",
    "components/catalog/nvidia_driver.py",
    "components/node_agent/agent/__init__.py",
    "components/node_agent/agent/kube.py",
    "components/node_agent/agent/objects.py",
    "components/node_agent/agent/proof/__init__.py",
    "components/node_agent/agent/proof/check.py",
    "components/node_agent/agent/proof/main.py",
)
ACCOUNT = "gpu-platform-proof"
CODE_CONFIG_MAP = "gpu-platform-proof-code"
CODE_DIR = "/proof"
LABELS = {"app.kubernetes.io/name": "gpu-platform-proof", **MANAGED_BY_LABELS}
#: Minutes the Job may outlive the checker's own deadline (image pull, scheduling) before Kubernetes stops it.
JOB_MARGIN_SECONDS = 300


def proof_sources() -> dict[str, str]:
    """The shipped files as ConfigMap data."""
    return shipped_sources(PROOF_FILES)


@dataclass(frozen=True)
class ProofAccessArgs:
    """The operator's namespace (its driver pods and DaemonSets are read there) and what comes first."""

    operator_namespace: str
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class GpuProofAccess(pulumi.ComponentResource):
    """The proof's namespace, ServiceAccount, least-privilege RBAC and the checker's code, shared by every step."""

    def __init__(self, name: str, args: ProofAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_PROOF_ACCESS_TYPE, name, None, opts)
        ns = PROOF_NAMESPACE
        base = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels=LABELS), opts=base
        )
        child = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[namespace]))
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=ns, labels=LABELS),
            opts=child,
        )
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-cluster-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, labels=LABELS),
            rules=[k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["nodes"], verbs=["list"])],
            opts=child,
        )
        role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=ns, labels=LABELS),
            rules=[k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["pods"], verbs=["list", "create", "delete"])],
            opts=child,
        )
        operator_role = k8s.rbac.v1.Role(
            f"{name}-operator-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=args.operator_namespace, labels=LABELS),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["pods"], verbs=["list"]),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=["apps"], resources=["daemonsets"], verbs=["list"]),
            ],
            opts=child,
        )
        subject = [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=ACCOUNT, namespace=ns)]
        bindings = [
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-cluster-role-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, labels=LABELS),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=ACCOUNT
                ),
                subjects=subject,
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[cluster_role])),
            ),
            *(
                k8s.rbac.v1.RoleBinding(
                    f"{name}-{suffix}-binding",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=role_ns, labels=LABELS),
                    role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=ACCOUNT),
                    subjects=subject,
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[granted])),
                )
                for suffix, role_ns, granted in (
                    ("role", ns, role),
                    ("operator-role", args.operator_namespace, operator_role),
                )
            ),
        ]
        code = k8s.core.v1.ConfigMap(
            f"{name}-code",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CODE_CONFIG_MAP, namespace=ns, labels=LABELS),
            data=proof_sources(),
            opts=child,
        )
        self.namespace = ns
        self._ready: list[pulumi.Resource] = [account, *bindings, code]
        self.register_outputs({"serviceAccount": ACCOUNT})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a proof Job waits for: its account, its rights and its code (never the component)."""
        return list(self._ready)


@dataclass(frozen=True)
class ProofArgs:
    """One step: its settings (``ProofSettings`` JSON), the shared access, and what the step follows."""

    settings: dict[str, Any]
    access: GpuProofAccess
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)


def settings_digest(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]


def job_name(step: str, settings: dict[str, Any]) -> str:
    """``gpu-proof-<step>-<digest>``: a new Job (a new proof) whenever the step's settings change."""
    return f"gpu-proof-{step}"[: 63 - 9].rstrip("-") + f"-{settings_digest(settings)}"


class GpuProof(pulumi.ComponentResource):
    """The awaited proof Job of one driver step."""

    job: k8s.batch.v1.Job

    def __init__(self, name: str, args: ProofArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_PROOF_TYPE, name, None, opts)
        settings = args.settings
        deadline = int(settings["deadline_seconds"]) + JOB_MARGIN_SECONDS
        ns = args.access.namespace
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=job_name(settings["step"], settings), namespace=ns, labels=LABELS),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=1,  # the checker itself is level-triggered; one retry covers a lost pod
                active_deadline_seconds=deadline,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=LABELS),
                    spec=_pod_spec(settings),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*args.access.ready, *args.depends_on],
                custom_timeouts=pulumi.CustomTimeouts(create=f"{deadline}s", update=f"{deadline}s"),
            ),
        )
        self.register_outputs({"job": self.job.metadata.name})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What the next step waits for: the Job (never the component, which the SDK expands)."""
        return [self.job]


def _pod_spec(settings: dict[str, Any]) -> k8s.core.v1.PodSpecArgs:
    return k8s.core.v1.PodSpecArgs(
        restart_policy="Never",
        service_account_name=ACCOUNT,
        security_context=non_root_pod_security(agent_names.CONTROLLER_USER),
        containers=[
            shipped_container(
                "proof",
                "components.node_agent.agent.proof.main",
                CODE_DIR,
                env=[
                    *downward_env({"POD_NAME": "metadata.name", "POD_UID": "metadata.uid"}),
                    k8s.core.v1.EnvVarArgs(name="PROOF_SETTINGS", value=json.dumps(settings, sort_keys=True)),
                    k8s.core.v1.EnvVarArgs(name="PYTHONDONTWRITEBYTECODE", value="1"),
                ],
                security_context=locked_down_container(),
                resources=k8s.core.v1.ResourceRequirementsArgs(
                    requests={"cpu": "10m", "memory": "48Mi"}, limits={"memory": "128Mi"}
                ),
            )
        ],
        volumes=[code_volume(CODE_CONFIG_MAP, PROOF_FILES)],
    )
