#!/usr/bin/env bash
# driver-check.sh: read the host's NVIDIA driver and fail when it is not the one the stack declares.
#
# It changes nothing. It fails (exit 1, each reason on stdout and stderr) when:
#   - nvidia-smi does not work or lists no GPU;
#   - the loaded kernel module (/proc/driver/nvidia/version) is not the user-space driver's version:
#     a half-upgraded driver, which NVML reports as "Driver/library version mismatch". A reboot
#     (or reloading the modules) fixes it; it is not a CUDA-vs-driver problem;
#   - the driver is older than REQUIRED_MIN_DRIVER (the minimum for the CUDA version the stack
#     declares; a too-old driver often shows up only at run time inside pods, with
#     "CUDA driver version is insufficient for CUDA runtime version");
#   - the driver is not EXPECTED_DRIVER_VERSION.
# The facts it read are printed first, so they are in the output even when a check fails.
#
# With HOST_DRIVER=absent (driverless hosts: the GPU Operator's driver container owns the driver) it
# checks the opposite and fails when a host driver is installed or loaded: the NVIDIA user-space
# driver (nvidia-smi, libnvidia-ml) under /usr, an nvidia kernel module under /lib/modules of any
# installed kernel, or a loaded nvidia module while the operator's driver root (OPERATOR_DRIVER_ROOT)
# is missing (a module the operator did not load). A module loaded with that root present is the
# operator's own driver: accepted, so a re-run on a working node passes.
#
# Inputs (environment):
#   HOST_DRIVER              required (default) or absent
#   OPERATOR_DRIVER_ROOT     the GPU Operator's driver root on the host (default /run/nvidia/driver)
#   REQUIRED_MIN_DRIVER      lowest acceptable driver version, e.g. 580.65.06 (default: no minimum)
#   EXPECTED_DRIVER_VERSION  the exact driver version the host must have (default: any)
# Prints: driver_version, kernel_module_version, cuda_version (the newest CUDA the driver supports,
#   when nvidia-smi --version reports it), gpu_count, and per GPU i: gpu.<i>.name,
#   gpu.<i>.memory_total, gpu.<i>.pci_device_id
#   With HOST_DRIVER=absent: host_driver (absent), driver_source (none or operator),
#   kernel_module_version (when the operator's module is loaded)
# Changes it reports: none
set -euo pipefail
# script_text() in components/bare_metal/host_prep_steps.py replaces the next line with the text of lib.sh.
# shellcheck source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" # host-prep:inline lib.sh

HOST_DRIVER=${HOST_DRIVER:-required}
OPERATOR_DRIVER_ROOT=${OPERATOR_DRIVER_ROOT:-/run/nvidia/driver}
REQUIRED_MIN_DRIVER=${REQUIRED_MIN_DRIVER:-}
EXPECTED_DRIVER_VERSION=${EXPECTED_DRIVER_VERSION:-}

hp_init driver-check
hp_check_choice HOST_DRIVER "$HOST_DRIVER" required absent
hp_check_abs_path OPERATOR_DRIVER_ROOT "$OPERATOR_DRIVER_ROOT"
hp_check_version REQUIRED_MIN_DRIVER "$REQUIRED_MIN_DRIVER"
hp_check_version EXPECTED_DRIVER_VERSION "$EXPECTED_DRIVER_VERSION"

# Driverless host: no NVIDIA driver of the host's own may be installed or loaded.
check_no_host_driver() {
  local found=() path module nvrm
  for path in /usr/bin/nvidia-smi /usr/lib64/libnvidia-ml.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 \
    /usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1; do
    if [[ -e $HP_ROOT$path ]]; then
      found+=("$path")
    fi
  done
  shopt -s globstar nullglob
  for path in "$HP_ROOT"/lib/modules/*/**/nvidia.ko*; do
    found+=("${path#"$HP_ROOT"}")
  done
  shopt -u globstar nullglob
  for path in "${found[@]}"; do
    hp_error "a host NVIDIA driver is installed ($path), but the GPU Operator owns the driver on this host; remove the host driver packages (dnf remove 'nvidia-driver*' 'kmod-nvidia*') and reboot, or declare gpuOperator.driver.owner: host"
  done
  if [[ -r $HP_ROOT/proc/driver/nvidia/version ]]; then
    IFS= read -r nvrm <"$HP_ROOT/proc/driver/nvidia/version" || true
    module=$(hp_last_version "${nvrm:-}")
    hp_fact kernel_module_version "${module:-unknown}"
    if [[ ! -d $HP_ROOT$OPERATOR_DRIVER_ROOT ]]; then
      hp_error "an nvidia kernel module ${module:-} is loaded but not by the GPU Operator's driver container (no $OPERATOR_DRIVER_ROOT); reboot the host without the host driver"
      found+=(loaded-module)
    else
      hp_fact driver_source operator
    fi
  else
    hp_fact driver_source none
  fi
  if ((${#found[@]} > 0)); then
    exit 1
  fi
  hp_fact host_driver absent
  hp_log "no host driver: the GPU Operator's driver container owns the driver"
}

if [[ $HOST_DRIVER == absent ]]; then
  check_no_host_driver
  exit 0
fi
hp_require_cmd nvidia-smi "the NVIDIA driver is not installed on this host"

if ! smi=$(nvidia-smi --query-gpu=driver_version,name,memory.total,pci.device_id --format=csv,noheader 2>&1); then
  if [[ $smi == *"version mismatch"* ]]; then
    hp_die 1 "nvidia-smi: $smi. The loaded kernel module and the user-space driver differ (a half-finished driver change); reboot or reload the nvidia modules"
  fi
  hp_die 1 "nvidia-smi failed: $smi"
fi

count=0
driver=""
versions_differ=false
while IFS= read -r line; do
  if [[ -z ${line//[[:space:]]/} ]]; then
    continue
  fi
  IFS=, read -r version name memory device_id <<<"$line"
  version=$(hp_trim "$version")
  if [[ ! $version =~ ^[0-9]+(\.[0-9]+)+$ ]]; then
    hp_die 1 "unexpected nvidia-smi output: $line"
  fi
  if [[ -z $driver ]]; then
    driver=$version
  elif [[ $version != "$driver" ]]; then
    versions_differ=true
  fi
  hp_fact "gpu.$count.name" "$(hp_trim "$name")"
  hp_fact "gpu.$count.memory_total" "$(hp_trim "$memory")"
  hp_fact "gpu.$count.pci_device_id" "$(hp_trim "$device_id")"
  count=$((count + 1))
done <<<"$smi"
hp_fact gpu_count "$count"
if ((count == 0)); then
  hp_die 1 "nvidia-smi lists no GPU: $smi"
fi
hp_fact driver_version "$driver"

module=""
if [[ -r $HP_ROOT/proc/driver/nvidia/version ]]; then
  # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
  IFS= read -r nvrm <"$HP_ROOT/proc/driver/nvidia/version" || true
  module=$(hp_last_version "${nvrm:-}")
fi
hp_fact kernel_module_version "${module:-unknown}"

cuda=""
if version_out=$(nvidia-smi --version 2>/dev/null); then
  while IFS= read -r line; do
    if [[ $line =~ ^CUDA\ Version[[:space:]]*:[[:space:]]*([0-9.]+) ]]; then
      cuda=${BASH_REMATCH[1]}
    fi
  done <<<"$version_out"
fi
hp_fact cuda_version "${cuda:-unknown}"

failed=false
if [[ $versions_differ == true ]]; then
  hp_error "the GPUs report different driver versions: $(hp_trim "$smi")"
  failed=true
fi
if [[ $module != "$driver" ]]; then
  hp_error "the loaded kernel module is ${module:-unknown} but the user-space driver is $driver (a half-finished driver change); reboot or reload the nvidia modules"
  failed=true
fi
if [[ -n $REQUIRED_MIN_DRIVER && $(hp_version_cmp "$driver" "$REQUIRED_MIN_DRIVER") == -1 ]]; then
  hp_error "driver $driver is older than the required minimum $REQUIRED_MIN_DRIVER; upgrade the host driver"
  failed=true
fi
if [[ -n $EXPECTED_DRIVER_VERSION && $(hp_version_cmp "$driver" "$EXPECTED_DRIVER_VERSION") != 0 ]]; then
  hp_error "driver $driver is not the declared version $EXPECTED_DRIVER_VERSION; install $EXPECTED_DRIVER_VERSION or change the declared version"
  failed=true
fi
if [[ $failed == true ]]; then
  exit 1
fi
hp_log "driver $driver is acceptable"
