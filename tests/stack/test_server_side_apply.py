"""The prod stack's NodePatches replayed through a model of server-side apply, ``pulumi up`` after ``pulumi up``.

Each revision is the whole program run under mocks; its NodePatch inputs are applied as pulumi-kubernetes
applies them, in the engine's order (a patch that waits for the release after the operator has started,
and the patches the new program no longer declares deleted last: pulumi ``pkg/resource/deploy/step_generator.go``
``GenerateDeletes``, which the deployment executor calls once the program has registered everything). Between
two ``pulumi up``s the other writers of the Node act: kubelet, GPU feature discovery through NFD, the
operator's node labeler, mig-manager (``tests/stack/server_side_apply.py``, each with its source).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from components.catalog.gpu_operator_chart import OPERATOR_FIELD_MANAGER
from components.catalog.names import (
    FIELD_MANAGER,
    HELM_RELEASE_TYPE,
    LEGACY_MIG_FIELD_MANAGER,
    MIG_ALL_DISABLED,
    MIG_CONFIG_LABEL,
    NODE_PATCH_TYPE,
    PATCH_FIELD_MANAGER_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
)
from components.catalog.observability import MIG_CONFIG_STATE_LABEL
from preview.run.runner import ProgramRun, run_program
from tests.helpers import stack_raw
from tests.stack.server_side_apply import (
    APPLY,
    UPDATE,
    Cluster,
    Conflict,
    LiveObject,
    MigManager,
    NodePatchState,
    gpu_feature_discovery,
    label,
    operator_labels,
    patch_apply,
    patch_delete,
)

NODES = ("gpu-node-1", "gpu-node-2", "gpu-node-3")


# -- the model itself, on the behaviours the Kubernetes docs describe ------------------------------------


def test_an_unforced_apply_that_changes_a_field_another_manager_owns_conflicts_and_writes_nothing() -> None:
    node = LiveObject("n")
    node.update("gpu-operator", {label(MIG_CONFIG_LABEL): MIG_ALL_DISABLED})
    with pytest.raises(Conflict, match=r"metadata\.labels\.nvidia\.com/mig\.config \(owned by gpu-operator, Update\)"):
        node.apply("gpu-platform", {label(MIG_CONFIG_LABEL): "all-1g.10gb", label("a"): "1"}, force=False)
    assert node.labels() == {MIG_CONFIG_LABEL: MIG_ALL_DISABLED}, "a refused apply writes nothing"
    node.apply("gpu-platform", {label(MIG_CONFIG_LABEL): MIG_ALL_DISABLED}, force=False)
    assert node.owners(label(MIG_CONFIG_LABEL)) == {("gpu-operator", UPDATE), ("gpu-platform", APPLY)}, "shared"
    node.apply("gpu-platform", {label(MIG_CONFIG_LABEL): "all-1g.10gb"}, force=True)
    assert node.owners(label(MIG_CONFIG_LABEL)) == {("gpu-platform", APPLY)}, "forced: the sole manager"


def test_a_field_a_manager_stops_sending_is_removed_unless_another_manager_owns_it() -> None:
    node = LiveObject("n")
    node.apply("a", {label("only-a"): "1", label("shared"): "x"}, force=False)
    node.apply("b", {label("shared"): "x"}, force=False)
    node.apply("a", {}, force=False)  # pulumi-kubernetes' delete of a's patch (ssa.Relinquish)
    assert node.labels() == {"shared": "x"}
    assert node.owners(label("shared")) == {("b", APPLY)}


def test_an_update_never_conflicts_and_takes_what_it_changes() -> None:
    node = LiveObject("n")
    node.apply("a", {label("k"): "1"}, force=False)
    node.update("kubectl-label", {label("k"): "2"})
    assert node.owners(label("k")) == {("kubectl-label", UPDATE)}
    with pytest.raises(Conflict):
        node.apply("a", {label("k"): "1"}, force=False)


# -- replaying the program ---------------------------------------------------------------------------------


@dataclass
class Replay:
    """A cluster, the Pulumi state of its NodePatches, and mig-manager's memory, across ``pulumi up``s."""

    cluster: Cluster = field(default_factory=Cluster)
    state: dict[str, NodePatchState] = field(default_factory=dict)
    mig_manager: MigManager = field(default_factory=MigManager)
    #: Every node's labels after each step of the last ``pulumi up`` (step name -> node -> labels).
    steps: list[tuple[str, dict[str, dict[str, str]]]] = field(default_factory=list)

    def up(self, patches: list[tuple[str, dict[str, Any], bool]], defined: set[str]) -> None:
        """One ``pulumi up``: ``patches`` are (URN, metadata, waits for the release), in registration order."""
        self.steps = []
        for name in NODES:  # the hosts exist before the stack: kubelet registered them, GFD labelled them
            gpu_feature_discovery(self.cluster.node(name))
        operator_started = False
        applied: dict[str, NodePatchState] = {}
        for urn, metadata, after_release in patches:
            if after_release and not operator_started:  # the release is up: its node labeler has run
                self._others(defined)
                self._record("release")
                operator_started = True
            applied[urn] = patch_apply(self.cluster, urn, metadata)
            self._record(f"apply {urn.rsplit('::', 1)[-1]}")
        for urn in reversed(list(self.state)):
            if urn not in applied:
                patch_delete(self.cluster, self.state[urn])
                self._record(f"delete {urn.rsplit('::', 1)[-1]}")
        self.state = applied
        self._others(defined)

    def _others(self, defined: set[str]) -> None:
        for node in self.cluster.nodes.values():
            operator_labels(node)
            self.mig_manager.reconcile(node, defined)

    def _record(self, step: str) -> None:
        self.steps.append((step, {name: node.labels() for name, node in self.cluster.nodes.items()}))

    @property
    def conflicts(self) -> list[Conflict]:
        return [c for node in self.cluster.nodes.values() for c in node.conflicts]


def _patches(run: ProgramRun) -> list[tuple[str, dict[str, Any], bool]]:
    (release,) = run.by_type(HELM_RELEASE_TYPE)
    return [(r.urn, r.inputs["metadata"], release.urn in r.dependencies) for r in run.by_type(NODE_PATCH_TYPE)]


def _two_patch_shape(run: ProgramRun) -> list[tuple[str, dict[str, Any], bool]]:
    """The same labels as the program registered them before one patch per Node: ``gpu-nodes-<node>`` (manager
    gpu-platform, not forced, before the release) and ``mig-config-<node>`` (the MIG label, manager
    gpu-platform-mig, forced, after the release)."""
    shape = []
    for urn, metadata, _ in _patches(run):
        labels = {k: v for k, v in metadata["labels"].items() if k != MIG_CONFIG_LABEL}
        annotations = {k: v for k, v in metadata["annotations"].items() if k != PATCH_FORCE_ANNOTATION}
        shape.append((urn, {**metadata, "labels": labels, "annotations": annotations}, False))
    for urn, metadata, _ in _patches(run):
        if MIG_CONFIG_LABEL in metadata["labels"]:
            mig = {
                "name": metadata["name"],
                "labels": {MIG_CONFIG_LABEL: metadata["labels"][MIG_CONFIG_LABEL]},
                "annotations": {
                    PATCH_FIELD_MANAGER_ANNOTATION: LEGACY_MIG_FIELD_MANAGER,
                    PATCH_FORCE_ANNOTATION: "true",
                },
            }
            shape.append((urn.replace("gpu-nodes", "mig-config"), mig, True))
    return shape


def _defined(run: ProgramRun) -> set[str]:
    """The MIG config names the release's mig-parted ConfigMap defines."""
    (release,) = run.by_type(HELM_RELEASE_TYPE)
    text = release.inputs["values"]["migManager"]["config"]["data"]["config.yaml"]
    return set(yaml.safe_load(text)["mig-configs"])


def _revision(edit: Any = None) -> ProgramRun:
    raw = stack_raw("prod")
    if edit is not None:
        edit(raw)
    overrides = {"gpu-platform:bareMetal": raw["bareMetal"], "gpu-platform:mig": raw["mig"]}
    run = run_program("prod", overrides=overrides)
    assert run.config_error is None, run.config_error
    return run


def _relabel(raw: dict[str, Any]) -> None:
    raw["bareMetal"]["nodes"][0]["labels"] = {"team": "inference"}


def _change_layout(raw: dict[str, Any]) -> None:
    _relabel(raw)
    raw["bareMetal"]["nodes"][1]["mig"] = {"custom": {"3g.40gb": 2}}


def _remove_layout(raw: dict[str, Any]) -> None:
    _change_layout(raw)
    del raw["bareMetal"]["nodes"][2]["mig"]


@pytest.fixture(scope="module")
def revisions() -> dict[str, ProgramRun]:
    """prod as committed, and the stack file edited as a team would edit it, one ``pulumi up`` each."""
    return {
        "create": _revision(),
        "change labels": _revision(_relabel),
        "change a MIG layout": _revision(_change_layout),
        "remove a MIG layout": _revision(_remove_layout),
    }


def _sequence(revisions: dict[str, ProgramRun]) -> Iterator[tuple[str, ProgramRun]]:
    yield from revisions.items()
    yield "add the layout back, drop the label", revisions["create"]


def _wanted(run: ProgramRun) -> dict[str, dict[str, str]]:
    return {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in run.by_type(NODE_PATCH_TYPE)}


def test_prod_replays_every_kind_of_change_without_a_conflict(revisions: dict[str, ProgramRun]) -> None:
    """create; change labels; change, remove and add a MIG layout; the operator and mig-manager in between."""
    replay = Replay()
    for step, run in _sequence(revisions):
        replay.up(_patches(run), _defined(run))
        assert replay.conflicts == [], step
        for name, wanted in _wanted(run).items():
            live = replay.cluster.nodes[name].labels()
            assert {k: live.get(k) for k in wanted} == wanted, f"{step}: {name} lacks a label the program set"
            assert live[MIG_CONFIG_STATE_LABEL] == "success", f"{step}: mig-manager applied {name}'s config"
    node_1 = replay.cluster.nodes["gpu-node-1"]
    assert "team" not in node_1.labels(), "a label dropped from the config is removed from the node"
    assert node_1.owners(label(MIG_CONFIG_LABEL)) == {(FIELD_MANAGER, APPLY)}, "taken over from the operator"
    assert {m for n in replay.cluster.nodes.values() for m, _ in n.managed} >= {OPERATOR_FIELD_MANAGER, "kubelet"}


def test_the_mig_label_lands_after_the_operator_labelled_the_node_and_wins(revisions: dict[str, ProgramRun]) -> None:
    """On a fresh cluster the operator writes all-disabled first (the patch waits for the release): only the
    forced apply takes the label over; unforced it is the conflict the issue reported."""
    replay = Replay()
    replay.up(_patches(revisions["create"]), _defined(revisions["create"]))
    step, at_release = replay.steps[0]
    assert step == "release" and sorted(at_release) == list(NODES)
    assert all(labels[MIG_CONFIG_LABEL] == MIG_ALL_DISABLED for labels in at_release.values())
    assert replay.conflicts == []
    unforced = [
        (urn, {**md, "annotations": {k: v for k, v in md["annotations"].items() if k != PATCH_FORCE_ANNOTATION}}, after)
        for urn, md, after in _patches(revisions["create"])
    ]
    with pytest.raises(Conflict, match="owned by gpu-operator, Update"):
        Replay().up(unforced, _defined(revisions["create"]))


def test_the_two_patch_shape_conflicts_on_the_next_label_change(revisions: dict[str, ProgramRun]) -> None:
    """The model fails where the issue says the program failed: both patches send the field-manager
    annotation, the forced MIG patch owns it last, and the next unforced platform-label change conflicts."""
    replay = Replay()
    replay.up(_two_patch_shape(revisions["create"]), _defined(revisions["create"]))
    assert replay.conflicts == []
    with pytest.raises(Conflict, match=r"pulumi\.com/patchFieldManager \(owned by gpu-platform-mig, Apply\)"):
        replay.up(_two_patch_shape(revisions["change labels"]), _defined(revisions["change labels"]))


def test_the_up_that_merges_the_two_patches_keeps_every_label_and_reconfigures_nothing(
    revisions: dict[str, ProgramRun],
) -> None:
    """``gpu-nodes-<node>`` keeps its URN (an update in place); ``mig-config-<node>`` is deleted last, and its
    delete releases only what no other manager holds: the MIG label stays, mig-manager sees no change."""
    run = revisions["create"]
    replay = Replay()
    replay.up(_two_patch_shape(run), _defined(run))
    before = {name: node.labels() for name, node in replay.cluster.nodes.items()}
    seen = dict(replay.mig_manager.last_seen)
    assert {urn for urn, _, _ in _patches(run)} < set(replay.state), "the merged patches keep their URNs"
    replay.up(_patches(run), _defined(run))
    assert replay.conflicts == []
    assert [step for step, _ in replay.steps if step.startswith("delete")] == [
        f"delete mig-config-{name}" for name in reversed(NODES)
    ]
    for step, labels in replay.steps:
        for name in NODES:
            assert labels[name][MIG_CONFIG_LABEL] == before[name][MIG_CONFIG_LABEL], f"{step}: {name}'s MIG label moved"
    assert replay.mig_manager.last_seen == seen, "no MIG reconfiguration"
    for name, node in replay.cluster.nodes.items():
        assert node.labels() == before[name]
        assert (LEGACY_MIG_FIELD_MANAGER, APPLY) not in node.managed, f"{name}: the old manager released everything"
        assert node.annotations()[PATCH_FIELD_MANAGER_ANNOTATION] == FIELD_MANAGER
    replay.up(_patches(revisions["change labels"]), _defined(revisions["change labels"]))
    assert replay.conflicts == [], "the next label change applies"
    assert replay.cluster.nodes["gpu-node-1"].labels()["team"] == "inference"


def test_each_node_has_one_patch_and_one_preview_manifest(revisions: dict[str, ProgramRun]) -> None:
    from preview.run.files import preview_files

    run = revisions["create"]
    names = [r.inputs["metadata"]["name"] for r in run.by_type(NODE_PATCH_TYPE)]
    assert sorted(names) == list(NODES)
    files = preview_files(run)
    for name in NODES:
        manifest = yaml.safe_load(files[f"manifests/node-{name}.yaml"])
        assert manifest["metadata"]["labels"] == copy.deepcopy(_wanted(run)[name])


def _agent_on(raw: dict[str, Any]) -> None:
    raw["nodeAgent"]["migLayout"] = True


def _agent_revision() -> ProgramRun:
    raw = stack_raw("prod")
    _agent_on(raw)
    run = run_program("prod", overrides={"gpu-platform:nodeAgent": raw["nodeAgent"]})
    assert run.config_error is None, run.config_error
    return run


def test_switching_the_agent_on_drops_the_mig_label_unless_a_second_owner_holds_it(
    revisions: dict[str, ProgramRun],
) -> None:
    """docs/operations.md, "Turning nodeAgent.migLayout on": without the hand-over the label goes, the operator
    writes all-disabled and mig-manager re-cuts every node; with an Apply of the current value by another
    manager first, the label stays and mig-manager does nothing."""
    create, agent = revisions["create"], _agent_revision()
    mig_nodes = [n for n, labels in _wanted(create).items() if MIG_CONFIG_LABEL in labels]
    assert mig_nodes and all(MIG_CONFIG_LABEL not in _wanted(agent)[n] for n in mig_nodes)

    unprepared = Replay()
    unprepared.up(_patches(create), _defined(create))
    before = {n: unprepared.cluster.nodes[n].labels()[MIG_CONFIG_LABEL] for n in mig_nodes}
    unprepared.up(_patches(agent), _defined(agent))
    assert {n: unprepared.cluster.nodes[n].labels()[MIG_CONFIG_LABEL] for n in mig_nodes} == dict.fromkeys(
        mig_nodes, MIG_ALL_DISABLED
    )
    assert all(unprepared.mig_manager.last_seen[n] == MIG_ALL_DISABLED for n in mig_nodes)

    prepared = Replay()
    prepared.up(_patches(create), _defined(create))
    for name in mig_nodes:
        prepared.cluster.nodes[name].apply("gpu-platform-handover", {label(MIG_CONFIG_LABEL): before[name]}, False)
    prepared.up(_patches(agent), _defined(agent))
    assert prepared.conflicts == []
    assert {n: prepared.cluster.nodes[n].labels()[MIG_CONFIG_LABEL] for n in mig_nodes} == before
    assert {n: prepared.mig_manager.last_seen[n] for n in mig_nodes} == before
