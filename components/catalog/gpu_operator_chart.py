"""Facts about the NVIDIA GPU Operator Helm chart that the rest of the program builds on.

Why this module exists: the chart is pinned, and several things the program writes into the
Helm values (the driver version, tolerations, resource names) must agree with what that exact
chart version ships. Each chart version is one ``ChartRelease`` entry, so supporting a new
chart version is one new entry here plus one in ``gpu_operator_contract.CONTRACTS``.

Sources (chart v26.7.0):
- values.yaml of NVIDIA/gpu-operator ``deployments/gpu-operator/values.yaml`` at tag v26.7.0
  (``dee6983b8``; byte-identical to main ``a22dbf671f2e``).
- Chart.yaml at the same tag: one dependency, ``node-feature-discovery`` 0.19.0
  (``condition: nfd.enabled``).
- ``.github/workflows/release-rc-assets.yaml``: ``helm package --version "${RELEASE_TAG}"
  --app-version "${RELEASE_TAG}"``, so both the chart version and the appVersion are the git tag
  *with* its leading ``v``.
- docs ``gpu-operator/getting-started.rst``: repo ``https://helm.ngc.nvidia.com/nvidia``, chart
  ``nvidia/gpu-operator``, installed with ``--version=v26.x.y``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

CHART_NAME = "gpu-operator"
CHART_REPO = "https://helm.ngc.nvidia.com/nvidia"

# GPU resource names advertised by the device plugin (docs gpu-operator-mig.rst): with the
# `single` MIG strategy (and without MIG) every GPU or slice is `nvidia.com/gpu`; with `mixed`
# each profile is its own resource, e.g. `nvidia.com/mig-1g.10gb`.
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# values.yaml `mig.strategy`; ClusterPolicy CRD enum none;single;mixed.
MIG_STRATEGIES: tuple[str, ...] = ("none", "single", "mixed")


def mig_resource_name(profile: str) -> str:
    """The extended resource a pod requests for one MIG slice under the `mixed` strategy.

    ``mig_resource_name("1g.10gb") == "nvidia.com/mig-1g.10gb"``. Under `single` the slices are
    advertised as plain ``nvidia.com/gpu`` instead, so callers must branch on the strategy.
    A resource name cannot hold "+": k8s-device-plugin (``internal/rm/rm.go``
    ``AddDefaultResourcesToConfig``) advertises ``1g.10gb+me`` as ``nvidia.com/mig-1g.10gb.me``.
    """
    cleaned = profile.strip()
    if not cleaned or cleaned.startswith(MIG_RESOURCE_PREFIX):
        raise ValueError(f"expected a bare MIG profile such as '1g.10gb', got {profile!r}")
    return MIG_RESOURCE_PREFIX + cleaned.replace("+", ".")


@dataclass(frozen=True)
class Toleration:
    """One Kubernetes toleration, kept immutable so a chart default cannot be edited in place."""

    key: str
    operator: str
    effect: str
    value: str | None = None

    def to_values(self) -> dict[str, str]:
        """The toleration as the Helm values / pod spec spell it (``value`` only when set)."""
        out = {"key": self.key, "operator": self.operator}
        if self.value is not None:
            out["value"] = self.value
        out["effect"] = self.effect
        return out


# values.yaml v26.7.0 `daemonsets.tolerations` (the only default: GPU nodes' taint).
GPU_TOLERATION = Toleration(key=GPU_RESOURCE, operator="Exists", effect="NoSchedule")
# values.yaml v26.7.0 `node-feature-discovery.worker.tolerations[0]` and `operator.tolerations[0]`.
CONTROL_PLANE_TOLERATION = Toleration(
    key="node-role.kubernetes.io/control-plane", operator="Equal", value="", effect="NoSchedule"
)


@dataclass(frozen=True)
class OperandImage:
    """A default container image of the chart, split the way values.yaml splits it.

    The driver image is special: the operator appends an OS suffix to ``version`` at run time
    (e.g. ``driver:580.105.08-ubuntu24.04``, gpu-operator issue #2150), so ``reference`` is the
    values-level tag, not the final pulled tag.
    """

    repository: str
    image: str
    version: str

    @property
    def reference(self) -> str:
        """``repository/image:version``."""
        return f"{self.repository}/{self.image}:{self.version}"


@dataclass(frozen=True)
class ChartRelease:
    """Everything the program needs to know about one published chart version."""

    version: str
    app_version: str
    nfd_subchart_version: str
    default_driver_version: str
    # values.yaml key path -> default image (only the blocks that carry an image).
    images: Mapping[str, OperandImage]
    # Top-level values blocks that configure one operand DaemonSet/Deployment each.
    operand_blocks: tuple[str, ...]
    daemonset_tolerations: tuple[Toleration, ...]
    nfd_worker_tolerations: tuple[Toleration, ...]


_NVIDIA = "nvcr.io/nvidia"
_CLOUD_NATIVE = "nvcr.io/nvidia/cloud-native"
_K8S = "nvcr.io/nvidia/k8s"

_V26_7_0 = ChartRelease(
    version="v26.7.0",
    # Chart.yaml in git says "main-latest"; the release workflow stamps the tag (see module doc).
    app_version="v26.7.0",
    nfd_subchart_version="0.19.0",  # Chart.yaml dependencies
    default_driver_version="595.91.07",  # values.yaml `driver.version`
    images=MappingProxyType(
        {
            # All from values.yaml v26.7.0. validator/operator/nodeStatusExporter leave `version`
            # commented out: "default is to use chart.AppVersion".
            "operator": OperandImage(_NVIDIA, "gpu-operator", "v26.7.0"),
            "validator": OperandImage(_NVIDIA, "gpu-operator", "v26.7.0"),
            "nodeStatusExporter": OperandImage(_NVIDIA, "gpu-operator", "v26.7.0"),
            "driver": OperandImage(_NVIDIA, "driver", "595.91.07"),
            "driver.manager": OperandImage(_CLOUD_NATIVE, "k8s-driver-manager", "v0.12.0"),
            "toolkit": OperandImage(_K8S, "container-toolkit", "v1.20.0"),
            "devicePlugin": OperandImage(_NVIDIA, "k8s-device-plugin", "v0.20.0"),
            "dcgm": OperandImage(_CLOUD_NATIVE, "dcgm", "4.6.0-1-ubuntu24.04"),
            "dcgmExporter": OperandImage(_K8S, "dcgm-exporter", "4.6.0-4.8.3-distroless"),
            "gfd": OperandImage(_NVIDIA, "k8s-device-plugin", "v0.20.0"),
            "migManager": OperandImage(_CLOUD_NATIVE, "k8s-mig-manager", "v0.15.0"),
            "gds": OperandImage(_CLOUD_NATIVE, "nvidia-fs", "2.29.4"),
            "gdrcopy": OperandImage(_CLOUD_NATIVE, "gdrdrv", "v2.6"),
            "vgpuManager.driverManager": OperandImage(_CLOUD_NATIVE, "k8s-driver-manager", "v0.12.0"),
            "vgpuDeviceManager": OperandImage(_CLOUD_NATIVE, "vgpu-device-manager", "v0.5.0"),
            "vfioManager": OperandImage(_CLOUD_NATIVE, "k8s-driver-manager", "v0.12.0"),
            "vfioManager.driverManager": OperandImage(_CLOUD_NATIVE, "k8s-driver-manager", "v0.12.0"),
            "sandboxDevicePlugin": OperandImage(_NVIDIA, "kubevirt-gpu-device-plugin", "v1.6.0"),
            "kataSandboxDevicePlugin": OperandImage(_CLOUD_NATIVE, "nvidia-sandbox-device-plugin", "v0.0.5"),
            "ccManager": OperandImage(_CLOUD_NATIVE, "k8s-cc-manager", "v0.4.3"),
            "draDriver": OperandImage(_NVIDIA, "dra-driver-nvidia-gpu", "v0.5.0"),
        }
    ),
    # values.yaml v26.7.0 top-level blocks, in file order, that each configure one operand.
    # `vgpuManager` has no default image (repository and version are ""): users build it.
    # `draDriver` is left out: it belongs to the experimental GPUCluster (DRA) stack.
    operand_blocks=(
        "validator",
        "driver",
        "toolkit",
        "devicePlugin",
        "dcgm",
        "dcgmExporter",
        "gfd",
        "migManager",
        "nodeStatusExporter",
        "gds",
        "gdrcopy",
        "vgpuManager",
        "vgpuDeviceManager",
        "vfioManager",
        "kataManager",
        "sandboxDevicePlugin",
        "kataSandboxDevicePlugin",
        "ccManager",
    ),
    daemonset_tolerations=(GPU_TOLERATION,),
    nfd_worker_tolerations=(CONTROL_PLANE_TOLERATION, GPU_TOLERATION),
)

RELEASES: Mapping[str, ChartRelease] = MappingProxyType({_V26_7_0.version: _V26_7_0})
SUPPORTED_CHART_VERSIONS: tuple[str, ...] = tuple(RELEASES)
DEFAULT_CHART_VERSION = "v26.7.0"

# The chart's default driver. R595 is expected not to support Volta (R580 is the last branch
# for V100), so V100 pools must pin an R580 driver instead of inheriting this default.
DEFAULT_DRIVER_VERSION = RELEASES[DEFAULT_CHART_VERSION].default_driver_version


def release(chart_version: str = DEFAULT_CHART_VERSION) -> ChartRelease:
    """The facts for one chart version; an unknown version names the supported ones."""
    try:
        return RELEASES[chart_version]
    except KeyError:
        raise ValueError(unsupported_version_message(chart_version)) from None


def unsupported_version_message(chart_version: str) -> str:
    """Explain an unsupported chart version, catching the common missing leading ``v``."""
    message = (
        f"{CHART_NAME} chart version {chart_version!r} is not supported; "
        f"supported: {', '.join(SUPPORTED_CHART_VERSIONS)}"
    )
    if not chart_version.startswith("v") and f"v{chart_version}" in RELEASES:
        message += f" (did you mean 'v{chart_version}'? the published chart versions keep the leading 'v')"
    return message


# What the operator reads when a ClusterPolicy operand block has no ``enabled`` key: the ``IsEnabled()``
# methods of NVIDIA/gpu-operator v26.7.0 ``api/nvidia/v1/clusterpolicy_types.go`` ("default is true/false
# if not specified by user"). It matters because the chart's ``templates/clusterpolicy.yaml`` writes
# ``sandboxDevicePlugin.enabled`` only when it is true (``{{- if .Values.sandboxDevicePlugin.enabled }}``)
# while values.yaml defaults it to true: values without the key deploy the plugin, ``enabled: false``
# renders a block without ``enabled``, which the operator reads as disabled.
OPERAND_ENABLED_WHEN_ABSENT: Mapping[str, bool] = MappingProxyType(
    {
        "driver": True,
        "toolkit": True,
        "devicePlugin": True,
        "dcgmExporter": True,
        "gfd": True,
        "migManager": True,
        "nodeStatusExporter": False,
        "vgpuManager": False,
        "vgpuDeviceManager": False,
        "vfioManager": False,
        "sandboxDevicePlugin": False,
        "kataSandboxDevicePlugin": False,
    }
)


def operand_enabled(cluster_policy_spec: Mapping[str, Any], block: str) -> bool:
    """Whether the operator deploys ``block`` for this rendered ClusterPolicy ``spec``, as it reads it."""
    settings = cluster_policy_spec.get(block) or {}
    enabled = settings.get("enabled")
    return OPERAND_ENABLED_WHEN_ABSENT[block] if enabled is None else bool(enabled)


# The operator's node-labelling controller (NVIDIA/gpu-operator v26.7.0
# ``controllers/nodelabeling_controller.go`` ``updateGPUStateLabels``; constants in
# ``controllers/state_manager.go``) writes ``nvidia.com/mig.config=all-disabled`` on every MIG-capable
# node without that label while mig-manager is enabled and ``migManager.config.default`` is
# ``all-disabled`` (the values.yaml default). It writes with a JSON merge patch (``client.MergeFrom``), so
# the API server records the label under the field manager named by the client's user agent: the
# binary ``/usr/bin/gpu-operator`` (``docker/Dockerfile``), i.e. ``gpu-operator``, operation Update. A
# server-side apply of another value by another manager then conflicts unless it is forced
# (``names.MIG_CONFIG_LABEL``, ``names.MIG_ALL_DISABLED``).
OPERATOR_FIELD_MANAGER = "gpu-operator"


def merge_tolerations(defaults: Iterable[Toleration], extra: Iterable[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The chart defaults followed by ``extra``, without duplicates.

    Helm replaces lists instead of merging them, so setting ``daemonsets.tolerations`` or
    ``node-feature-discovery.worker.tolerations`` silently drops the chart's own entries (for
    NFD that is the control-plane toleration). Callers that add tolerations go through here.
    """
    merged: list[dict[str, Any]] = [t.to_values() for t in defaults]
    for item in extra:
        candidate = dict(item)
        if candidate not in merged:
            merged.append(candidate)
    return merged


def daemonset_tolerations(
    extra: Iterable[Mapping[str, Any]] = (), chart_version: str = DEFAULT_CHART_VERSION
) -> list[dict[str, Any]]:
    """Value for ``daemonsets.tolerations``: the chart default plus ``extra``."""
    return merge_tolerations(release(chart_version).daemonset_tolerations, extra)


def nfd_worker_tolerations(
    extra: Iterable[Mapping[str, Any]] = (), chart_version: str = DEFAULT_CHART_VERSION
) -> list[dict[str, Any]]:
    """Value for ``node-feature-discovery.worker.tolerations``: chart defaults plus ``extra``."""
    return merge_tolerations(release(chart_version).nfd_worker_tolerations, extra)
