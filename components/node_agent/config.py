"""Config model of the node agent (``nodeAgent`` in the stack file).

Groups opt in to the driver hand-over one by one with ``nodeGroups.<name>.hostDriverRemoval: true``;
MIG layout changes go through the agent when ``migLayout`` is true. This section tunes both and sets
the maintenance budget. The default advice stays: recreate a ``runc_drivers_cuda`` group as
``gpuEnvironment: runc`` (a replacement with no zero-GPU window) and leave the hand-over off.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from pydantic import Field, field_validator

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog.kubernetes import dns_label_problem
from components.catalog.node_agent import DEFAULT_AGENT_NAMESPACE, pool_budget

_PERCENT = re.compile(r"^([1-9][0-9]?|100)%$")


#: ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) is served from 1.30, and the node name in a
#: pod's bound service-account token (ServiceAccountTokenPodNodeInfo) is on by default from 1.30: the agent's
#: containment needs both.
MIN_AGENT_KUBERNETES = (1, 30)


class NodeAgentConfig(ConfigModel):
    """How the agent runs (its controller and executors exist only when some pool has work for them)."""

    namespace: str = DEFAULT_AGENT_NAMESPACE
    max_unavailable: int | str = Field(
        default=1,
        description="nodes of one pool in maintenance at once: a number >= 1 or a percentage such as '10%' (rounded "
        "up); one budget with the GPU Operator's upgrade controller, whose nodes count here and which stops only at "
        "its own driver.upgradePolicy.maxUnavailable: a config where that allows more of the pool's nodes is refused",
    )
    mig_layout: bool = Field(
        default=False,
        description="MIG layout changes go through the agent (cordon, drain, relabel, smoke) a budget at a time",
    )
    dry_run: bool = Field(default=False, description="report what would be done; change nothing")
    allow_reboot: bool = Field(default=True, description="false: write /run/reboot-required for kured instead")
    eviction_timeout_seconds: int = Field(default=600, ge=30)
    reboot_timeout_seconds: int = Field(default=900, ge=120)
    driver_ready_timeout_seconds: int = Field(default=1200, ge=60)
    mig_timeout_seconds: int = Field(default=900, ge=60)
    smoke_timeout_seconds: int = Field(default=600, ge=60)
    uninstall_timeout_seconds: int = Field(default=900, ge=60)
    lease_ttl_seconds: int = Field(default=300, ge=60, description="a holder that stops renewing for this long")
    cordon_on_proof_failure: bool = Field(
        default=False,
        description="true: a node whose continuous CUDA proof fails (a new node, or one back under a new UID) is also "
        "cordoned; false: it is only recorded failed (cuda-proof-failed) with the pod's reason, and the alert tells",
    )

    @field_validator("namespace")
    @classmethod
    def _namespace_is_a_dns_label(cls, value: str) -> str:
        problem = dns_label_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("max_unavailable", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be a number >= 1 or a percentage such as '10%', not a boolean")
        return value

    @field_validator("max_unavailable")
    @classmethod
    def _budget(cls, value: int | str) -> int | str:
        if isinstance(value, int):
            if value < 1:
                raise ValueError(f"{value} is not allowed: at least 1 node (or a percentage such as '10%')")
            return value
        if not _PERCENT.match(value):
            raise ValueError(f"{value!r} is not allowed: a number >= 1 or a percentage from '1%' to '100%'")
        return value

    def budget(self, pool_size: int) -> int:
        """Slots for a pool of ``pool_size`` nodes: a percentage rounds up, and is at least one node."""
        return min(pool_budget(self.max_unavailable, pool_size), max(pool_size, 1))


def kubernetes_problems(
    cluster_minor: tuple[int, int], config: NodeAgentConfig, handover_groups: Mapping[str, bool]
) -> Iterator[Problem]:
    """A cluster older than 1.30 cannot contain the agent: every key that turns it on is refused."""
    if cluster_minor >= MIN_AGENT_KUBERNETES or cluster_minor == (0, 0):
        return
    version = ".".join(map(str, cluster_minor))
    why = (
        f"the node agent needs Kubernetes 1.30 or newer (its admission policies are admissionregistration.k8s.io/v1 "
        f"and read the node name from the pod's token); cluster.kubernetesVersion is {version}: upgrade the "
        "cluster first, or leave this off"
    )
    for name, enabled in sorted(handover_groups.items()):
        if enabled:
            yield Problem(join_path(join_path("nodeGroups", name), "hostDriverRemoval"), why)
    if config.mig_layout:
        yield Problem("nodeAgent.migLayout", why)
