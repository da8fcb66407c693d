"""nvidia-smi parsers, tested on output captured from a real NVIDIA H200 (tests/fixtures/nvidia-smi/).

Where a test needs output the H200 cannot produce (a GPU without MIG, several GPUs, an error), it
says so and derives the text from the captured one or from nvidia-smi's documented format.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.catalog.gpus import GPU_MODELS
from tests.support.nvidia_smi import (
    QUERY_GPU_FIELDS,
    MigMode,
    NvidiaSmiError,
    UnknownGpuProductError,
    gpu_model_key,
    parse_mig_lgip,
    parse_mig_lgipp,
    parse_query_gpu_csv,
    parse_smi_q,
    parse_smi_q_tree,
    parse_smi_version,
    profiles_by_name,
    query_gpu_command,
    with_placements,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
H200_BUS_ID = "00000000:00:06.0"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---------------------------------------------------------------------------------------------
# --query-gpu CSV
# ---------------------------------------------------------------------------------------------


def test_the_fixture_was_captured_with_the_documented_query() -> None:
    assert query_gpu_command() == [
        "nvidia-smi",
        "--query-gpu=index,name,uuid,driver_version,pci.bus_id,memory.total,mig.mode.current,mig.mode.pending",
        "--format=csv",
    ]
    header = fixture("query-gpu.csv").splitlines()[0]
    assert [h.split(" [")[0] for h in header.split(", ")] == list(QUERY_GPU_FIELDS)


def test_query_gpu_csv_of_the_real_h200() -> None:
    [gpu] = parse_query_gpu_csv(fixture("query-gpu.csv"))
    assert gpu.index == 0
    assert gpu.name == "NVIDIA H200"
    assert gpu.driver_version == "580.159.04"
    assert gpu.pci_bus_id == H200_BUS_ID
    assert gpu.memory_total_mib == 143771
    assert gpu.uuid == "GPU-00000000-1111-2222-3333-444444444444"  # scrubbed, see the fixture README
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (MigMode.DISABLED, MigMode.DISABLED)
    assert gpu.mig_capable and not gpu.mig_change_pending
    assert gpu.model_key() == "H200-141GB"
    assert gpu.extra == {}


def test_query_gpu_csv_keeps_columns_it_does_not_type() -> None:
    [gpu] = parse_query_gpu_csv(fixture("query-gpu-device-id.csv"))
    assert gpu.extra == {"pci.device_id": "0x233510DE"}
    assert gpu.memory_total_mib == 143771


def test_query_gpu_csv_without_header_needs_the_fields() -> None:
    """The driver-check step's query (captured on the H200 with --format=csv,noheader)."""
    [gpu] = parse_query_gpu_csv(
        fixture("query-gpu-driver-check.csv"), fields=["driver_version", "name", "memory.total", "pci.device_id"]
    )
    assert (gpu.index, gpu.name, gpu.driver_version, gpu.memory_total_mib) == (0, "NVIDIA H200", "580.159.04", 143771)
    assert gpu.mig_mode_current is None and gpu.pci_bus_id is None
    with pytest.raises(ValueError, match="'name' field"):
        parse_query_gpu_csv("580.159.04\n", fields=["driver_version"])


def test_query_gpu_csv_of_gpus_without_mig() -> None:
    """Not captured: a V100 and a T4 print [N/A] for MIG mode (documented nvidia-smi markers)."""
    text = (
        "index, name, uuid, driver_version, pci.bus_id, memory.total [MiB], mig.mode.current, mig.mode.pending\n"
        "0, Tesla V100-SXM2-32GB, GPU-1, 535.183.01, 00000000:00:1E.0, 32768 MiB, [N/A], [N/A]\n"
        "1, Tesla T4, [Not Supported], 535.183.01, 00000000:00:1F.0, 15360, [N/A], [N/A]\n"
    )
    v100, t4 = parse_query_gpu_csv(text)
    assert v100.mig_mode_current is None and not v100.mig_capable
    assert v100.model_key() == "V100-32GB"
    assert t4.uuid is None, "[Not Supported] is no value"
    assert t4.memory_total_mib == 15360, "--format=csv,nounits prints no unit"
    assert t4.model_key() == "T4-16GB"


@pytest.mark.parametrize(
    "text",
    [
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "",
    ],
)
def test_query_gpu_csv_raises_nvidia_smi_errors(text: str) -> None:
    with pytest.raises(NvidiaSmiError):
        parse_query_gpu_csv(text)


def test_query_gpu_csv_rejects_rows_that_do_not_fit_the_header() -> None:
    text = fixture("query-gpu.csv") + "1, NVIDIA H200, GPU-x\n"
    with pytest.raises(ValueError, match="row 2 has 3 values for 8 columns"):
        parse_query_gpu_csv(text)


def test_query_gpu_csv_rejects_a_mig_mode_it_does_not_know() -> None:
    text = fixture("query-gpu.csv").replace("Disabled, Disabled", "Disabled, Pending")
    with pytest.raises(ValueError, match="unexpected MIG mode 'Pending'"):
        parse_query_gpu_csv(text)


# ---------------------------------------------------------------------------------------------
# nvidia-smi -q and --version
# ---------------------------------------------------------------------------------------------


def test_smi_q_of_the_real_h200() -> None:
    report = parse_smi_q(fixture("nvidia-smi-q.txt"))
    assert report.driver_version == "580.159.04"
    assert report.cuda_version == "13.0"
    [gpu] = report.gpus
    assert gpu.pci_bus_id == H200_BUS_ID
    assert gpu.product_name == "NVIDIA H200"
    assert gpu.product_architecture == "Hopper"
    assert gpu.pci_device_id == "0x233510DE"
    assert gpu.memory_total_mib == 143771
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (MigMode.DISABLED, MigMode.DISABLED)
    assert gpu.persistence_mode == "Enabled"
    assert gpu.vbios_version == "96.00.A5.00.1A"
    assert gpu.model_key() == "H200-141GB"


def test_smi_q_tree_keeps_every_field_by_indentation() -> None:
    gpu = parse_smi_q(fixture("nvidia-smi-q.txt")).gpus[0].node
    assert gpu.get("Clocks", "SM") == "360 MHz"
    assert gpu.get("Max Clocks", "SM") == "1980 MHz", "same key under another section"
    assert gpu.get("ECC Errors", "Volatile", "DRAM Uncorrectable") == "0"
    assert gpu.get("PCI", "GPU Link Info", "PCIe Generation", "Current") == "5"
    assert gpu.get("Fan Speed") is None, "N/A reads as None"
    assert gpu.find("Fan Speed") is not None, "...but the line is there"
    assert gpu.get("GPU Memory Power Readings", "Average Power Draw") == "50.49 W", "heading with a trailing space"
    assert gpu.get("No Such Section", "Total") is None
    tree = parse_smi_q_tree(fixture("nvidia-smi-q.txt"))
    assert tree.get("Timestamp") == "Mon Nov 30 04:16:09 2026", "colons in a value stay in the value"
    assert tree.find(f"GPU {H200_BUS_ID}") is not None, "the bus id heading is not read as key : value"


def test_smi_q_with_a_pending_mig_change() -> None:
    """Derived from the capture: MIG enable requested, GPU reset not done yet."""
    text = fixture("nvidia-smi-q.txt").replace(
        "        Pending                                        : Disabled\n    Accounting Mode",
        "        Pending                                        : Enabled\n    Accounting Mode",
    )
    [gpu] = parse_smi_q(text).gpus
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (MigMode.DISABLED, MigMode.ENABLED)


def test_smi_q_with_several_gpus() -> None:
    """Derived from the capture: the same GPU section twice, as a 2-GPU host prints it."""
    text = fixture("nvidia-smi-q.txt")
    head, _, section = text.partition(f"GPU {H200_BUS_ID}\n")
    second = section.replace(H200_BUS_ID, "00000000:00:07.0")
    two = head.replace("Attached GPUs                                          : 1", "Attached GPUs : 2")
    report = parse_smi_q(f"{two}GPU {H200_BUS_ID}\n{section}GPU 00000000:00:07.0\n{second}")
    assert [gpu.pci_bus_id for gpu in report.gpus] == [H200_BUS_ID, "00000000:00:07.0"]
    assert all(gpu.model_key() == "H200-141GB" for gpu in report.gpus)
    with pytest.raises(ValueError, match="'Attached GPUs' says 2 but the output has 1"):
        parse_smi_q(f"{two}GPU {H200_BUS_ID}\n{section}")


def test_smi_q_raises_nvidia_smi_errors() -> None:
    with pytest.raises(NvidiaSmiError, match="version mismatch"):
        parse_smi_q("Failed to initialize NVML: Driver/library version mismatch\n")


def test_smi_version_of_the_real_h200() -> None:
    version = parse_smi_version(fixture("version.txt"))
    assert (version.driver, version.cuda, version.nvml, version.nvidia_smi) == (
        "580.159.04",
        "13.0",
        "580.159",
        "580.159.04",
    )
    with pytest.raises(NvidiaSmiError):
        parse_smi_version("nvidia-smi: unrecognized option '--version'\n")


# ---------------------------------------------------------------------------------------------
# nvidia-smi mig -lgip / -lgipp
# ---------------------------------------------------------------------------------------------

H200_PROFILES = [
    # name, id, total instances, memory GiB, SMs, CE, DEC, ENC, JPEG, OFA
    ("1g.18gb", 19, 7, 16.00, 16, 1, 1, 0, 1, 0),
    ("1g.18gb+me", 20, 1, 16.00, 16, 1, 1, 0, 1, 1),
    ("1g.35gb", 15, 4, 32.50, 26, 1, 1, 0, 1, 0),
    ("2g.35gb", 14, 3, 32.50, 32, 2, 2, 0, 2, 0),
    ("3g.71gb", 9, 2, 69.75, 60, 3, 3, 0, 3, 0),
    ("4g.71gb", 5, 1, 69.75, 64, 4, 4, 0, 4, 0),
    ("7g.141gb", 0, 1, 140.00, 132, 8, 7, 0, 7, 1),
]

H200_PLACEMENTS = {
    "1g.18gb": ((0, 1, 2, 3, 4, 5, 6), 1),
    "1g.18gb+me": ((0, 1, 2, 3, 4, 5, 6), 1),
    "1g.35gb": ((0, 2, 4, 6), 2),
    "2g.35gb": ((0, 2, 4), 2),
    "3g.71gb": ((0, 4), 4),
    "4g.71gb": ((0,), 4),
    "7g.141gb": ((0,), 8),
}


def test_lgip_of_the_real_h200_lists_every_gpu_instance_profile() -> None:
    profiles = parse_mig_lgip(fixture("mig-lgip.txt"))
    got = [
        (
            p.name,
            p.profile_id,
            p.instances_total,
            p.memory_gib,
            p.sm_count,
            p.copy_engines,
            p.decoders,
            p.encoders,
            p.jpeg_decoders,
            p.ofa_engines,
        )
        for p in profiles
    ]
    assert got == H200_PROFILES
    assert all(p.gpu_index == 0 and p.instances_free == p.instances_total and p.p2p is False for p in profiles)
    by_name = profiles_by_name(profiles)
    assert by_name["3g.71gb"].compute_slices == 3
    assert by_name["1g.18gb+me"].media_extensions and not by_name["1g.18gb"].media_extensions


def test_lgipp_of_the_real_h200_gives_placements_with_singular_and_plural_lines() -> None:
    placements = {p.profile_id: (p.starts, p.memory_slices) for p in parse_mig_lgipp(fixture("mig-lgipp.txt"))}
    ids = {name: pid for name, pid, *_ in H200_PROFILES}
    assert placements == {ids[name]: value for name, value in H200_PLACEMENTS.items()}


def test_profiles_with_placements_fit_the_seven_by_eight_slice_geometry() -> None:
    profiles = with_placements(parse_mig_lgip(fixture("mig-lgip.txt")), parse_mig_lgipp(fixture("mig-lgipp.txt")))
    assert {p.name: (p.placements, p.memory_slices) for p in profiles} == H200_PLACEMENTS
    for p in profiles:
        assert p.placements is not None and p.memory_slices is not None
        assert max(p.placements) + p.memory_slices <= 8, p.name
        assert p.compute_slices <= 7
        if p.name != "1g.18gb+me":
            assert len(p.placements) >= p.instances_total, p.name


def test_with_placements_refuses_outputs_that_do_not_belong_together() -> None:
    profiles = parse_mig_lgip(fixture("mig-lgip.txt"))
    placements = [p for p in parse_mig_lgipp(fixture("mig-lgipp.txt")) if p.profile_id != 9]
    with pytest.raises(ValueError, match=r"3g\.71gb \(ID 9\) has no -lgipp placement"):
        with_placements(profiles, placements)


def test_mig_listings_on_a_host_without_mig_gpus_are_empty() -> None:
    assert parse_mig_lgip("No MIG-supported devices found.\n") == []
    assert parse_mig_lgipp("No MIG-supported devices found.\n") == []


def test_mig_listings_raise_nvidia_smi_errors_and_reject_cut_tables() -> None:
    with pytest.raises(NvidiaSmiError):
        parse_mig_lgip("Failed to initialize NVML: Unknown Error\n")
    with pytest.raises(NvidiaSmiError):
        parse_mig_lgipp("Failed to initialize NVML: Unknown Error\n")
    cut = "\n".join(fixture("mig-lgip.txt").splitlines()[:6])
    with pytest.raises(ValueError, match=r"1g\.18gb has no second row"):
        parse_mig_lgip(cut)
    with pytest.raises(ValueError, match="unexpected line"):
        parse_mig_lgipp(fixture("mig-lgipp.txt") + "GPU  0 Profile ID 99 Placements: garbage\n")


# ---------------------------------------------------------------------------------------------
# product name -> model key
# ---------------------------------------------------------------------------------------------

# The H200 row is the capture; the other memory sizes are the usual memory.total values of those
# products (nominal, not captured here).
MODEL_KEYS = [
    ("NVIDIA H200", 143771, "H200-141GB"),
    ("NVIDIA H200 NVL", 143771, "H200-NVL-141GB"),
    ("NVIDIA H100 80GB HBM3", 81559, "H100-80GB"),
    ("NVIDIA H100 PCIe", 81559, "H100-80GB"),
    ("NVIDIA H100 NVL", 95830, "H100-94GB"),
    ("NVIDIA H100 96GB HBM3", 97871, "H100-96GB"),
    ("NVIDIA GH200 480GB", 97871, "H100-96GB"),
    ("NVIDIA GH200 144G HBM3e", 146768, "GH200-144GB"),
    ("NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"),
    ("NVIDIA A100 80GB PCIe", 81920, "A100-80GB"),
    ("NVIDIA A30", 24576, "A30-24GB"),
    ("NVIDIA B200", 183359, "B200-180GB"),
    ("Tesla V100-SXM2-32GB", 32768, "V100-32GB"),
    ("Tesla T4", 15360, "T4-16GB"),
]


@pytest.mark.parametrize(("name", "mib", "key"), MODEL_KEYS)
def test_product_names_map_to_model_keys(name: str, mib: int, key: str) -> None:
    assert gpu_model_key(name, mib) == key


def test_every_catalog_gpu_model_has_a_product_name_mapping() -> None:
    assert {key for _, _, key in MODEL_KEYS} == set(GPU_MODELS)


@pytest.mark.parametrize(
    ("name", "mib", "message"),
    [
        ("Tesla V100-SXM2-16GB", 16160, "matches no known variant"),
        ("NVIDIA L40S", 46068, "unknown GPU product 'NVIDIA L40S'"),
        ("NVIDIA GB200", 189471, "unknown GPU product"),
        ("NVIDIA A100-SXM4-80GB", None, "the memory size is needed"),
    ],
)
def test_unknown_products_raise_a_clear_error(name: str, mib: int | None, message: str) -> None:
    with pytest.raises(UnknownGpuProductError, match=message):
        gpu_model_key(name, mib)


def test_a_single_variant_family_needs_no_memory_size() -> None:
    assert gpu_model_key("NVIDIA H200", None) == "H200-141GB"
