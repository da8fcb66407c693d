"""Placement: accepted layouts really fit, refused ones really do not, and the refusal says why."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from itertools import product
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.catalog.mig import (
    MigLayoutError,
    Placement,
    UnknownMigProfile,
    is_placeable,
    mig_gpu,
    mig_models,
    place,
    valid_layouts,
)
from tests.properties import examples

ROOT = Path(__file__).resolve().parents[2]
SEVEN_SLICE_MODELS = [m for m in mig_models() if mig_gpu(m).geometry.compute_slices == 7]


def brute_force_placeable(model: str, layout: Mapping[str, int]) -> bool:
    """Independent check: every rule, then every combination of start positions (no clever ordering)."""
    gpu = mig_gpu(model)
    profiles = {p.name: p for p in gpu.profiles}
    counts = {name: n for name, n in layout.items() if n}
    if sum(counts.values()) > gpu.geometry.max_gpu_instances:
        return False
    if sum(n for name, n in counts.items() if name.endswith("+me")) > 1:
        return False
    if any(n > profiles[name].max_instances for name, n in counts.items()):
        return False
    if sum(profiles[name].compute_slices * n for name, n in counts.items()) > gpu.geometry.compute_slices:
        return False
    instances = [profiles[name] for name, n in counts.items() for _ in range(n)]

    def fits(index: int, used: frozenset[int]) -> bool:
        if index == len(instances):
            return True
        p = instances[index]
        for start in p.starts:
            cells = frozenset(range(start, start + p.memory_slices))
            if max(cells) < gpu.geometry.memory_slices and not cells & used and fits(index + 1, used | cells):
                return True
        return False

    return fits(0, frozenset())


def check_placement(model: str, layout: Mapping[str, int], placement: Placement) -> None:
    """Verify a returned placement from the profile facts alone."""
    gpu = mig_gpu(model)
    profiles = {p.name: p for p in gpu.profiles}
    used: set[int] = set()
    for instance in placement.instances:
        p = profiles[instance.profile]
        assert instance.start in p.starts
        cells = set(range(instance.start, instance.start + p.memory_slices))
        assert max(cells) < gpu.geometry.memory_slices
        assert not cells & used, f"{instance} overlaps"
        used |= cells
    assert placement.compute_slices <= gpu.geometry.compute_slices
    assert len(placement.instances) <= gpu.geometry.max_gpu_instances
    assert dict(placement.layout) == {name: n for name, n in layout.items() if n}
    assert list(placement.instances) == sorted(placement.instances, key=lambda i: i.start)


def by_shape(model: str, shape: str) -> str:
    """'3g' -> the model's 3-compute-slice profile; '1g' is the 1-memory-slice one without +me."""
    compute = int(shape[0])
    return next(
        p.name
        for p in mig_gpu(model).profiles
        if p.compute_slices == compute and not p.media_extensions and (compute != 1 or p.memory_slices == 1)
    )


def shape_layout(model: str, shapes: list[str]) -> dict[str, int]:
    layout: dict[str, int] = {}
    for shape in shapes:
        name = by_shape(model, shape)
        layout[name] = layout.get(name, 0) + 1
    return layout


# Research notes section 4, "Valid combinations (derived from the placement table)".
DOCUMENTED_VALID = [
    ["7g"],
    ["4g", "3g"],
    ["4g", "2g", "1g"],
    ["4g", "1g", "1g", "1g"],
    ["3g", "3g"],
    ["3g", "2g", "2g"],
    ["3g", "2g", "1g", "1g"],
    ["3g", "1g", "1g", "1g", "1g"],
    ["2g", "2g", "2g", "1g"],
    ["2g", "2g", "1g", "1g", "1g"],
    ["1g"] * 7,
]
DOCUMENTED_INVALID = [["4g", "4g"], ["3g", "3g", "1g"], ["2g"] * 4, ["1g"] * 8]


@pytest.mark.parametrize("model", SEVEN_SLICE_MODELS)
@pytest.mark.parametrize("shapes", DOCUMENTED_VALID, ids="+".join)
def test_documented_valid_combinations_are_placed(model, shapes):
    layout = shape_layout(model, shapes)
    check_placement(model, layout, place(model, layout))


@pytest.mark.parametrize("model", SEVEN_SLICE_MODELS)
@pytest.mark.parametrize("shapes", DOCUMENTED_INVALID, ids="+".join)
def test_documented_invalid_combinations_are_refused(model, shapes):
    with pytest.raises(MigLayoutError, match=f"^{re.escape(model)}: "):
        place(model, shape_layout(model, shapes))


def test_4g_plus_3g_fills_an_a100_80gb_exactly():
    placement = place("A100-80GB", {"4g.40gb": 1, "3g.40gb": 1})
    assert placement.pairs == (("4g.40gb", 0), ("3g.40gb", 4))
    assert (placement.compute_slices, placement.memory_slices) == (7, 8)
    assert placement.describe() == "4g.40gb@0-3 3g.40gb@4-7"


def test_3g_with_four_1g_must_sit_at_memory_slice_4():
    # A 1-slice GI cannot start at memory slice 7, so the 3g must take 4-7 and the 1g's 0-3.
    placement = place("H100-80GB", {"3g.40gb": 1, "1g.10gb": 4})
    assert ("3g.40gb", 4) in placement.pairs
    assert sorted(s for p, s in placement.pairs if p == "1g.10gb") == [0, 1, 2, 3]


def test_too_many_instances_is_refused_with_the_limit():
    with pytest.raises(MigLayoutError, match=r"^H100-80GB: 8 GPU instances requested; at most 7$"):
        place("H100-80GB", {"1g.10gb": 7, "1g.20gb": 1})
    with pytest.raises(MigLayoutError, match=r"^A30-24GB: 5 GPU instances requested; at most 4$"):
        place("A30-24GB", {"1g.6gb": 4, "1g.6gb+me": 1})


def test_refusal_names_the_profile_its_starts_and_what_blocks_them():
    with pytest.raises(MigLayoutError) as error:
        place("H100-80GB", {"4g.40gb": 1, "3g.40gb": 2})
    message = str(error.value)
    assert message.startswith(
        "H100-80GB: no free placement left for 3g.40gb (allowed starts [0, 4]; "
        "memory slices 0-3 already used by 4g.40gb, memory slices 4-7 already used by 3g.40gb)"
    )
    assert "needs 10 of 7 compute slices and 12 of 8 memory slices" in message


def test_memory_overflow_is_explained_when_compute_still_fits():
    with pytest.raises(MigLayoutError) as error:
        place("H100-80GB", {"3g.40gb": 2, "1g.10gb": 1})
    assert "no free placement left for 1g.10gb" in str(error.value)
    assert "needs 9 of 8 memory slices" in str(error.value)


def test_only_one_media_extension_instance_per_gpu():
    with pytest.raises(MigLayoutError, match=r"at most one \+me"):
        place("A30-24GB", {"1g.6gb+me": 1, "2g.12gb+me": 1})
    check_placement("A30-24GB", {"2g.12gb+me": 1, "1g.6gb": 2}, place("A30-24GB", {"2g.12gb+me": 1, "1g.6gb": 2}))


def test_per_profile_maximum_is_refused_before_searching():
    with pytest.raises(MigLayoutError, match=r"^H100-80GB: 4 x 2g\.20gb requested; at most 3 per GPU$"):
        place("H100-80GB", {"2g.20gb": 4})


def test_unknown_profile_is_refused_with_the_allowed_names():
    with pytest.raises(UnknownMigProfile) as error:
        place("A100-80GB", {"4g.20gb": 1})
    assert isinstance(error.value, MigLayoutError)
    assert "A100-80GB: unknown MIG profile '4g.20gb'" in str(error.value)
    assert "4g.40gb" in str(error.value)
    with pytest.raises(UnknownMigProfile):
        is_placeable("A100-80GB", {"4g.20gb": 1})  # bad input is not a quiet "no"


@pytest.mark.parametrize("count", [-1, 1.0, True, "2"])
def test_counts_must_be_non_negative_integers(count):
    with pytest.raises(MigLayoutError, match=r"count for 1g\.10gb"):
        place("H100-80GB", {"1g.10gb": count})


@pytest.mark.parametrize("count", [1.0, True])
def test_a_remembered_placement_does_not_let_an_equal_non_integer_count_through(count):
    # 1.0 and True are equal to 1 as dictionary keys: placing {1g.10gb: 1} first must not make them valid.
    assert place("H100-80GB", {"1g.10gb": 1}).layout == {"1g.10gb": 1}
    with pytest.raises(MigLayoutError, match=r"count for 1g\.10gb must be an integer"):
        place("H100-80GB", {"1g.10gb": count})


def test_zero_counts_are_ignored_and_an_empty_layout_is_mig_without_instances():
    assert place("H100-80GB", {"1g.10gb": 0, "7g.80gb": 1}).pairs == (("7g.80gb", 0),)
    assert place("H100-80GB", {}).instances == ()
    assert place("H100-80GB", {}).describe() == "(no GPU instances)"


def test_a30_balanced_fits_and_full_gpu_leaves_no_room():
    check_placement("A30-24GB", {"1g.6gb": 2, "2g.12gb": 1}, place("A30-24GB", {"1g.6gb": 2, "2g.12gb": 1}))
    assert not is_placeable("A30-24GB", {"4g.24gb": 1, "1g.6gb": 1})


@pytest.mark.parametrize("model", mig_models())
def test_valid_layouts_are_exactly_what_brute_force_accepts(model):
    profiles = mig_gpu(model).profiles
    brute = set()
    for counts in product(*(range(p.max_instances + 1) for p in profiles)):
        layout = {p.name: n for p, n in zip(profiles, counts, strict=True) if n}
        if layout and brute_force_placeable(model, layout):
            brute.add(frozenset(layout.items()))
    assert {frozenset(layout.items()) for layout in valid_layouts(model)} == brute
    assert len(brute) == (19 if model == "A30-24GB" else 127)


@st.composite
def layouts(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    """A model and up to 8 GIs, some beyond the per-profile maxima, so both answers occur."""
    model = draw(st.sampled_from(mig_models()))
    profiles = mig_gpu(model).profiles
    layout: dict[str, int] = {}
    for _ in range(draw(st.integers(0, 8))):
        name = draw(st.sampled_from(profiles)).name
        layout[name] = layout.get(name, 0) + 1
    return model, layout


@settings(max_examples=examples(400))
@given(layouts())
def test_place_agrees_with_brute_force_and_its_placements_check_out(case):
    model, layout = case
    expected = brute_force_placeable(model, layout)
    try:
        placement = place(model, layout)
    except MigLayoutError as error:
        assert not expected, f"refused a placeable layout: {error}"
        assert str(error).startswith(f"{model}: ")
    else:
        assert expected
        check_placement(model, layout, placement)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.mig", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_check_prints_the_placement():
    result = run_cli("check", "--model", "A100-80GB", "4g.40gb=1", "3g.40gb=1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "A100-80GB: fits: 4g.40gb@0-3 3g.40gb@4-7\n"


def test_cli_check_refusal_is_one_line_with_exit_1():
    result = run_cli("check", "--model", "A100-80GB", "4g.40gb=1", "3g.40gb=2")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: A100-80GB: no free placement left for 3g.40gb")


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--model", "A100-80GB", "4g.20gb=1"),  # unknown profile
        ("check", "--model", "A100-80GB", "4g.40gb"),  # no count
        ("check", "--model", "A100-80GB", "4g.40gb=-1"),
        ("check", "--model", "A100-80GB", "4g.40gb=1", "4g.40gb=1"),
        ("check", "4g.40gb=1"),  # no model
        ("frobnicate",),
    ],
)
def test_cli_bad_input_exits_2_with_one_line_and_no_traceback(args):
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr
