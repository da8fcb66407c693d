"""Config model of the cluster the platform lands on (``cluster`` in the stack file).

The kinds, told apart by ``kind`` (which also names the stack's platform, ``components.stack.platforms``);
each kind takes only its own keys, so a bare-metal cluster with a Yandex cluster id cannot even be written down:
- ``yandex``: an existing Yandex Managed Kubernetes cluster, found by ``clusterId`` in the folder
  of the Yandex provider (``yandex:folderId``, the one place the folder is named); its kubeconfig
  is built from the cluster's endpoint and CA;
- ``bare-metal``: an existing cluster reached with a kubeconfig kept as a Pulumi secret, whose hosts the
  program prepares over SSH;
- ``existing``: any cluster reached with a kubeconfig kept as a Pulumi secret, whose GPU nodes someone else
  provisions.
Each gives one explicit Kubernetes provider that every Kubernetes resource uses, so nothing ever
lands on whatever cluster the operator's local kubeconfig happens to point at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog.yandex import yandex_id_problem

# The oldest Kubernetes minor we support, and the newest whose OpenAPI schema we validate against.
MIN_KUBERNETES = (1, 28)
MAX_KUBERNETES = (1, 37)

_MINOR = re.compile(r"^1\.(\d+)$")
#: Cluster names prefix cloud names (node groups: 63 characters with the group and a digest), so a DNS label.
MAX_NAME = 40
_NAME = re.compile(rf"^[a-z]([-a-z0-9]{{0,{MAX_NAME - 2}}}[a-z0-9])?\Z")


class _ClusterBase(ConfigModel):
    """What every kind of cluster declares."""

    name: str = Field(description="a short name for outputs and resource names (a lowercase DNS label)")
    kubernetes_version: str

    @property
    def kubernetes_minor(self) -> tuple[int, int]:
        """(1, 30) for "1.30" (only valid after ``problems`` found none)."""
        match = _MINOR.match(self.kubernetes_version)
        return (1, int(match.group(1))) if match else (0, 0)

    def problems(self, path: str) -> Iterator[Problem]:
        """The name is a DNS label; the Kubernetes version is MAJOR.MINOR and supported."""
        if not _NAME.match(self.name):
            yield Problem(
                join_path(path, "name"),
                f"{self.name!r} must be 1-{MAX_NAME} lowercase letters, digits or '-', starting with a letter and "
                "not ending with '-' (it prefixes cloud and Kubernetes names)",
            )
        version_key = join_path(path, "kubernetesVersion")
        if not _MINOR.match(self.kubernetes_version):
            yield Problem(version_key, f"{self.kubernetes_version!r} must be MAJOR.MINOR, e.g. 1.30")
        elif not MIN_KUBERNETES <= self.kubernetes_minor <= MAX_KUBERNETES:
            low = ".".join(map(str, MIN_KUBERNETES))
            high = ".".join(map(str, MAX_KUBERNETES))
            yield Problem(version_key, f"{self.kubernetes_version} is not supported; allowed: {low} to {high}")


class YandexClusterConfig(_ClusterBase):
    """An existing Yandex Managed Kubernetes cluster, in the folder of the Yandex provider (``yandex:folderId``)."""

    kind: Literal["yandex"]
    cluster_id: str = Field(min_length=1)
    endpoint: Literal["external", "internal"] = "external"

    def problems(self, path: str) -> Iterator[Problem]:
        """The common checks, and ``clusterId`` by the Yandex API's id rule."""
        yield from super().problems(path)
        problem = yandex_id_problem(self.cluster_id)
        if problem:
            yield Problem(join_path(path, "clusterId"), problem)


class KubeconfigClusterConfig(_ClusterBase):
    """An existing cluster reached with a kubeconfig kept as a Pulumi secret.

    ``kubeconfigSecret`` names the secret stack config key (set with ``pulumi config set --secret``)
    that holds the kubeconfig text; the text never appears in the stack file in plaintext.
    """

    kind: Literal["bare-metal", "existing"]
    kubeconfig_secret: str = "kubeconfig"
    context: str | None = None


ClusterConfig = Annotated[YandexClusterConfig | KubeconfigClusterConfig, Field(discriminator="kind")]
