"""The driver settings one GPU pool may set for itself (``nodeGroups.<name>.driver``), and the upgrade policy.

Why a module of its own: a pool's driver is part of the pool's config, so the pool models (a Yandex node
group) embed this model, the way they embed MIG's (the one declared exception between capabilities in
the layers contract). Every key is optional: an unset key takes ``gpuOperator.driver``'s value, so a
stack that sets none of them runs one driver, exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog.drivers import CudaVersionError, minimum_driver
from components.catalog.kubernetes import int_or_percent_problem
from components.catalog.label_selector import label_selector_problem
from components.catalog.versions import full_driver_version_problem

KernelModuleType = Literal["auto", "open", "proprietary"]


class PodDeletion(ConfigModel):
    """How the upgrade controller deletes GPU pods before a driver upgrade."""

    force: bool = False
    timeout_seconds: int = Field(default=300, ge=0)
    delete_empty_dir: bool = False


class Drain(ConfigModel):
    """Whether and how nodes are drained before a driver upgrade."""

    enable: bool = False
    force: bool = False
    pod_selector: str = ""
    timeout_seconds: int = Field(default=300, ge=0)
    delete_empty_dir: bool = False


class WaitForCompletion(ConfigModel):
    """Wait for matching jobs to finish before upgrading a node (0 = forever)."""

    timeout_seconds: int = Field(default=0, ge=0)
    pod_selector: str = ""


class UpgradePolicy(ConfigModel):
    """``driver.upgradePolicy`` of the chart: rolling driver upgrades, one node at a time by default."""

    auto_upgrade: bool = True
    max_parallel_upgrades: int = Field(default=1, ge=0, description="nodes upgraded at once; 0: no limit")
    max_unavailable: str | int = Field(
        default="25%",
        description="a number, or a percentage (rounded up) of every node under this driver (its NVIDIADriver's "
        "pools; the whole cluster for the ClusterPolicy's one driver); cordoned and NotReady nodes count, the node "
        "agent's too, so on a pool the agent maintains it may not allow more nodes than nodeAgent.maxUnavailable "
        "(refused)",
    )
    gpu_pod_deletion: PodDeletion = PodDeletion()
    drain: Drain = Drain()
    wait_for_completion: WaitForCompletion = WaitForCompletion()

    def problems(self, path: str) -> Iterator[Problem]:
        """``maxUnavailable`` a count or percentage; the pod selectors label selectors the API server parses.

        The upgrade controller lists pods with these selectors (k8s-operator-libs ``pkg/upgrade``, drain and
        wait-for-completion): a selector ``labels.Parse`` refuses fails every upgrade at its first node.
        """
        value = self.max_unavailable
        count = int(value) if isinstance(value, str) and value.isdigit() else value
        problem = int_or_percent_problem(count)
        if problem:
            yield Problem(join_path(path, "maxUnavailable"), problem)
        for key, selector in (
            ("drain", self.drain.pod_selector),
            ("waitForCompletion", self.wait_for_completion.pod_selector),
        ):
            problem = label_selector_problem(selector)
            if problem:
                yield Problem(join_path(path, key, "podSelector"), problem)

    def spelled(self, *, crd: bool) -> dict[str, Any]:
        """The policy as the chart's ``driver.upgradePolicy`` values spell it, or (``crd``) as the NVIDIADriver
        CRD's ``spec.upgradePolicy`` does: ``podDeletion`` where the values say ``gpuPodDeletion``, and empty pod
        selectors left out, as the chart's own template leaves them out (gpu-operator v26.7.0
        ``api/nvidia/v1alpha1/nvidiadriver_types.go``, ``deployments/gpu-operator/values.yaml``)."""
        wait: dict[str, Any] = {"timeoutSeconds": self.wait_for_completion.timeout_seconds}
        drain: dict[str, Any] = {
            "enable": self.drain.enable,
            "force": self.drain.force,
            "timeoutSeconds": self.drain.timeout_seconds,
            "deleteEmptyDir": self.drain.delete_empty_dir,
        }
        for block, selector in ((wait, self.wait_for_completion.pod_selector), (drain, self.drain.pod_selector)):
            if selector or not crd:
                block["podSelector"] = selector
        return {
            "autoUpgrade": self.auto_upgrade,
            "maxParallelUpgrades": self.max_parallel_upgrades,
            "maxUnavailable": self.max_unavailable,
            "podDeletion" if crd else "gpuPodDeletion": {
                "force": self.gpu_pod_deletion.force,
                "timeoutSeconds": self.gpu_pod_deletion.timeout_seconds,
                "deleteEmptyDir": self.gpu_pod_deletion.delete_empty_dir,
            },
            "drain": drain,
            "waitForCompletion": wait,
        }


class PoolDriverConfig(ConfigModel):
    """One pool's own driver; every unset key comes from ``gpuOperator.driver``.

    Pools whose drivers end up different run on separate ``NVIDIADriver`` resources (one per distinct
    driver); ``canary: true`` gives the pool its own resource and makes every other pool's driver
    change wait until this pool's driver is ready and its smoke Jobs passed.
    """

    version: str | None = Field(default=None, description="driver version for this pool, e.g. 595.91.07")
    kernel_module_type: KernelModuleType | None = None
    use_precompiled: bool | None = None
    upgrade_policy: UpgradePolicy | None = Field(
        default=None, description="keys set here replace gpuOperator.driver.upgradePolicy's, key by key"
    )
    cuda: str | None = Field(
        default=None,
        description="the CUDA level this pool's workloads need (at least cuda.version); default cuda.version",
    )
    canary: bool = Field(default=False, description="this pool's driver changes first; the other pools wait for it")

    def problems(self, path: str) -> Iterator[Problem]:
        """A full driver version, a CUDA level the catalog knows, a count or percentage for maxUnavailable."""
        if self.version is not None:
            problem = full_driver_version_problem(self.version)
            if problem:
                yield Problem(join_path(path, "version"), problem)
        if self.cuda is not None:
            try:
                minimum_driver(self.cuda)
            except (CudaVersionError, ValueError) as error:
                yield Problem(join_path(path, "cuda"), str(error))
        if self.upgrade_policy is not None:
            yield from self.upgrade_policy.problems(join_path(path, "upgradePolicy"))
