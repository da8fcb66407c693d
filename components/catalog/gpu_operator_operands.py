"""Where the GPU Operator's images come from, and which of its pods use the host network.

The operator does not run its operands from the chart: the chart renders a ``ClusterPolicy`` (and,
optionally, ``NVIDIADriver``) whose ``spec.<operand>`` blocks carry ``repository``/``image``/
``version`` and settings such as ``hostNetwork``, and the operator creates the DaemonSets from them.
The policy pack reads those blocks (in the release's values, and in the rendered objects offline),
so the rules for turning a block into an image reference, and a reference into a registry, are
written here once.

Sources:
- ``internal/image/image.go`` ``ImagePath`` of NVIDIA/gpu-operator (the same rule as
  ``api/nvidia/v1/clusterpolicy_types.go`` ``imagePath``): with ``repository`` and ``version`` both
  empty the ``image`` is taken as the whole reference; otherwise ``repository/image:version``, or
  ``repository/image@version`` when ``version`` starts with ``sha256:``.
- The image reference grammar of distribution/reference (``normalize.go``): the first path component
  is a registry host only if it contains ``.`` or ``:`` or is ``localhost``; otherwise the image
  comes from ``docker.io`` (``library/`` for a one-component name).
- Chart v26.7.0, rendered with ``helm template`` (``tests/preview/render/test_rendered.py`` renders the
  pinned chart and keeps both facts below true): every operand and the operator come from
  ``nvcr.io`` (``values.yaml``), node-feature-discovery from ``registry.k8s.io``
  (``charts/node-feature-discovery/values.yaml`` ``image.repository:
  registry.k8s.io/nfd/node-feature-discovery``). ``values.yaml`` sets ``hostNetwork: false`` for
  every operand (the ClusterPolicy template writes ``hostNetwork`` only when it is true) and the
  subchart sets ``hostNetwork: false`` for its master, worker, gc and topology updater, so no pod
  of the chart uses the host network.
- The namespace: ``components.catalog.names.GPU_OPERATOR_NAMESPACE`` (NVIDIA's documented one).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

CHART_IMAGE_REGISTRIES: Final[tuple[str, ...]] = ("nvcr.io", "registry.k8s.io")
"""The registries the pinned chart v26.7.0 pulls from, with its default values."""

HOST_NETWORK_OPERANDS: Final[Mapping[str, str]] = MappingProxyType({})
"""Pods of the pinned chart that use the host network (``namespace/name`` -> why): none in v26.7.0."""

DOCKER_HUB: Final = "docker.io"


def operand_image_reference(repository: str, image: str, version: str) -> str:
    """The reference the operator pulls for one ``repository``/``image``/``version`` block ("" if none).

    ``ImagePath`` of the operator: ``repository/image:version`` unless repository and version are
    both empty, then ``image`` itself. A chart-style block with a ``repository`` and no ``image``
    (node-feature-discovery's ``image.repository`` + ``image.tag``) names the whole image in
    ``repository``.
    """
    if not repository and not version:
        return image
    if not image:
        return f"{repository}:{version}" if version else repository
    separator = "@" if version.startswith("sha256:") else ":"
    return f"{repository}/{image}{separator}{version}"


def image_name(reference: str) -> str:
    """The fully qualified name of an image (registry and path, no tag or digest).

    ``nvcr.io/nvidia/driver:580.95.05`` -> ``nvcr.io/nvidia/driver``; ``busybox`` ->
    ``docker.io/library/busybox``.
    """
    name = reference.strip().partition("@")[0]
    head, slash, last = name.rpartition("/")
    name = f"{head}{slash}{last.partition(':')[0]}"
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"{DOCKER_HUB}/{name}" if rest else f"{DOCKER_HUB}/library/{name}"


def image_registry(reference: str) -> str:
    """The registry host an image is pulled from (``docker.io`` when the reference names none)."""
    return image_name(reference).partition("/")[0]


def registry_allowed(reference: str, allowed: tuple[str, ...] | list[str]) -> bool:
    """Whether ``reference`` comes from one of ``allowed``: a registry host, or a host with a path prefix.

    ``nvcr.io`` allows every ``nvcr.io/...`` image; ``nvcr.io/nvidia`` only those under ``nvcr.io/nvidia/``.
    """
    name = image_name(reference)
    for entry in allowed:
        prefix = entry.strip().rstrip("/")
        if prefix and (name == prefix or name.startswith(prefix + "/")):
            return True
    return False


# ----------------------------------------------------------------------------------------------
# ``daemonsets.rollingUpdate.maxUnavailable``: how the operator writes it into its operands.
#
# gpu-operator v26.7.0 ``controllers/object_controls.go`` ``applyUpdateStrategyConfig``: with the RollingUpdate
# strategy every operand DaemonSet but the driver's gets ``RollingUpdate{MaxUnavailable: ...}`` and no ``maxSurge``:
# a value ending in ``%`` is kept as a string, any other is ``strconv.ParseInt(value, 10, 32)`` (an error fails the
# reconcile). Kubernetes then applies its own rule to the DaemonSet (k8s.io/kubernetes ``pkg/apis/apps/validation``
# ValidateRollingUpdateDaemonSet: ``maxUnavailable`` an int >= 0 or ``[0-9]+%`` up to 100%, and "may not be 0 when
# `maxSurge` is 0"): a 0 in any spelling (``0``, ``"00"``, ``"0%"``) is refused on every operand, whose rolling
# update then never proceeds.

#: The source of ``operand_max_unavailable_problem``, for messages.
MAX_UNAVAILABLE_RULE: Final = (
    "gpu-operator applyUpdateStrategyConfig writes it with no maxSurge; Kubernetes ValidateRollingUpdateDaemonSet"
)


def operand_max_unavailable_problem(value: object) -> str | None:
    """Why ``value`` cannot be the operator's ``daemonsets.rollingUpdate.maxUnavailable``, or None."""
    allowed = f"a number of nodes >= 1 or a percentage from 1% to 100% ({MAX_UNAVAILABLE_RULE})"
    if isinstance(value, bool) or not isinstance(value, int | str):
        return f"{value!r} is not {allowed}"
    text = str(value)
    if text.endswith("%"):
        digits = text[:-1]
        if not (digits.isascii() and digits.isdigit()):
            return f"{text!r} is not {allowed}"
        number, high = int(digits), 100
    else:
        digits = text[1:] if text[:1] in "+-" else text
        if not (digits.isascii() and digits.isdigit()):
            return f"{text!r} is not {allowed}"
        number, high = int(text), 2**31 - 1
    if number == 0:
        return f"{text!r} is 0: no operand pod could ever be replaced; {allowed}"
    if not 0 < number <= high:
        return f"{text!r} is out of range; {allowed}"
    return None
