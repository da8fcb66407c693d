"""Kernel command-line arguments host preparation may add to a GPU host, by name.

Host preparation writes ``kernelArgs`` into every boot entry with grubby, as root. An argument such
as ``init=/bin/sh`` or ``rdinit=`` would hand the next boot to anything, so only names known to be
about GPUs, IOMMU, memory and CPU isolation are accepted; ``hostPreparation.extraKernelArgNames``
accepts others, by name, on purpose. Sources: the kernel's
Documentation/admin-guide/kernel-parameters.txt; NVIDIA's driver README (``nvidia.NVreg_*`` module
parameters); the GPU Operator docs (``rd.driver.blacklist=nouveau``, IOMMU for vfio passthrough).
"""

from __future__ import annotations

from typing import Final

ALLOWED_KERNEL_ARG_NAMES: Final = frozenset(
    {
        # keep nouveau off the GPU, module signing
        "rd.driver.blacklist",
        "modprobe.blacklist",
        "nouveau.modeset",
        "module.sig_enforce",
        # IOMMU and PCIe (vfio passthrough, GPUDirect RDMA)
        "iommu",
        "iommu.passthrough",
        "intel_iommu",
        "amd_iommu",
        "pci",
        "pcie_aspm",
        # memory
        "default_hugepagesz",
        "hugepagesz",
        "hugepages",
        "transparent_hugepage",
        "numa_balancing",
        "init_on_alloc",
        # CPU isolation and power states
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "irqaffinity",
        "processor.max_cstate",
        "intel_idle.max_cstate",
        "idle",
        # cgroups
        "systemd.unified_cgroup_hierarchy",
    }
)
#: NVIDIA kernel module parameters (``nvidia.NVreg_EnableGpuFirmware=0`` and the like) are allowed by prefix.
ALLOWED_KERNEL_ARG_PREFIXES: Final = ("nvidia.NVreg_", "nvidia-drm.")
#: Never accepted, not even by name: they replace what the kernel boots into.
FORBIDDEN_KERNEL_ARG_NAMES: Final = frozenset({"init", "rdinit", "rd.break", "single", "emergency", "rescue"})


#: Arguments whose value must be the one that keeps nouveau off the GPU: ``nouveau.modeset=1`` (or a bare
#: ``nouveau.modeset``) lets nouveau bind the GPU at boot, and the NVIDIA driver then cannot load ("NVRM: ...
#: the nouveau kernel driver ... is currently in use", the NVIDIA driver README, "Installing the driver";
#: the GPU Operator docs disable it with ``modeset=0``).
REQUIRED_KERNEL_ARG_VALUES: Final = {"nouveau.modeset": "0"}


def kernel_arg_problem(argument: str, extra_names: frozenset[str] = frozenset()) -> str | None:
    """Why host preparation will not add ``argument`` to the boot entries, or None."""
    name, _, value = argument.partition("=")
    if name in FORBIDDEN_KERNEL_ARG_NAMES:
        return f"{argument!r} would change what the host boots into; it is never accepted"
    required = REQUIRED_KERNEL_ARG_VALUES.get(name)
    if required is not None and value != required:
        return (
            f"{argument!r} lets nouveau take the GPU at boot, and the NVIDIA driver then cannot load; "
            f"allowed: {name}={required}"
        )
    if name in ALLOWED_KERNEL_ARG_NAMES or name in extra_names or name.startswith(ALLOWED_KERNEL_ARG_PREFIXES):
        return None
    return (
        f"{name!r} is not a kernel argument host preparation knows; allowed: {', '.join(sorted(ALLOWED_KERNEL_ARG_NAMES))}, "
        f"nvidia.NVreg_*; to add another on purpose, list its name in hostPreparation.extraKernelArgNames"
    )
