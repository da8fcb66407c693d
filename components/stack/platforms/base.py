"""The platform seam: what provides a stack's GPU nodes, and everything the stack asks of it.

Why a seam: a platform (a Yandex node group, a bare-metal host reached over SSH, a cluster someone else
provisions) differs in its config section, the pools it yields, what it creates and what it reports, and in
nothing above the nodes. Before the seam those differences were ``isinstance`` and ``is not None`` switches spread
through the stack package; now the stack asks ``registry.platform_of(config)`` and calls this interface without
knowing which platform answers. A new platform is a module beside this one, its config models, and one entry in
``registry.PLATFORMS``.

Everything the interface returns is plain data (pools, problems, requests) or a ComponentResource the program
only wires; a platform decides for its own nodes, the plan decides across sections.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pulumi

from components.base.problems import Problem
from components.catalog.names import PROJECT
from components.catalog.pools import GpuPool
from components.cluster.access import ClusterAccessArgs
from components.gpu_operator.drivers import PoolDriverRequest
from components.mig.decisions import MigRequest

if TYPE_CHECKING:
    from components.stack.config import StackConfig
    from components.stack.plan import Plan


def json_section(config: Mapping[str, Any], key: str) -> Any:
    """The value of ``gpu-platform:<key>`` in a stack file's raw config (JSON text), or None when absent or not
    JSON."""
    try:
        return json.loads(config.get(f"{PROJECT}:{key}", "null"))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class NamedSecret:
    """A config key that names a secret config key (``cluster.kubeconfigSecret: kubeconfig``)."""

    path: str  #: where the config names it
    key: str | None  #: the secret key it names (None: it names none, e.g. a bastion using the nodes' key)
    written: bool  #: the file writes it (False: its default)
    #: The path of another named secret this one may share its key with (a bastion may use the nodes' SSH key).
    may_share: str = ""


@dataclass
class PlatformNodes:
    """What a platform created for its nodes: what the GPU Operator waits for, and what the outputs report."""

    #: Resources the GPU Operator's release waits for (node groups ready, hosts prepared).
    ready: list[pulumi.Resource] = field(default_factory=list)
    #: Each created ComponentResource by its role (``nodeGroups``, ``hostPreparation``), for the outputs.
    created: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeLabelling:
    """The NodePatches a platform applies to its nodes after the release, and what waits for them."""

    #: Node name -> its patch (a smoke Job and an NVIDIADriver wait for their own nodes' patches).
    patches: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    #: Every patch (the MIG proof waits for all of them).
    ready: list[pulumi.Resource] = field(default_factory=list)


class GpuPlatform(ABC):
    """One platform. Subclasses are stateless: every method reads the stack config or the plan it is given."""

    #: The ``cluster.kind`` that selects the platform (its name in the registry).
    kind: ClassVar[str]
    #: The stack's config keys (as written, camelCase) only this platform reads; set on another platform: refused.
    sections: ClassVar[tuple[str, ...]]
    #: What its pools are called in the outputs (``gpuPools.<pool>.source``) and the review.
    pool_source: ClassVar[str]
    #: One pool in the review's words ("Yandex node group", "bare-metal node", "selected node pool").
    pool_noun: ClassVar[str]
    #: Pulumi type tokens of what it creates: a stack switching away from it would delete them.
    creates: ClassVar[tuple[str, ...]] = ()
    #: The driver on its hosts is declared stack-wide (``gpuOperator.driver.owner`` says whether the hosts are
    #: driverless), not per pool: bare metal, where the program prepares the hosts itself.
    owner_declares_hosts: ClassVar[bool] = False
    #: The node agent puts the program's labels on the platform's nodes (``memberships``): it runs on every pool.
    labels_through_agent: ClassVar[bool] = False

    # -- config ------------------------------------------------------------------------------------------
    @abstractmethod
    def problems(self, stack: StackConfig) -> Iterator[Problem]:
        """Every problem of the platform's own sections (their shape is pydantic's; this is their meaning)."""

    def named_secrets(self, stack: StackConfig) -> list[NamedSecret]:
        """The config keys of its sections that name secret keys (none by default)."""
        return []

    def handover_pools(self, stack: StackConfig) -> dict[str, bool]:
        """Pool -> whether its preinstalled driver is handed over to the operator's (the node agent's Kubernetes
        checks ask it); read off the config alone. None by default: no pool hands a driver over."""
        return {}

    # -- pools --------------------------------------------------------------------------------------------
    @abstractmethod
    def written_pool_names(self, config: Mapping[str, Any]) -> set[str]:
        """The pool names a stack file's raw config declares (``gpu-platform:<section>`` -> its JSON text), read
        without the model: the review names removed pools even when the config is refused."""

    @abstractmethod
    def pool_names(self, stack: StackConfig) -> list[str]:
        """The GPU pools' names, read off the config alone (safe before its problems are known)."""

    def other_pools(self, stack: StackConfig) -> list[str]:
        """The pool label values of the stack's pools that are not GPU pools (a CPU node group): their nodes are
        the stack's, but no GPU node (none by default)."""
        return []

    @abstractmethod
    def operator_driver_pools(self, stack: StackConfig) -> dict[str, bool]:
        """Pool -> whether its nodes run the GPU Operator's driver (they have none of their own); read off the
        config alone."""

    @abstractmethod
    def pools(self, stack: StackConfig) -> tuple[GpuPool, ...]:
        """Every GPU pool, in a stable order (only once the config has no problems)."""

    @abstractmethod
    def mig_requests(self, stack: StackConfig) -> dict[str, MigRequest]:
        """Pool -> what its config asks of MIG (the ``mig`` key, its path, whether the hardware offers MIG)."""

    @abstractmethod
    def driver_requests(self, stack: StackConfig) -> dict[str, PoolDriverRequest]:
        """Pool -> its own driver settings (its ``driver`` key)."""

    def host_configures_containerd(self, stack: StackConfig) -> bool:
        """Whether the program's host preparation writes containerd's config (the operator's toolkit then must not)."""
        return False

    def budget_keys(self, stack: StackConfig) -> dict[str, str]:
        """Pool -> the pool label value its nodes carry where pools share one node agent budget (none by default:
        every pool has its own)."""
        return {}

    def warnings(self, stack: StackConfig) -> tuple[str, ...]:
        """Settings that are legal but risky, each with why."""
        return ()

    # -- what it creates ----------------------------------------------------------------------------------
    @abstractmethod
    def cluster_access(self, plan: Plan, secrets: Mapping[str, pulumi.Output[str]]) -> ClusterAccessArgs:
        """How the program reaches the cluster (its kubeconfig stays a secret)."""

    def read_secrets(self, stack: StackConfig, config: pulumi.Config) -> dict[str, pulumi.Output[str]]:
        """The secrets its sections name, by role (``kubeconfig``, ``sshPrivateKey``), read as Pulumi secrets."""
        return {}

    def create_nodes(
        self, plan: Plan, cluster_id: pulumi.Output[str], secrets: Mapping[str, pulumi.Output[str]]
    ) -> PlatformNodes:
        """The resources that give the cluster its GPU nodes (none by default: the nodes exist)."""
        return PlatformNodes()

    def label_nodes(self, plan: Plan, provider: Any, depends_on: list[pulumi.Resource]) -> NodeLabelling:
        """The NodePatches that put the program's labels on nodes the platform does not label at creation (none
        by default)."""
        return NodeLabelling()

    def declared_node_labels(self, plan: Plan) -> dict[str, dict[str, str]]:
        """Pool -> every label the program puts on its nodes (the status command compares them)."""
        return {pool.name: plan.node_labels(pool.name) for pool in plan.pools}

    def memberships(self, plan: Plan) -> dict[str, dict[str, dict[str, str]]]:
        """Pool -> ``{"selector": ..., "labels": ...}`` where the node agent must put the pool's labels on every node
        the selector picks (the platform labels none itself); empty by default: the platform labels its nodes."""
        return {}

    def outputs(self, plan: Plan, nodes: PlatformNodes) -> dict[str, Any]:
        """Its part of the outputs contract: ``gpuNodeGroups`` (empty where it creates none)."""
        return {"gpuNodeGroups": {}}
