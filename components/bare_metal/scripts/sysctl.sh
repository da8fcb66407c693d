#!/usr/bin/env bash
# sysctl.sh: persist and apply net.core.bpf_jit_harden=1 (or 0) for GPU containers.
#
# Why: with cgroup v2, libnvidia-container (nvidia-container-cli) reads back the eBPF device
# filter that runc attached to the container's cgroup and adds its own rules to it. With
# net.core.bpf_jit_harden=2 the kernel blinds constants even in programs loaded by root, and a
# blinded program cannot be dumped back to user space: the copy comes back as zeros, the rebuilt
# program is rejected, and GPU containers fail to start with
#   nvidia-container-cli: mount error: failed to add device rules: unable to generate new device
#   filter program from existing programs: ... load program: invalid argument
# (NVIDIA/libnvidia-container#176, root cause in bottlerocket-os/bottlerocket#2504). Value 1
# still hardens unprivileged BPF loads. Hardened RHEL / CIS profiles often set 2.
#
# What it does (safe to re-run):
#   1. refuses to go on when another sysctl file that is read after ours at boot sets a different
#      value: ours would lose at the next reboot and GPU pods would break then, not now;
#   2. writes /etc/sysctl.d/99-gpu-platform.conf;
#   3. runs `sysctl -p /etc/sysctl.d/99-gpu-platform.conf` when the file changed or the live value
#      differs from it (someone ran sysctl -w), and checks the live value afterwards.
#
# Inputs (environment):
#   BPF_JIT_HARDEN  0|1 (default 1). 2 is refused, see above.
# Prints: bpf_jit_harden=<live value after the step>, or "unsupported" when the kernel has no BPF JIT
# Changes it reports: sysctl-conf (file written), sysctl-live (value applied to the running kernel)
set -euo pipefail
# script_text() in components/bare_metal/host_prep_steps.py replaces the next line with the text of lib.sh.
# shellcheck source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" # host-prep:inline lib.sh

BPF_JIT_HARDEN=${BPF_JIT_HARDEN:-1}

hp_init sysctl
if [[ $BPF_JIT_HARDEN == 2 ]]; then
  hp_die 2 "BPF_JIT_HARDEN=2 breaks GPU containers (nvidia-container-cli: failed to add device rules ... load program: invalid argument); use 1"
fi
hp_check_choice BPF_JIT_HARDEN "$BPF_JIT_HARDEN" 0 1

key=net.core.bpf_jit_harden
conf_name=99-gpu-platform.conf
conf="$HP_ROOT/etc/sysctl.d/$conf_name"
live="$HP_ROOT/proc/sys/net/core/bpf_jit_harden"

if [[ ! -e $live ]]; then
  hp_log "the kernel has no $key (no BPF JIT): nothing to do"
  hp_fact bpf_jit_harden unsupported
  exit 0
fi

# sysctl_file_value FILE: the last value FILE gives the key (empty when it does not set it).
# sysctl.d accepts "a.b.c = v", "a/b/c=v" and a leading "-" (ignore errors).
sysctl_file_value() {
  local line value=""
  while IFS= read -r line || [[ -n $line ]]; do
    line=$(hp_trim "$line")
    if [[ $line =~ ^-?net[./]core[./]bpf_jit_harden[[:space:]]*=[[:space:]]*(.*)$ ]]; then
      value=$(hp_trim "${BASH_REMATCH[1]}")
    fi
  done <"$1"
  printf '%s' "$value"
}

# 1. systemd-sysctl reads every *.conf of these folders in one list sorted by file name (LC_ALL=C,
# set by hp_init), and the last setting wins. On RHEL /etc/sysctl.d/99-sysctl.conf links to
# /etc/sysctl.conf and sorts after ours; `sysctl --system` reads /etc/sysctl.conf last as well.
conflicts=()
for file in "$HP_ROOT"/etc/sysctl.d/*.conf "$HP_ROOT"/run/sysctl.d/*.conf \
  "$HP_ROOT"/usr/local/lib/sysctl.d/*.conf "$HP_ROOT"/usr/lib/sysctl.d/*.conf \
  "$HP_ROOT/etc/sysctl.conf"; do
  if [[ ! -f $file || $file == "$conf" ]]; then
    continue
  fi
  name=${file##*/}
  if [[ $file != "$HP_ROOT/etc/sysctl.conf" && ! $name > $conf_name ]]; then
    continue
  fi
  value=$(sysctl_file_value "$file")
  if [[ -n $value && $value != "$BPF_JIT_HARDEN" ]]; then
    conflicts+=("$(hp_host_path "$file") sets $key=$value")
  fi
done
if ((${#conflicts[@]} > 0)); then
  hp_die 1 "$(printf '%s; ' "${conflicts[@]}")these are read after $conf_name at boot and would undo $key=$BPF_JIT_HARDEN. Remove that setting (or make it $BPF_JIT_HARDEN) and re-run"
fi

# 2. the persistent file.
content="# Written by gpu-platform host preparation (sysctl.sh); local edits are overwritten.
# bpf_jit_harden=2 breaks GPU containers: nvidia-container-cli cannot read back the cgroup eBPF
# device filter (\"failed to add device rules ... load program: invalid argument\").
$key = $BPF_JIT_HARDEN"
apply=false
if hp_install_file "$conf" "$content"; then
  hp_log "wrote $(hp_host_path "$conf")"
  hp_changed sysctl-conf
  apply=true
fi
current=$(hp_trim "$(<"$live")")
if [[ $current != "$BPF_JIT_HARDEN" ]]; then
  hp_log "$key is $current in the running kernel"
  apply=true
fi

# 3. the running kernel.
if [[ $apply == true ]]; then
  hp_require_cmd sysctl "install procps-ng"
  if ! sysctl -p "$conf" >&2; then
    hp_die 1 "sysctl -p $(hp_host_path "$conf") failed"
  fi
  current=$(hp_trim "$(<"$live")")
  if [[ $current != "$BPF_JIT_HARDEN" ]]; then
    hp_die 1 "$key is still $current after sysctl -p; something on the host keeps resetting it"
  fi
  hp_changed sysctl-live
fi
hp_fact bpf_jit_harden "$current"
