#!/usr/bin/env bash
# nvidia-services.sh: the host services an NVIDIA data-center GPU node needs running.
#
#   nvidia-persistenced   keeps the driver initialised with no client attached, so each container
#                         start does not pay the GPU init cost and settings stay put (every host).
#   nvidia-fabricmanager  configures the NVSwitch fabric of HGX/DGX boards; until it runs, CUDA on
#                         those GPUs fails ("system not yet initialized"). It must be exactly the
#                         driver's version or it refuses to start, which is the usual breakage
#                         after a driver update. Only on hosts with NVSwitches.
#
# NVSwitch detection with NVSWITCH=auto, first match wins: /dev/nvidia-nvswitch<N> device nodes,
# entries under /proc/driver/nvidia-nvswitch/devices/, or an NVIDIA PCI function of class 0680
# ("Bridge", which is what an NVSwitch reports) in `lspci -n -d 10de:` when lspci is installed.
#
# What it does (safe to re-run): enables and starts each unit only when it is not enabled or not
# running; on NVSwitch hosts first checks that the fabric manager is installed and that
# `nv-fabricmanager --version` equals the driver version from nvidia-smi, and fails otherwise.
# It does not install packages: which repository and version to use is the operator's call.
#
# Inputs (environment):
#   NVSWITCH  auto|true|false (default auto): whether this host has NVSwitches
# Prints: nvswitch=true|false, nvswitch_detected_by=dev|procfs|lspci|config|none, and on NVSwitch
#   hosts driver_version=..., fabricmanager_version=...
# Changes it reports: nvidia-persistenced, nvidia-fabricmanager
set -euo pipefail
# script_text() in components/bare_metal/host_prep_steps.py replaces the next line with the text of lib.sh.
# shellcheck source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" # host-prep:inline lib.sh

NVSWITCH=${NVSWITCH:-auto}

hp_init nvidia-services
hp_check_choice NVSWITCH "$NVSWITCH" auto true false
hp_require_cmd systemctl "this step needs systemd"

# ensure_service UNIT HINT: enabled and running, touching it only when it is not.
ensure_service() {
  local unit=$1 hint=$2 state
  state=$(systemctl is-enabled "$unit" 2>/dev/null) || true
  case $state in
    "" | not-found)
      hp_die 1 "$unit.service is not installed: $hint"
      ;;
    masked | masked-runtime)
      hp_die 1 "$unit.service is masked; run 'systemctl unmask $unit' if it should run"
      ;;
  esac
  if [[ $state == disabled ]]; then
    if ! systemctl enable --now "$unit" >&2; then
      hp_die 1 "systemctl enable --now $unit failed; see journalctl -u $unit"
    fi
    hp_changed "$unit"
  elif ! systemctl is-active --quiet "$unit"; then
    if ! systemctl start "$unit" >&2; then
      hp_die 1 "systemctl start $unit failed; see journalctl -u $unit"
    fi
    hp_changed "$unit"
  fi
  if ! systemctl is-active --quiet "$unit"; then
    hp_die 1 "$unit is not running after it was started; see journalctl -u $unit"
  fi
}

ensure_service nvidia-persistenced "it ships with the NVIDIA driver packages (nvidia-persistenced)"

nvswitch=false
detected_by=none
case $NVSWITCH in
  true)
    nvswitch=true
    detected_by=config
    ;;
  false)
    detected_by=config
    ;;
  auto)
    if compgen -G "$HP_ROOT/dev/nvidia-nvswitch[0-9]*" >/dev/null; then
      nvswitch=true
      detected_by=dev
    elif compgen -G "$HP_ROOT/proc/driver/nvidia-nvswitch/devices/*" >/dev/null; then
      nvswitch=true
      detected_by=procfs
    elif command -v lspci >/dev/null 2>&1; then
      pci=$(lspci -n -d 10de: 2>/dev/null) || pci=""
      if [[ $pci == *" 0680: 10de:"* ]]; then
        nvswitch=true
        detected_by=lspci
      fi
    fi
    ;;
esac
hp_fact nvswitch "$nvswitch"
hp_fact nvswitch_detected_by "$detected_by"

if [[ $nvswitch == true ]]; then
  hp_require_cmd nvidia-smi "the NVIDIA driver is not installed on this host"
  if ! smi=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1); then
    hp_die 1 "nvidia-smi failed, so the driver version is unknown: $smi"
  fi
  driver=$(hp_trim "${smi%%$'\n'*}")
  if [[ ! $driver =~ ^[0-9]+(\.[0-9]+)+$ ]]; then
    hp_die 1 "nvidia-smi did not report a driver version: $smi"
  fi
  hp_fact driver_version "$driver"
  hp_require_cmd nv-fabricmanager "this host has NVSwitches and needs the NVIDIA fabric manager at exactly the driver version $driver (package nvidia-fabric-manager-$driver)"
  if ! fm_out=$(nv-fabricmanager --version 2>&1); then
    hp_die 1 "nv-fabricmanager --version failed: $fm_out"
  fi
  fabricmanager=$(hp_last_version "$fm_out")
  hp_fact fabricmanager_version "${fabricmanager:-unknown}"
  if [[ $fabricmanager != "$driver" ]]; then
    hp_die 1 "fabric manager version ${fabricmanager:-unknown} does not match driver version $driver; NVSwitch hosts need both at exactly the same version (install nvidia-fabric-manager-$driver)"
  fi
  ensure_service nvidia-fabricmanager "install nvidia-fabric-manager-$driver"
fi
