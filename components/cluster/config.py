"""Config model of the cluster the platform lands on (``cluster`` in the stack file).

Two kinds: an existing Yandex Managed Kubernetes cluster (found by id; the kubeconfig is built
from its endpoint and CA), and a bare-metal cluster (kubeconfig from a Pulumi secret). Both give
one explicit Kubernetes provider that every Kubernetes resource uses, so nothing ever lands on
whatever cluster the operator's local kubeconfig happens to point at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path

# The oldest Kubernetes minor we support, and the newest whose OpenAPI schema we validate against.
MIN_KUBERNETES = (1, 28)
MAX_KUBERNETES = (1, 37)

_MINOR = re.compile(r"^1\.(\d+)$")


class YandexClusterConfig(ConfigModel):
    """An existing Yandex Managed Kubernetes cluster."""

    cluster_id: str = Field(min_length=1)
    folder_id: str | None = None
    endpoint: Literal["external", "internal"] = "external"


class BareMetalClusterConfig(ConfigModel):
    """An existing cluster reached with a kubeconfig kept as a Pulumi secret.

    ``kubeconfigSecret`` names the secret stack config key (set with ``pulumi config set --secret``)
    that holds the kubeconfig text; the text never appears in the stack file in plaintext.
    """

    kubeconfig_secret: str = "kubeconfig"
    context: str | None = None


class ClusterConfig(ConfigModel):
    """Where the platform runs."""

    kind: Literal["yandex", "bare-metal"]
    name: str = Field(min_length=1, description="a short name for outputs and resource names")
    kubernetes_version: str
    yandex: YandexClusterConfig | None = None
    bare_metal: BareMetalClusterConfig | None = None

    @property
    def kubernetes_minor(self) -> tuple[int, int]:
        """(1, 30) for "1.30" (only valid after ``problems`` found none)."""
        match = _MINOR.match(self.kubernetes_version)
        return (1, int(match.group(1))) if match else (0, 0)

    def problems(self, path: str) -> Iterator[Problem]:
        """Kind-specific blocks present, Kubernetes version supported."""
        version_key = join_path(path, "kubernetesVersion")
        if not _MINOR.match(self.kubernetes_version):
            yield Problem(version_key, f"{self.kubernetes_version!r} must be MAJOR.MINOR, e.g. 1.30")
        elif not MIN_KUBERNETES <= self.kubernetes_minor <= MAX_KUBERNETES:
            low = ".".join(map(str, MIN_KUBERNETES))
            high = ".".join(map(str, MAX_KUBERNETES))
            yield Problem(version_key, f"{self.kubernetes_version} is not supported; allowed: {low} to {high}")
        block = {"yandex": self.yandex, "bare-metal": self.bare_metal}
        key = {"yandex": "yandex", "bare-metal": "bareMetal"}
        if block[self.kind] is None and self.kind == "yandex":
            yield Problem(join_path(path, "yandex"), "is required when kind is yandex (clusterId at least)")
        for other, value in block.items():
            if other != self.kind and value is not None:
                yield Problem(join_path(path, key[other]), f"must not be set when kind is {self.kind}")
