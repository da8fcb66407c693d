"""The proof of a driver step: one awaited Job per step that passes only when every node of the step's pools
runs the declared driver and CUDA on it.

Why a Job: ``pulumi up`` awaits a Job until it completes (pulumi-kubernetes), so the next step (the next
NVIDIADriver resources, the smoke Jobs) depends on this resource and never on an NVIDIADriver's status, which
cannot tell an old ``ready`` from a new one (``components.catalog.nvidia_driver``). The Job runs the shipped
runner (``components/proof/job``, judging by ``components/catalog/proof.py``: standard library Python on the node
agent's pinned image, with the node agent's API client) as ``nobody`` with a read-only root, under a ServiceAccount that may list nodes,
list driver pods, DaemonSets and ControllerRevisions in the operator's namespace and create/delete its CUDA pods
in its own: nothing else.

``GpuProofAccess`` is registered once (ServiceAccount, RBAC, the PriorityClass, the code ConfigMap); ``GpuProof``
once per step. The Job's name carries a digest of the step's settings: a changed driver is a new Job, so the
proof runs again for every change, and a step that passed is not re-run. A step that failed is: the Job carries
``pulumi.com/replaceUnready`` (see ``REPLACE_UNREADY``), so the next ``pulumi up`` replaces it.
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
from components.catalog import node_agent as agent_names
from components.catalog.kubernetes import PRIORITY_CLASS_IMMUTABLE_FIELDS
from components.catalog.names import GPU_PROOF_ACCESS_TYPE, GPU_PROOF_TYPE, MANAGED_BY_LABELS
from components.catalog.proof import PROOF_NAMESPACE

#: What the runner imports, shipped in the code ConfigMap (standard library only; see pyproject's contracts).
PROOF_FILES: tuple[str, ...] = (
    *SHIPPED_CATALOG,
    "components/node_agent/agent/__init__.py",
    "components/node_agent/agent/kube.py",
    "components/node_agent/agent/objects.py",
    "components/proof/__init__.py",
    "components/proof/job/__init__.py",
    "components/proof/job/main.py",
    "components/proof/job/run.py",
)
#: The module the Job runs (``python -m``).
RUNNER = "components.proof.job.main"
ACCOUNT = "gpu-platform-proof"
CODE_CONFIG_MAP = "gpu-platform-proof-code"
CODE_DIR = "/proof"
LABELS = {"app.kubernetes.io/name": "gpu-platform-proof", **MANAGED_BY_LABELS}
#: The PriorityClass of the proof's pods (the Job's and its CUDA pods), so a CUDA pod gets a GPU on a full node.
PRIORITY_CLASS = "gpu-platform-proof"
#: Its value: above every ordinary workload (a pod of no class has 0; the ``high-priority`` class of Kubernetes'
#: own PriorityClass example has 1,000,000), so the scheduler's default preemption (``PreemptLowerPriority``)
#: frees one GPU of a full node for a CUDA pod of the proof. It must stay at or below 1,000,000,000: the API server
#: refuses a higher value for any class but Kubernetes' own system classes (Kubernetes ``pkg/apis/scheduling/types.go``
#: ``HighestUserDefinablePriority``; ``system-cluster-critical`` is twice that; Kubernetes behaviour, not in
#: ``.upstream/``). Ten times below that limit, so a workload that must never yield to the proof can still get a
#: class above it.
PRIORITY_VALUE = 100_000_000
#: pulumi-kubernetes (v4.32.0 ``provider/pkg/metadata/annotations.go`` ``AnnotationReplaceUnready``, read in
#: ``provider/pkg/provider/provider.go`` ``(*kubeProvider).Diff``): for a Job with this annotation ``"true"``
#: Diff reads the live Job and, when ``checkjob.NewJobChecker().Ready`` says it has not completed (failed, or
#: never finished), reports a replacement; the Job keeps its name and namespace, so the replacement is delete
#: first (``deleteBeforeReplace`` in the same function). The delete is foreground by default
#: (``provider/pkg/metadata/overrides.go`` ``DeletionPropagation``; ``provider/pkg/await/await.go``
#: ``Deletion``): the Job's pods go, and with them the CUDA pods they own. So the next ``pulumi up`` after a
#: failed proof runs the step's proof again, on a clean slate.
REPLACE_UNREADY = {"pulumi.com/replaceUnready": "true"}
#: Seconds the Job may outlive the runner's own deadline (image pull, scheduling) before Kubernetes stops it.
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
    """The proof's namespace, ServiceAccount, least-privilege RBAC, PriorityClass and the runner's code, shared by
    every step."""

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
                # A driver pod is current when it is from its DaemonSet's newest ControllerRevision, as the
                # operator's upgrade controller judges it (k8s-operator-libs GetDaemonsetControllerRevisionHash).
                k8s.rbac.v1.PolicyRuleArgs(api_groups=["apps"], resources=["controllerrevisions"], verbs=["list"]),
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
        priority = k8s.scheduling.v1.PriorityClass(
            f"{name}-priority-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=PRIORITY_CLASS, labels=LABELS),
            value=PRIORITY_VALUE,
            global_default=False,
            preemption_policy="PreemptLowerPriority",
            description="The gpu-platform proof of a driver step: its CUDA pods must get a GPU of every node.",
            # The API server refuses a change of either in place (Kubernetes ``ValidatePriorityClassUpdate``), and
            # pulumi-kubernetes lists no replacement for them (``provider/pkg/provider/diff.go``): replace, under
            # the same name, so delete first. Running pods keep the priority they were admitted with.
            opts=pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    replace_on_changes=list(PRIORITY_CLASS_IMMUTABLE_FIELDS), delete_before_replace=True
                ),
            ),
        )
        code = k8s.core.v1.ConfigMap(
            f"{name}-code",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CODE_CONFIG_MAP, namespace=ns, labels=LABELS),
            data=proof_sources(),
            opts=child,
        )
        self.namespace = ns
        self.priority_class = PRIORITY_CLASS
        # The Priority admission plugin refuses a pod naming a PriorityClass that does not exist yet.
        self._ready: list[pulumi.Resource] = [account, *bindings, priority, code]
        self.register_outputs({"serviceAccount": ACCOUNT})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a proof Job waits for: its account, its rights, its PriorityClass and its code (never the
        component)."""
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
        settings = {**args.settings, "priority_class": args.access.priority_class}
        deadline = int(settings["deadline_seconds"]) + JOB_MARGIN_SECONDS
        ns = args.access.namespace
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=job_name(settings["step"], settings), namespace=ns, labels=LABELS, annotations=REPLACE_UNREADY
            ),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=1,  # the runner itself is level-triggered; one retry covers a lost pod
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
        priority_class_name=settings["priority_class"],
        security_context=non_root_pod_security(agent_names.CONTROLLER_USER),
        containers=[
            shipped_container(
                "proof",
                RUNNER,
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
