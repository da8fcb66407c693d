"""The pool labeller's decisions (``components.node_agent.agent.labeller.membership``): which labels each node gets
from its pool's selector, which it loses when it leaves, and the nodes it never writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.catalog.names import (
    GPU_MODEL_LABEL,
    GPU_NODE_LABEL,
    HOST_DRIVER_REMOVAL_ENABLED,
    HOST_DRIVER_REMOVAL_LABEL,
    NODE_GROUP_LABEL,
)
from components.catalog.node_agent import MIG_DESIRED_LABEL, STATE_LABEL, State
from components.node_agent.agent.labeller.membership import (
    LabelPatch,
    load_memberships,
    parse_memberships,
    patches,
    pool_of,
)
from tests.helpers import plan_raw, stack_raw

POOL_KEY = "node.example.com/pool"
TRAIN = {
    GPU_NODE_LABEL: "true",
    NODE_GROUP_LABEL: "train",
    GPU_MODEL_LABEL: "A100-80GB",
    HOST_DRIVER_REMOVAL_LABEL: HOST_DRIVER_REMOVAL_ENABLED,
}
INFER = {
    GPU_NODE_LABEL: "true",
    NODE_GROUP_LABEL: "infer",
    GPU_MODEL_LABEL: "H100-80GB",
    MIG_DESIRED_LABEL: "all-1g.10gb",
}
MEMBERSHIPS: dict[str, Any] = {
    "train": {"selector": {POOL_KEY: "train"}, "labels": TRAIN},
    "infer": {"selector": {POOL_KEY: "infer"}, "labels": INFER},
}
POOLS = parse_memberships(MEMBERSHIPS)


def node(name: str, version: str = "41", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version, "labels": dict(labels)}}


def labelled(name: str, pool_labels: dict[str, str], **labels: str) -> dict[str, Any]:
    return node(name, **{**pool_labels, **labels})


def only(found: list[LabelPatch]) -> LabelPatch:
    assert len(found) == 1, found
    return found[0]


def test_a_new_node_a_selector_picks_gets_every_label_of_its_pool() -> None:
    write = only(patches([node("gpu-7", "1234", **{POOL_KEY: "train", "kubernetes.io/hostname": "gpu-7"})], POOLS))
    assert write.node == "gpu-7" and write.pool == "train"
    assert write.patch == {"metadata": {"resourceVersion": "1234", "labels": TRAIN}}
    assert "set gpu-platform.io/gpu=true" in write.describe() and "pool train" in write.describe()


def test_a_node_already_labelled_gets_no_write() -> None:
    assert patches([labelled("gpu-7", TRAIN, **{POOL_KEY: "train"})], POOLS) == []


def test_only_the_labels_that_differ_are_written() -> None:
    drifted = labelled("gpu-7", {**TRAIN, GPU_MODEL_LABEL: "V100-32GB"}, **{POOL_KEY: "train"})
    del drifted["metadata"]["labels"][GPU_NODE_LABEL]
    write = only(patches([drifted], POOLS))
    assert write.labels == {GPU_MODEL_LABEL: "A100-80GB", GPU_NODE_LABEL: "true"}


@pytest.mark.parametrize(
    "other",
    [
        node("cp-1", **{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "cp-1"}),
        node("cpu-1", **{"kubernetes.io/hostname": "cpu-1", POOL_KEY: "cpu"}),
        node("bare", version="3"),
        {"metadata": {"name": "no-labels-at-all"}},
    ],
    ids=["control-plane", "cpu-pool", "unlabelled", "no-labels-key"],
)
def test_a_node_no_selector_picks_gets_nothing(other: dict[str, Any]) -> None:
    assert patches([other], POOLS) == []


def test_a_node_that_leaves_its_pool_loses_exactly_the_pools_labels() -> None:
    left = labelled("gpu-7", TRAIN, **{POOL_KEY: "retired", "team": "vision", STATE_LABEL: State.DONE.value})
    write = only(patches([left], POOLS))
    assert write.pool == ""
    assert write.labels == dict.fromkeys(sorted(TRAIN))  # each removed; "team", the state and the selector stay
    assert write.patch["metadata"]["resourceVersion"] == "41"
    assert "removed" in write.describe() and "no pool" in write.describe()


@pytest.mark.parametrize(
    "state", [State.CORDONED, State.EVICTING, State.MIG_APPLYING, State.PROVING, State.FAILED, State.WAITING_SLOT]
)
def test_a_node_the_agent_holds_keeps_its_labels_until_released(state: State) -> None:
    held = labelled("gpu-7", TRAIN, **{POOL_KEY: "retired", STATE_LABEL: state.value})
    assert patches([held], POOLS) == []
    unknown = labelled("gpu-8", TRAIN, **{POOL_KEY: "retired", STATE_LABEL: "a-state-of-a-newer-controller"})
    assert patches([unknown], POOLS) == []


@pytest.mark.parametrize("state", [State.IDLE, State.DONE, State.REFUSED])
def test_a_released_node_loses_them(state: State) -> None:
    released = labelled("gpu-7", TRAIN, **{POOL_KEY: "retired", STATE_LABEL: state.value})
    assert set(only(patches([released], POOLS)).labels) == set(TRAIN)


def test_a_held_node_gets_its_own_pools_missing_labels_but_never_moves() -> None:
    missing = labelled("gpu-7", TRAIN, **{POOL_KEY: "train", STATE_LABEL: State.EVICTING.value})
    del missing["metadata"]["labels"][GPU_MODEL_LABEL]
    assert only(patches([missing], POOLS)).labels == {GPU_MODEL_LABEL: "A100-80GB"}
    moved = labelled("gpu-8", TRAIN, **{POOL_KEY: "infer", STATE_LABEL: State.EVICTING.value})
    assert patches([moved], POOLS) == []


def test_a_node_that_moves_to_another_pool_takes_none_of_the_old_pools_labels_along() -> None:
    moved = labelled("gpu-7", TRAIN, **{POOL_KEY: "infer"})
    write = only(patches([moved], POOLS))
    assert write.pool == "infer"
    assert write.labels == {
        GPU_MODEL_LABEL: "H100-80GB",
        HOST_DRIVER_REMOVAL_LABEL: None,  # train's opt-in to the hand-over must not follow the node into infer
        MIG_DESIRED_LABEL: "all-1g.10gb",
        NODE_GROUP_LABEL: "infer",
    }


def test_of_two_pools_that_pick_a_node_the_first_by_name_wins() -> None:
    memberships = {
        "zeta": {"selector": {"rack": "r1"}, "labels": {NODE_GROUP_LABEL: "zeta", GPU_NODE_LABEL: "true"}},
        "alpha": {
            "selector": {"rack": "r1", "zone": "z1"},
            "labels": {NODE_GROUP_LABEL: "alpha", GPU_NODE_LABEL: "true"},
        },
    }
    pools = parse_memberships(memberships)
    assert [pool.name for pool in pools] == ["alpha", "zeta"]
    both = node("gpu-1", rack="r1", zone="z1")
    assert pool_of(pools, both["metadata"]["labels"]).name == "alpha"  # type: ignore[union-attr]
    assert only(patches([both], pools)).labels[NODE_GROUP_LABEL] == "alpha"
    assert only(patches([node("gpu-2", rack="r1", zone="z2")], pools)).labels[NODE_GROUP_LABEL] == "zeta"


def test_a_node_of_a_pool_this_stack_does_not_declare_is_never_written() -> None:
    theirs = labelled("gpu-7", {**TRAIN, NODE_GROUP_LABEL: "other-stack"}, **{POOL_KEY: "retired"})
    assert patches([theirs], POOLS) == []  # no removal
    picked = labelled("gpu-8", {**TRAIN, NODE_GROUP_LABEL: "other-stack"}, **{POOL_KEY: "train"})
    assert patches([picked], POOLS) == []  # and no take-over


def test_a_selector_key_is_neither_written_nor_removed() -> None:
    memberships = {"train": {"selector": {POOL_KEY: "train"}, "labels": {**TRAIN, POOL_KEY: "train-gpus"}}}
    pools = parse_memberships(memberships)
    assert POOL_KEY not in pools[0].labels
    assert POOL_KEY not in only(patches([node("gpu-1", **{POOL_KEY: "train"})], pools)).labels
    assert POOL_KEY not in only(patches([labelled("gpu-2", TRAIN, **{POOL_KEY: "old"})], pools)).labels


def test_a_node_being_deleted_is_left_alone_and_patches_come_by_node_name() -> None:
    going = node("gpu-0", **{POOL_KEY: "train"})
    going["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    found = patches([node("gpu-9", **{POOL_KEY: "infer"}), going, node("gpu-1", **{POOL_KEY: "train"})], POOLS)
    assert [item.node for item in found] == ["gpu-1", "gpu-9"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"train": {"selector": {}, "labels": TRAIN}}, "empty selector"),
        ({"train": {"selector": {POOL_KEY: 1}, "labels": TRAIN}}, "map of strings"),
        ({"train": {"selector": {POOL_KEY: "train"}, "labels": TRAIN, "extra": {}}}, "unknown keys extra"),
        ({"train": ["not", "a", "map"]}, "selector and labels"),
        (["not", "a", "map"], "map of pool names"),
    ],
)
def test_memberships_of_another_shape_are_refused(data: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_memberships(data)


def test_the_existing_stacks_memberships_read_back_from_the_file_the_config_map_mounts(tmp_path: Path) -> None:
    memberships = plan_raw(stack_raw("existing")).node_agent_memberships
    path = tmp_path / "memberships.json"
    path.write_text(json.dumps(memberships, sort_keys=True))
    pools = load_memberships(str(path))
    assert [pool.name for pool in pools] == ["infer", "train"]
    write = only(patches([node("dgx-3", **{POOL_KEY: "infer"})], pools))
    assert write.labels == memberships["infer"]["labels"]
    assert write.labels[MIG_DESIRED_LABEL] == "all-1g.10gb" and write.labels[NODE_GROUP_LABEL] == "infer"
