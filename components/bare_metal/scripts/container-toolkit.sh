#!/usr/bin/env bash
# container-toolkit.sh: register the NVIDIA container runtime with containerd on the host.
#
# Use it only where the GPU Operator runs with toolkit.enabled=false. With toolkit.enabled=true the
# operator's toolkit DaemonSet writes its own containerd drop-in and signals containerd; doing both
# leaves two writers of the same config.
#
# What it does (safe to re-run):
#   1. runs `nvidia-ctk runtime configure --runtime=containerd --set-as-default` (nvidia-ctk is
#      itself idempotent, but it rewrites its files every time, so their timestamps say nothing);
#   2. compares sha256 sums of the containerd config and of the drop-in nvidia-ctk writes, taken
#      before and after, and restarts containerd only when they differ. If that restart failed on an
#      earlier run, a marker makes this run restart again. Restarting containerd does not stop
#      running containers (their shims survive it).
# Requires nvidia-container-toolkit >= 1.18 for the drop-in flag; with an older toolkit set
# CTK_DROP_IN_CONFIG=none and nvidia-ctk edits CONTAINERD_CONFIG in place.
#
# Inputs (environment):
#   CONTAINERD_CONFIG   containerd's main config (default /etc/containerd/config.toml)
#   CTK_DROP_IN_CONFIG  the file nvidia-ctk writes the runtime into, or "none" to edit
#                       CONTAINERD_CONFIG in place (default /etc/containerd/conf.d/99-nvidia.toml)
#   CONTAINERD_SERVICE  the systemd unit to restart (default containerd)
#   SET_AS_DEFAULT      true|false (default true): make "nvidia" containerd's default runtime, so
#                       pods get GPUs without a RuntimeClass
#   ENABLE_CDI          true|false (default false): also enable CDI in containerd (--cdi.enabled)
# Prints: nvidia_runtime_default=true|false
# Changes it reports: containerd-config, containerd-restart
set -euo pipefail
# script_text() in components/bare_metal/host_prep_steps.py replaces the next line with the text of lib.sh.
# shellcheck source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" # host-prep:inline lib.sh

CONTAINERD_CONFIG=${CONTAINERD_CONFIG:-/etc/containerd/config.toml}
CTK_DROP_IN_CONFIG=${CTK_DROP_IN_CONFIG:-/etc/containerd/conf.d/99-nvidia.toml}
CONTAINERD_SERVICE=${CONTAINERD_SERVICE:-containerd}
SET_AS_DEFAULT=${SET_AS_DEFAULT:-true}
ENABLE_CDI=${ENABLE_CDI:-false}

hp_init container-toolkit
hp_check_abs_path CONTAINERD_CONFIG "$CONTAINERD_CONFIG"
if [[ $CTK_DROP_IN_CONFIG != none ]]; then
  hp_check_abs_path CTK_DROP_IN_CONFIG "$CTK_DROP_IN_CONFIG"
fi
if [[ ! $CONTAINERD_SERVICE =~ ^[A-Za-z0-9@._-]+$ ]]; then
  hp_die 2 "CONTAINERD_SERVICE must be a systemd unit name (got '$CONTAINERD_SERVICE')"
fi
hp_check_choice SET_AS_DEFAULT "$SET_AS_DEFAULT" true false
hp_check_choice ENABLE_CDI "$ENABLE_CDI" true false

hp_require_cmd nvidia-ctk "install the nvidia-container-toolkit package"
hp_require_cmd systemctl "this step needs systemd to restart $CONTAINERD_SERVICE"

config="$HP_ROOT$CONTAINERD_CONFIG"
watched=("$config")
args=(runtime configure --runtime=containerd "--config=$config")
if [[ $CTK_DROP_IN_CONFIG != none ]]; then
  watched+=("$HP_ROOT$CTK_DROP_IN_CONFIG")
  args+=("--drop-in-config=$HP_ROOT$CTK_DROP_IN_CONFIG")
fi
if [[ $SET_AS_DEFAULT == true ]]; then
  args+=(--set-as-default)
fi
if [[ $ENABLE_CDI == true ]]; then
  args+=(--cdi.enabled)
fi

before=$(hp_sums "${watched[@]}")
if ! nvidia-ctk "${args[@]}" >&2; then
  hp_die 1 "nvidia-ctk runtime configure failed (its messages are on stderr)"
fi
after=$(hp_sums "${watched[@]}")
if [[ $before != "$after" ]]; then
  hp_log "containerd configuration changed"
  hp_changed containerd-config
  hp_pending_set containerd-restart
fi

if hp_pending containerd-restart; then
  hp_log "restarting $CONTAINERD_SERVICE to load the new configuration"
  if ! systemctl restart "$CONTAINERD_SERVICE" >&2; then
    hp_die 1 "systemctl restart $CONTAINERD_SERVICE failed; see journalctl -u $CONTAINERD_SERVICE. The next run retries the restart"
  fi
  if ! systemctl is-active --quiet "$CONTAINERD_SERVICE"; then
    hp_die 1 "$CONTAINERD_SERVICE is not active after the restart; see journalctl -u $CONTAINERD_SERVICE. The next run retries the restart"
  fi
  hp_pending_clear containerd-restart
  hp_changed containerd-restart
fi
hp_fact nvidia_runtime_default "$SET_AS_DEFAULT"
