"""The GPU smoke test: a CUDA vectorAdd Job per GPU pool and per MIG profile, awaited by ``pulumi up``.

Each Job requests exactly one GPU or one MIG slice with the pool's tolerations and node selector,
so a success proves the whole chain on that hardware: node, driver, toolkit, device plugin, MIG
config. Pulumi waits for a Job to complete (up to the custom timeout), so a broken node fails the
update instead of the first user's notebook.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.base.aliases import moved_between_steps
from components.base.kubernetes_args import toleration_args
from components.catalog.names import GPU_SMOKE_TEST_TYPE
from components.catalog.nvidia_driver import driver_check_script
from components.smoke_test.config import SmokeTestConfig
from components.smoke_test.targets import SmokeTarget


@dataclass(frozen=True)
class SmokeTestArgs:
    """Inputs: the config, the targets, the namespace and what must be ready first."""

    config: SmokeTestConfig
    targets: list[SmokeTarget]
    namespace: str
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    #: Per pool, what that pool's Jobs also wait for (a bare-metal node's MIG label): a Job waits for its
    #: own node, not the fleet's, so registration stays linear in the fleet.
    pool_prerequisites: Mapping[str, list[pulumi.Resource]] = field(default_factory=dict)


class GpuSmokeTest(pulumi.ComponentResource):
    """One awaited Job per target."""

    jobs: dict[str, k8s.batch.v1.Job]

    def __init__(self, name: str, args: SmokeTestArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_SMOKE_TEST_TYPE, name, None, opts)
        config = args.config
        self.jobs = {}
        for target in args.targets:
            self.jobs[target.job_name] = k8s.batch.v1.Job(
                f"{name}-{target.job_name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=target.job_name,
                    namespace=args.namespace,
                    labels={"app.kubernetes.io/name": "gpu-smoke-test", "gpu-platform.io/pool": target.pool},
                ),
                spec=k8s.batch.v1.JobSpecArgs(
                    backoff_limit=2,
                    active_deadline_seconds=config.timeout_seconds,
                    ttl_seconds_after_finished=config.ttl_seconds_after_finished,
                    template=k8s.core.v1.PodTemplateSpecArgs(
                        spec=k8s.core.v1.PodSpecArgs(
                            restart_policy="Never",
                            node_selector=target.node_selector,
                            tolerations=toleration_args(target.tolerations),
                            init_containers=_driver_check(config.image, target),
                            containers=[
                                k8s.core.v1.ContainerArgs(
                                    name="vectoradd",
                                    image=config.image,
                                    resources=k8s.core.v1.ResourceRequirementsArgs(limits={target.resource: "1"}),
                                    security_context=k8s.core.v1.SecurityContextArgs(
                                        allow_privilege_escalation=False, run_as_non_root=False
                                    ),
                                )
                            ],
                        )
                    ),
                ),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=args.provider,
                    depends_on=[*args.depends_on, *args.pool_prerequisites.get(target.pool, [])],
                    delete_before_replace=True,  # the Job name is fixed; Jobs are immutable
                    # The same Job when its pool becomes the canary or stops being it (components.base.aliases).
                    aliases=moved_between_steps(
                        name, GPU_SMOKE_TEST_TYPE, target.job_name, opts.parent if opts else None
                    ),
                    custom_timeouts=pulumi.CustomTimeouts(
                        create=f"{config.timeout_seconds}s", update=f"{config.timeout_seconds}s"
                    ),
                ),
            )
        self.register_outputs({"jobs": sorted(self.jobs)})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: every Job (never the component, which the SDK expands)."""
        return list(self.jobs.values())


def _driver_check(image: str, target: SmokeTarget) -> list[k8s.core.v1.ContainerArgs] | None:
    """An init container that waits until the node's driver is the declared one (None: nothing declared).

    It requests the same GPU resource as the test (kubelet hands the init container's device on to the
    test container), so nvidia-smi sees exactly the GPU the test will use; ``utility`` gives the container
    nvidia-smi (NVIDIA Container Toolkit driver capabilities).
    """
    if not target.driver_version:
        return None
    return [
        k8s.core.v1.ContainerArgs(
            name="driver-version",
            image=image,
            command=["sh", "-c", driver_check_script(target.driver_version)],
            env=[
                k8s.core.v1.EnvVarArgs(
                    name="NODE_NAME",
                    value_from=k8s.core.v1.EnvVarSourceArgs(
                        field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path="spec.nodeName")
                    ),
                ),
                k8s.core.v1.EnvVarArgs(name="NVIDIA_DRIVER_CAPABILITIES", value="compute,utility"),
            ],
            resources=k8s.core.v1.ResourceRequirementsArgs(limits={target.resource: "1"}),
            security_context=k8s.core.v1.SecurityContextArgs(allow_privilege_escalation=False, run_as_non_root=False),
        )
    ]
