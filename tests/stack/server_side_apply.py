"""A model of server-side apply on one Node, and of the actors that write its labels, for replaying ``pulumi up``s.

No API server runs here, and a fake that does not track managed fields cannot show a conflict, so this
imitates the documented semantics the program relies on. Source: Kubernetes docs, "Server-Side Apply"
(kubernetes.io/docs/reference/using-api/server-side-apply/), and the code behind it,
sigs.k8s.io/structured-merge-diff ``merge/update.go`` (``Updater.Apply``, ``Updater.Update``):

- **Field management.** Every field of the object belongs to the managers that last set it; a manager is
  a name and an operation (``Apply`` or ``Update``): one ``managedFields`` entry each.
- **Apply.** The applied configuration is the manager's whole intent: after an Apply its set is exactly
  the fields it sent. A field it sent before and no longer sends is released, and removed from the object
  when no other manager owns it ("If the field is not owned by any other field managers, it is either
  deleted from the live object or reset to its default value").
- **Conflicts.** An Apply that *changes* a field another manager owns (any other entry, Apply or Update)
  is a conflict, and nothing is written. Sending the value the field already has is no conflict: the
  managers then share it. With ``force`` the applier takes every conflicting field and the others lose it.
- **Update** (a JSON merge patch, a PUT) never conflicts: the fields it changes move to its manager.
  A client that names no field manager gets its user agent's first segment (``kubectl-label``,
  ``gpu-operator``, ``kubelet``).

The Pulumi side, pulumi-kubernetes ``provider/pkg/await/await.go`` (read at the 4.x branch head after
v4.32.0; the pinned 4.34.2 is on that branch): a Patch resource's create and update are one Apply of the
whole input object (``yaml.Marshal(c.Inputs.Object)``, so ``pulumi.com/*`` annotations are fields of the
Node too), as the field manager the ``pulumi.com/patchFieldManager`` annotation names
(``provider.go`` ``fieldManagerName``), forced when ``pulumi.com/patchForce`` is ``"true"``
(``patchForce``); its delete is ``ssa.Relinquish`` (``provider/pkg/ssa/``): an unforced Apply of an
object that carries nothing but its identity, as the manager the state recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog.gpu_operator_chart import OPERATOR_FIELD_MANAGER
from components.catalog.names import MIG_ALL_DISABLED, MIG_CONFIG_LABEL, PATCH_FIELD_MANAGER_ANNOTATION
from components.catalog.names import PATCH_FORCE_ANNOTATION as FORCE
from components.catalog.observability import MIG_CONFIG_STATE_LABEL

Path = tuple[str, ...]  #: ("metadata", "labels", <key>) or ("metadata", "annotations", <key>)
Manager = tuple[str, str]  #: (name, "Apply" | "Update")
APPLY, UPDATE = "Apply", "Update"


class Conflict(Exception):
    """The API server's 409 for an Apply: each field, the manager that owns it, and the values."""

    def __init__(self, applier: str, fields: list[tuple[Path, Manager]]) -> None:
        self.fields = fields
        shown = ", ".join(f"{'.'.join(path)} (owned by {owner[0]}, {owner[1]})" for path, owner in fields)
        super().__init__(f"Apply failed with {len(fields)} conflict(s) for {applier}: {shown}")


@dataclass
class LiveObject:
    """One object's values and ``managedFields``."""

    name: str
    values: dict[Path, str] = field(default_factory=dict)
    managed: dict[Manager, set[Path]] = field(default_factory=dict)
    applies: int = 0
    conflicts: list[Conflict] = field(default_factory=list)

    def owners(self, path: Path) -> set[Manager]:
        """Every managedFields entry that holds ``path``."""
        return {manager for manager, fields in self.managed.items() if path in fields}

    def apply(self, manager: str, applied: Mapping[Path, str], force: bool) -> None:
        """A server-side apply of ``applied`` (the manager's whole intent) as ``manager``."""
        me: Manager = (manager, APPLY)
        conflicting = [
            (path, owner)
            for path, value in sorted(applied.items())
            if path in self.values and self.values[path] != value
            for owner in sorted(self.owners(path) - {me})
        ]
        if conflicting and not force:
            error = Conflict(manager, conflicting)
            self.conflicts.append(error)
            raise error
        for path, owner in conflicting:  # forced: the applier becomes the sole manager of these
            self.managed[owner].discard(path)
        released = self.managed.get(me, set()) - set(applied)
        self.managed[me] = set(applied)
        self.values.update(applied)
        for path in released:
            if not self.owners(path):
                self.values.pop(path, None)
        self._drop_empty()
        self.applies += 1

    def update(self, manager: str, changes: Mapping[Path, str | None]) -> None:
        """A non-apply write (merge patch) as ``manager``: never a conflict; what it changes becomes its own.

        ``None`` removes the field (a merge patch's ``null``), from every manager.
        """
        me: Manager = (manager, UPDATE)
        for path, value in changes.items():
            if self.values.get(path) == value:
                continue  # unchanged: ownership stays where it was
            for fields in self.managed.values():
                fields.discard(path)
            if value is None:
                self.values.pop(path, None)
            else:
                self.values[path] = value
                self.managed.setdefault(me, set()).add(path)
        self._drop_empty()

    def _drop_empty(self) -> None:
        for manager in [m for m, fields in self.managed.items() if not fields]:
            del self.managed[manager]

    def labels(self) -> dict[str, str]:
        """The live labels."""
        return {path[2]: value for path, value in sorted(self.values.items()) if path[:2] == ("metadata", "labels")}

    def annotations(self) -> dict[str, str]:
        """The live annotations."""
        return {path[2]: v for path, v in sorted(self.values.items()) if path[:2] == ("metadata", "annotations")}


def label(key: str) -> Path:
    """The field path of a label."""
    return ("metadata", "labels", key)


def _fields(metadata: Mapping[str, Any]) -> dict[Path, str]:
    """The fields an applied NodePatch's ``metadata`` sets (its name is the object's identity, not a field)."""
    found: dict[Path, str] = {}
    for kind in ("labels", "annotations"):
        for key, value in (metadata.get(kind) or {}).items():
            found[("metadata", kind, key)] = str(value)
    return found


@dataclass
class Cluster:
    """The Nodes of one cluster, created by kubelet on first use."""

    nodes: dict[str, LiveObject] = field(default_factory=dict)

    def node(self, name: str) -> LiveObject:
        """The Node ``name``; kubelet registers it first (labels below) when it does not exist yet."""
        if name not in self.nodes:
            self.nodes[name] = LiveObject(name)
            kubelet_registers(self.nodes[name])
        return self.nodes[name]


@dataclass(frozen=True)
class NodePatchState:
    """What the Pulumi state keeps of one NodePatch: its URN, its Node, its field manager."""

    urn: str
    node: str
    manager: str


def patch_apply(cluster: Cluster, urn: str, metadata: Mapping[str, Any]) -> NodePatchState:
    """A NodePatch's create or update: one Apply of its whole inputs (pulumi-kubernetes, above)."""
    annotations = metadata.get("annotations") or {}
    manager = annotations.get(PATCH_FIELD_MANAGER_ANNOTATION)
    assert manager, f"{urn}: a NodePatch without {PATCH_FIELD_MANAGER_ANNOTATION} gets a random manager per stack"
    cluster.node(metadata["name"]).apply(manager, _fields(metadata), annotations.get(FORCE) == "true")
    return NodePatchState(urn, str(metadata["name"]), str(manager))


def patch_delete(cluster: Cluster, state: NodePatchState) -> None:
    """A NodePatch's delete: ``ssa.Relinquish``, an unforced Apply of nothing as the recorded manager."""
    cluster.node(state.node).apply(state.manager, {}, force=False)


# -- the other writers of a GPU Node's labels, each an Update under its own manager ----------------------

#: kubelet's own labels at registration (kubernetes ``pkg/kubelet/kubelet_node_status.go`` ``initialNode``:
#: hostname, OS and architecture), written as manager ``kubelet`` (its user agent).
KUBELET_MANAGER = "kubelet"


def kubelet_registers(node: LiveObject) -> None:
    """kubelet creates the Node with its well-known labels."""
    node.update(
        KUBELET_MANAGER,
        {
            label("kubernetes.io/hostname"): node.name,
            label("kubernetes.io/os"): "linux",
            label("kubernetes.io/arch"): "amd64",
        },
    )


#: GPU feature discovery's labels reach the Node through node-feature-discovery's master, which writes them
#: (kubernetes-sigs/node-feature-discovery ``pkg/nfd-master/nfd-master.go`` ``updateNodeObject``: a JSON
#: patch, manager ``nfd-master``); the keys are GFD's (NVIDIA/k8s-device-plugin v0.20.0 (the chart's ``gfd``)
#: ``internal/lm``: ``nvidia.com/gpu.product``, ``nvidia.com/gpu.count``, ``nvidia.com/mig.capable``).
NFD_MANAGER = "nfd-master"


def gpu_feature_discovery(node: LiveObject) -> None:
    """GFD (through nfd-master) labels an H100 node; the operator reads ``nvidia.com/gpu.present`` from NFD."""
    node.update(
        NFD_MANAGER,
        {
            label("nvidia.com/gpu.present"): "true",
            label("nvidia.com/gpu.product"): "NVIDIA-H100-80GB-HBM3",
            label("nvidia.com/gpu.count"): "8",
            label("nvidia.com/mig.capable"): "true",
        },
    )


def operator_labels(node: LiveObject) -> None:
    """The GPU Operator's node labeler on a GPU node (gpu-operator v26.7.0 ``controllers/state_manager.go``
    ``labelGPUNodes``, ``controllers/nodelabeling_controller.go`` ``updateGPUStateLabels``; the facts in
    ``catalog.gpu_operator_chart.OPERATOR_FIELD_MANAGER``): the operand deploy labels, and
    ``nvidia.com/mig.config=all-disabled`` on a MIG-capable node that carries no MIG config label."""
    labels = node.labels()
    if labels.get("nvidia.com/gpu.present") != "true":
        return
    changes: dict[Path, str | None] = {
        label(f"nvidia.com/gpu.deploy.{operand}"): "true"
        for operand in ("device-plugin", "gpu-feature-discovery", "mig-manager", "dcgm-exporter")
        if f"nvidia.com/gpu.deploy.{operand}" not in labels
    }
    if labels.get("nvidia.com/mig.capable") == "true" and MIG_CONFIG_LABEL not in labels:
        changes[label(MIG_CONFIG_LABEL)] = MIG_ALL_DISABLED
    node.update(OPERATOR_FIELD_MANAGER, changes)


#: mig-manager (NVIDIA/mig-parted v0.15.0, the chart's ``migManager.version``): it watches the Node's
#: ``nvidia.com/mig.config`` (``cmd/nvidia-mig-manager/main.go``) and reports on ``nvidia.com/mig.config.state``
#: (``pkg/mig/reconfigure/api.go`` ``MIGConfigStateLabel``: pending, then success or failed), pausing the GPU
#: operands through their deploy labels meanwhile. Its client names no field manager: manager
#: ``nvidia-mig-manager``, its binary's name (the user agent).
MIG_MANAGER = "nvidia-mig-manager"


@dataclass
class MigManager:
    """mig-manager on one node: acts when the label it last saw changed."""

    last_seen: dict[str, str] = field(default_factory=dict)

    def reconcile(self, node: LiveObject, defined: Iterable[str]) -> None:
        """Apply the labelled config if it changed: ``success`` when the ConfigMap defines it, else ``failed``."""
        wanted = node.labels().get(MIG_CONFIG_LABEL, "")
        if not wanted or self.last_seen.get(node.name) == wanted:
            return
        self.last_seen[node.name] = wanted
        paused = label("nvidia.com/gpu.deploy.device-plugin")
        node.update(MIG_MANAGER, {label(MIG_CONFIG_STATE_LABEL): "pending", paused: "paused-for-mig-change"})
        state = "success" if wanted in set(defined) else "failed"
        node.update(MIG_MANAGER, {label(MIG_CONFIG_STATE_LABEL): state, paused: "true"})
