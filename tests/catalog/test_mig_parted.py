"""NVIDIA's named configs per model, the mig-parted file we render, strategy and advertised resources."""

from __future__ import annotations

import pytest
import yaml

from components.catalog.mig import (
    DEFAULT_CONFIGS,
    DeviceLayout,
    MigLayoutError,
    MigNotSupported,
    MigPartedError,
    UnknownMigConfig,
    advertised_resources,
    mig_gpu,
    mig_models,
    mig_resource_name,
    mig_strategy,
    named_layout,
    named_layout_names,
    place,
    render_parted_config,
)

H100_IDS = ["0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"]
BALANCED_H100 = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}


def test_h100_80gb_gets_nvidias_configs_in_file_order():
    assert named_layout_names("H100-80GB") == (
        "all-disabled",
        "all-enabled",
        "all-1g.10gb",
        "all-1g.10gb.me",
        "all-1g.20gb",
        "all-2g.20gb",
        "all-3g.40gb",
        "all-4g.40gb",
        "all-7g.80gb",
        "all-balanced",
    )


@pytest.mark.parametrize(
    ("model", "name", "layout"),
    [
        ("H100-80GB", "all-balanced", BALANCED_H100),
        ("H100-80GB", "all-1g.10gb", {"1g.10gb": 7}),
        ("H100-80GB", "all-1g.10gb.me", {"1g.10gb+me": 1}),
        # Same name, other device filter: on A100-40GB 1g.10gb is the 2-memory-slice profile, 4 per GPU.
        ("A100-40GB", "all-1g.10gb", {"1g.10gb": 4}),
        ("A100-40GB", "all-balanced", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
        ("A30-24GB", "all-balanced", {"1g.6gb": 2, "2g.12gb": 1}),
        ("H200-141GB", "all-1g.35gb", {"1g.35gb": 4}),
        ("H100-96GB", "all-balanced", {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}),
        ("B200-180GB", "all-7g.180gb", {"7g.180gb": 1}),
        ("H100-80GB", "all-enabled", {}),
    ],
)
def test_named_layouts_resolve_per_device_filter(model, name, layout):
    assert named_layout(model, name) == layout


def test_all_disabled_is_none_for_every_model():
    for model in mig_models():
        assert named_layout(model, "all-disabled") is None


def test_a_device_filtered_config_is_offered_only_for_the_ids_nvidia_applies_it_to():
    """all-1g.35gb filters the H200 SXM id only: an H200 NVL node labelled with it would stay unpartitioned."""
    assert "all-1g.35gb" in named_layout_names("H200-141GB")
    assert "all-1g.35gb" not in named_layout_names("H200-NVL-141GB")
    with pytest.raises(UnknownMigConfig) as error:
        named_layout("H200-NVL-141GB", "all-1g.35gb")
    message = str(error.value)
    assert "applies 'all-1g.35gb' only to the PCI devices 0x233510DE (H200-141GB)" in message
    assert "H200-NVL-141GB GPUs (0x233B10DE) labelled with it would get nothing" in message
    valid = message.split("valid for H200-NVL-141GB: ")[1].split(", ")
    assert valid == list(named_layout_names("H200-NVL-141GB"))
    assert "all-balanced" in valid and "all-1g.18gb" in valid
    # The configs the two boards share resolve the same on both.
    assert named_layout("H200-NVL-141GB", "all-balanced") == named_layout("H200-141GB", "all-balanced")


def test_every_offered_config_covers_every_device_id_of_the_model():
    """The rule behind the refusal, for every model and every name it is offered."""
    for model in mig_models():
        for device_id in mig_gpu(model).pci_device_ids:
            for config in DEFAULT_CONFIGS:
                if config.name not in named_layout_names(model):
                    continue
                assert any(
                    entry.device_filter is None or device_id in entry.device_filter for entry in config.entries
                ), (model, device_id, config.name)


def test_a_name_not_defined_for_the_model_lists_the_valid_ones():
    with pytest.raises(UnknownMigConfig) as error:
        named_layout("H100-80GB", "all-1g.5gb")  # an A100-40GB profile
    message = str(error.value)
    assert message.startswith("H100-80GB: NVIDIA's default mig-parted config has no 'all-1g.5gb'")
    assert "all-balanced" in message and "all-7g.80gb" in message
    with pytest.raises(UnknownMigConfig):
        named_layout("H100-80GB", "all-1g.24gb.gfx")  # RTX PRO only
    with pytest.raises(MigNotSupported):
        named_layout("V100-32GB", "all-disabled")


@pytest.mark.parametrize("model", mig_models())
def test_every_named_layout_of_every_model_is_placeable(model):
    names = named_layout_names(model)
    assert {"all-disabled", "all-enabled", "all-balanced"} <= set(names)
    for name in names:
        layout = named_layout(model, name)
        if layout is not None:
            assert dict(place(model, layout).layout) == layout, name


# Profiles whose all-<profile> config NVIDIA's file filters to other device ids of the same table.
FILTERED_AWAY = {("H200-NVL-141GB", "1g.35gb")}  # all-1g.35gb: H200 SXM (0x233510DE) only


@pytest.mark.parametrize("model", mig_models())
def test_each_profile_has_its_all_config_filling_the_gpu(model):
    # Two sources agree: the guide's max instance counts and NVIDIA's all-<profile> configs.
    for profile in mig_gpu(model).profiles:
        name = "all-" + profile.name.replace("+", ".")
        if (model, profile.name) in FILTERED_AWAY:
            with pytest.raises(UnknownMigConfig):
                named_layout(model, name)
            continue
        assert named_layout(model, name) == {profile.name: profile.max_instances}


def test_the_default_config_table_is_complete_and_unique():
    names = [c.name for c in DEFAULT_CONFIGS]
    assert len(names) == len(set(names)) == 81  # every config of NVIDIA's v26.7.0 file
    assert names[:2] == ["all-disabled", "all-enabled"]


def test_render_always_starts_with_all_disabled_and_filters_by_model():
    config = render_parted_config({"balanced": [DeviceLayout("H100-80GB", "all", BALANCED_H100)]})
    assert config == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "balanced": [
                {
                    "device-filter": H100_IDS,
                    "devices": "all",
                    "mig-enabled": True,
                    "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
                }
            ],
        },
    }
    assert list(config) == ["version", "mig-configs"]
    assert list(config["mig-configs"]["balanced"][0]) == ["device-filter", "devices", "mig-enabled", "mig-devices"]


def test_render_is_deterministic_and_yaml_round_trips():
    a = {
        "z-split": [
            DeviceLayout("H100-80GB", [1, 0], {"3g.40gb": 1, "1g.10gb": 2, "2g.20gb": 1}),
            DeviceLayout("H100-80GB", [3, 2], None),
        ],
        "a-dense": [DeviceLayout("A100-40GB", "all", {"1g.5gb": 7})],
    }
    b = dict(reversed(list(a.items())))
    text = yaml.safe_dump(render_parted_config(a), sort_keys=False)
    assert text == yaml.safe_dump(render_parted_config(b), sort_keys=False)
    loaded = yaml.safe_load(text)
    assert list(loaded["mig-configs"]) == ["all-disabled", "a-dense", "z-split"]
    split = loaded["mig-configs"]["z-split"]
    assert split[0]["devices"] == [0, 1]
    assert split[0]["mig-devices"] == BALANCED_H100  # catalog order, whatever order was given
    assert list(split[0]["mig-devices"]) == ["1g.10gb", "2g.20gb", "3g.40gb"]
    assert split[1] == {"device-filter": H100_IDS, "devices": [2, 3], "mig-enabled": False}


def test_mixed_models_in_one_config_each_get_their_filter():
    config = render_parted_config(
        {
            "all-small": [
                DeviceLayout("H100-80GB", "all", {"1g.10gb": 7}),
                DeviceLayout("A100-40GB", "all", {"1g.5gb": 7}),
            ]
        }
    )
    entries = config["mig-configs"]["all-small"]
    assert [e["device-filter"] for e in entries] == [H100_IDS, list(mig_gpu("A100-40GB").pci_device_ids)]


def test_an_invalid_layout_fails_where_it_is_written():
    with pytest.raises(MigLayoutError, match="at most 7"):
        DeviceLayout("H100-80GB", "all", {"1g.10gb": 8})
    with pytest.raises(MigLayoutError, match="unknown MIG profile"):
        DeviceLayout("H100-80GB", "all", {"1g.5gb": 1})
    with pytest.raises(MigNotSupported):
        DeviceLayout("T4-16GB", "all", None)


@pytest.mark.parametrize("devices", [[], [-1], [0, 0], [True]])
def test_device_indexes_are_checked(devices):
    with pytest.raises(MigPartedError):
        DeviceLayout("H100-80GB", devices, {})


def test_two_entries_may_not_claim_the_same_gpu():
    with pytest.raises(MigPartedError, match=r"GPU indexes \[1\] are claimed twice"):
        render_parted_config({"x": [DeviceLayout("H100-80GB", [0, 1], {}), DeviceLayout("H100-80GB", [1, 2], None)]})
    with pytest.raises(MigPartedError, match="both claim all"):
        render_parted_config({"x": [DeviceLayout("H100-80GB", "all", {}), DeviceLayout("H100-80GB", [3], {})]})


@pytest.mark.parametrize("name", ["", "has space", "-dash", "a" * 64, "trailing."])
def test_config_names_must_be_label_values(name):
    with pytest.raises(MigPartedError, match=r"nvidia\.com/mig\.config"):
        render_parted_config({name: [DeviceLayout("H100-80GB", "all", {})]})


def test_all_disabled_is_reserved_and_empty_configs_are_refused():
    with pytest.raises(MigPartedError, match="reserved"):
        render_parted_config({"all-disabled": [DeviceLayout("H100-80GB", "all", {"7g.80gb": 1})]})
    kept = render_parted_config({"all-disabled": [DeviceLayout("H100-80GB", "all", None)]})
    assert kept["mig-configs"] == {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
    with pytest.raises(MigPartedError, match="no entries"):
        render_parted_config({"empty": []})


def test_strategy_is_single_only_for_one_profile_type_on_identical_gpus():
    assert mig_strategy([{"1g.10gb": 7}] * 8) == "single"
    assert mig_strategy([None] * 8) == "single"
    assert mig_strategy([{"3g.40gb": 2, "1g.10gb": 0}, {"3g.40gb": 2}]) == "single"
    assert mig_strategy([BALANCED_H100] * 8) == "mixed"  # several profile types on one GPU
    assert mig_strategy([{"1g.10gb": 7}, {"7g.80gb": 1}]) == "mixed"  # GPUs differ
    assert mig_strategy([{"3g.40gb": 2}, {"3g.40gb": 1}]) == "mixed"
    assert mig_strategy([{"1g.10gb": 7}, None]) == "mixed"  # MIG on some GPUs only


def test_mixed_strategy_advertises_one_resource_per_profile():
    assert advertised_resources("H100-80GB", BALANCED_H100, "mixed", 8) == {
        "nvidia.com/mig-1g.10gb": 16,
        "nvidia.com/mig-2g.20gb": 8,
        "nvidia.com/mig-3g.40gb": 8,
    }
    assert advertised_resources("H100-80GB", {"1g.10gb+me": 1, "3g.40gb": 1}, "mixed", 2) == {
        "nvidia.com/mig-1g.10gb.me": 2,  # the device plugin turns "+" into "."
        "nvidia.com/mig-3g.40gb": 2,
    }
    assert mig_resource_name("2g.12gb+me") == "nvidia.com/mig-2g.12gb.me"


def test_single_strategy_advertises_mig_devices_as_gpus():
    assert advertised_resources("H100-80GB", {"1g.10gb": 7}, "single", 8) == {"nvidia.com/gpu": 56}
    assert advertised_resources("H100-80GB", None, "single", 8) == {"nvidia.com/gpu": 8}
    assert advertised_resources("H100-80GB", None, "mixed", 4) == {"nvidia.com/gpu": 4}
    assert advertised_resources("H100-80GB", {}, "single", 4) == {}
    with pytest.raises(MigPartedError, match="single MIG strategy needs one profile type"):
        advertised_resources("H100-80GB", BALANCED_H100, "single", 1)


def test_advertised_resources_refuses_bad_arguments():
    with pytest.raises(MigPartedError, match="strategy"):
        advertised_resources("H100-80GB", None, "none", 1)  # type: ignore[arg-type]
    with pytest.raises(MigPartedError, match="gpus_per_node"):
        advertised_resources("H100-80GB", None, "mixed", 0)
    with pytest.raises(MigLayoutError):
        advertised_resources("H100-80GB", {"4g.40gb": 2}, "mixed", 1)
