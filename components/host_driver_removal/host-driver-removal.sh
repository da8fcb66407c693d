#!/usr/bin/env bash
# host-driver-removal.sh: remove a `.run`-installed NVIDIA host driver from this Kubernetes node and hand the
# node over to the GPU Operator's containerised driver.
#
# Why: with a working host driver, the operator's k8s-driver-manager labels the node
# nvidia.com/gpu.deploy.driver=pre-installed and never manages it; the operator keeps that label forever. Removing
# the driver by hand (uninstall + reboot on every node at once) drops all GPUs, can half-remove a busy driver
# ("NVML: Driver/library version mismatch") and can reboot-loop. This script does it safely:
#   * one node at a time (a coordination.k8s.io Lease with a TTL, so a crashed holder cannot block forever);
#   * cordon + evict only GPU pods through the Eviction API (PDBs honoured), pause GPU Operator operands;
#   * refuse package-managed drivers; verify files and modules are gone (nvidia-uninstall exits 0 even when it
#     could not unload the modules);
#   * at most one reboot per attempt, guarded by the host boot id;
#   * record every step in node labels/annotations and a host marker file, so a restarted pod resumes instead of
#     repeating; failures are visible as a label, an annotation and an Event.
#
# Runs in a privileged DaemonSet container: hostPID, host / mounted at $HOST_ROOT, NODE_NAME from the downward
# API, in-cluster ServiceAccount, bash >= 4.4, coreutils (date -d, timeout), chroot, nsenter and kubectl.
# Names, env vars, exit codes and RBAC are documented in components/catalog/host_driver_removal.py.
set -Eeuo pipefail
shopt -s nullglob

# ---------------------------------------------------------------------------------------------------------------
# Configuration. One `NAME="${NAME:-default}"` line per variable: tests compare these defaults with the contract.
# ---------------------------------------------------------------------------------------------------------------
NODE_NAME="${NODE_NAME:-}"
POD_NAMESPACE="${POD_NAMESPACE:-}"
LOCK_NAME="${LOCK_NAME:-host-driver-removal-lock}"
LOCK_TTL_SECONDS="${LOCK_TTL_SECONDS:-1800}"
LOCK_WAIT_TIMEOUT_SECONDS="${LOCK_WAIT_TIMEOUT_SECONDS:-3600}"
POLL_INTERVAL_SECONDS="${POLL_INTERVAL_SECONDS:-10}"
EVICTION_TIMEOUT_SECONDS="${EVICTION_TIMEOUT_SECONDS:-300}"
OPERAND_WAIT_TIMEOUT_SECONDS="${OPERAND_WAIT_TIMEOUT_SECONDS:-300}"
OPERATOR_NAMESPACE="${OPERATOR_NAMESPACE:-gpu-operator}"
UNINSTALL_TIMEOUT_SECONDS="${UNINSTALL_TIMEOUT_SECONDS:-600}"
DRIVER_READY_TIMEOUT_SECONDS="${DRIVER_READY_TIMEOUT_SECONDS:-1200}"
REBOOT_WAIT_SECONDS="${REBOOT_WAIT_SECONDS:-600}"
ALLOW_REBOOT="${ALLOW_REBOOT:-true}"
HALT_ROLLOUT_ON_FAILURE="${HALT_ROLLOUT_ON_FAILURE:-true}"
DRY_RUN="${DRY_RUN:-false}"
IDLE_AFTER_DONE="${IDLE_AFTER_DONE:-true}"
REQUIRE_OPT_IN_LABEL="${REQUIRE_OPT_IN_LABEL:-true}"
HOST_ROOT="${HOST_ROOT:-/host}"
HOST_EXEC="${HOST_EXEC:-chroot}"
SYSTEMCTL_EXEC="${SYSTEMCTL_EXEC:-nsenter}"
HOST_GPU_SERVICES="${HOST_GPU_SERVICES:-nvidia-persistenced nvidia-fabricmanager nvidia-dcgm dcgm}"
EVENT_NAMESPACE="${EVENT_NAMESPACE:-default}"
KUBECTL_REQUEST_TIMEOUT="${KUBECTL_REQUEST_TIMEOUT:-30s}"

# ---------------------------------------------------------------------------------------------------------------
# Contract constants (mirrored in components/catalog/host_driver_removal.py).
# ---------------------------------------------------------------------------------------------------------------
readonly PREFIX="gpu-platform.io/"
readonly OPT_IN_LABEL="${PREFIX}host-driver-removal" OPT_IN_VALUE="enabled"
readonly STATE_LABEL="${PREFIX}driver-removal.state"
readonly REASON_LABEL="${PREFIX}driver-removal.reason"
readonly DETAIL_ANN="${PREFIX}driver-removal.detail"
readonly INITIAL_UNSCHED_ANN="${PREFIX}driver-removal.initial-unschedulable"
readonly BOOT_ID_ANN="${PREFIX}driver-removal.reboot-boot-id"
readonly ATTEMPT_ANN="${PREFIX}driver-removal.attempt"
readonly PAUSED_ANN="${PREFIX}driver-removal.paused-operands"
readonly VERSION_ANN="${PREFIX}driver-removal.driver-version"
readonly HALTED_ANN="${PREFIX}driver-removal.halted-by"
readonly DRIVER_LABEL="nvidia.com/gpu.deploy.driver"
readonly PRE_INSTALLED="pre-installed"
readonly PAUSED_VALUE="paused-for-driver-upgrade"
readonly MARKER_FILE="/var/lib/gpu-platform/driver-removal/state"
readonly REBOOT_SENTINEL="/run/reboot-required"
readonly DRIVER_READY_FILE="/run/nvidia/validations/driver-ready"
readonly MODULES=(nvidia_drm nvidia_modeset nvidia_uvm nvidia_peermem nvidia_fs gdrdrv nvidia_vgpu_vfio nvidia)
readonly LIB_DIRS=(/usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib)
readonly EXIT_FAILED=1 EXIT_CONFIG=2 EXIT_REBOOT_PENDING=10 EXIT_RETRY_LATER=75
readonly NULL="@null@"   # patch value meaning "delete this key" (merge patch null)

# GPU Operator operand label (suffix after nvidia.com/gpu.deploy.) -> `app` label of its pods, used to wait until
# paused operands have left the node (they hold /dev/nvidia* and would block the module unload).
declare -A OPERAND_APPS=(
  [device-plugin]=nvidia-device-plugin-daemonset
  [gpu-feature-discovery]=gpu-feature-discovery
  [dcgm-exporter]=nvidia-dcgm-exporter
  [dcgm]=nvidia-dcgm
  [operator-validator]=nvidia-operator-validator
  [container-toolkit]=nvidia-container-toolkit-daemonset
  [mig-manager]=nvidia-mig-manager
)

# Runtime state.
CUR_STATE=""          # state as last recorded on the node
LOCK_HELD=false
LAST_RENEW=0
IN_FAIL=""

# ---------------------------------------------------------------------------------------------------------------
# Small helpers.
# ---------------------------------------------------------------------------------------------------------------
log() { printf '%s host-driver-removal[%s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${NODE_NAME:-?}" "$*"; }
plan() { printf 'DRY-RUN: %s\n' "$*"; }
is_true() { case "${1,,}" in true | 1 | yes | on) return 0 ;; *) return 1 ;; esac; }
now() { date -u +%s; }
micro_now() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
epoch_of() { date -u -d "$1" +%s 2>/dev/null || printf '0'; }
hpath() { printf '%s%s' "$HOST_ROOT" "$1"; }   # a host path as this container sees it
one_line() { local s="${1//[$'\n\r\t']/ }"; printf '%s' "${s:0:1000}"; }

json_str() {   # JSON string literal of $1
  local s="$1"
  s="${s//\\/\\\\}"; s="${s//\"/\\\"}"
  s="${s//$'\n'/\\n}"; s="${s//$'\r'/\\r}"; s="${s//$'\t'/\\t}"
  s="${s//[[:cntrl:]]/}"
  printf '"%s"' "$s"
}
jp_key() { printf '%s' "${1//./\\.}"; }   # escape dots for a kubectl jsonpath key

refuse_in_dry_run() {   # belt and braces: every writer calls this first
  if is_true "$DRY_RUN"; then
    log "BUG: '$1' attempted during DRY_RUN; aborting without changes"
    exit "$EXIT_FAILED"
  fi
}

# Host command runners. Production: chroot into the host root (file-level tools) and nsenter into PID 1's
# namespaces for systemctl, which ignores requests made from a chroot. Tests: HOST_EXEC=direct plus stubs on PATH.
HOST_PREFIX=()
SYSTEMCTL_PREFIX=()
# shellcheck disable=SC2034  # `runner` is a nameref: it assigns the caller's array
set_runner() {   # array-name mode
  local -n runner="$1"
  case "$2" in
    chroot) runner=(chroot "$HOST_ROOT") ;;
    nsenter) runner=(nsenter -t 1 -m -u -i -n -p --) ;;
    direct) runner=() ;;
    *) return 1 ;;
  esac
}
host() { "${HOST_PREFIX[@]}" "$@"; }
host_timeout() { local secs="$1"; shift; timeout "$secs" "${HOST_PREFIX[@]}" "$@"; }
host_systemctl() { "${SYSTEMCTL_PREFIX[@]}" systemctl "$@"; }

kube() { kubectl --request-timeout="$KUBECTL_REQUEST_TIMEOUT" "$@"; }

# ---------------------------------------------------------------------------------------------------------------
# Node state: read, and write as one merge patch per transition (labels + annotations + cordon atomically).
# ---------------------------------------------------------------------------------------------------------------
NODE_UID="" NODE_UNSCHED="" L_STATE="" L_REASON="" L_DRIVER="" L_OPTIN="" A_ATTEMPT="" A_INITIAL="" A_BOOT=""
A_PAUSED="" A_VERSION="" NODE_LABELS_JSON=""
declare -A OPERAND_LABELS=()

read_node() {
  local tpl out
  tpl='{.metadata.uid}{"|"}{.spec.unschedulable}{"|"}'
  tpl+="{.metadata.labels.$(jp_key "$STATE_LABEL")}{\"|\"}{.metadata.labels.$(jp_key "$REASON_LABEL")}{\"|\"}"
  tpl+="{.metadata.labels.$(jp_key "$DRIVER_LABEL")}{\"|\"}{.metadata.labels.$(jp_key "$OPT_IN_LABEL")}{\"|\"}"
  tpl+="{.metadata.annotations.$(jp_key "$ATTEMPT_ANN")}{\"|\"}"
  tpl+="{.metadata.annotations.$(jp_key "$INITIAL_UNSCHED_ANN")}{\"|\"}"
  tpl+="{.metadata.annotations.$(jp_key "$BOOT_ID_ANN")}{\"|\"}{.metadata.annotations.$(jp_key "$PAUSED_ANN")}"
  tpl+="{\"|\"}{.metadata.annotations.$(jp_key "$VERSION_ANN")}"
  tpl+='{"|"}{.metadata.labels}'
  out="$(kube get node "$NODE_NAME" -o "jsonpath=$tpl")"
  IFS='|' read -r NODE_UID NODE_UNSCHED L_STATE L_REASON L_DRIVER L_OPTIN A_ATTEMPT A_INITIAL A_BOOT A_PAUSED \
    A_VERSION NODE_LABELS_JSON <<<"$out"
  OPERAND_LABELS=()
  local s="$NODE_LABELS_JSON" key
  local re='"(nvidia\.com/gpu\.deploy\.[A-Za-z0-9._-]+)":"([^"]*)"'
  while [[ "$s" =~ $re ]]; do
    key="${BASH_REMATCH[1]}"
    if [[ "$key" != "$DRIVER_LABEL" && "$key" != "nvidia.com/gpu.deploy.operands" ]]; then
      OPERAND_LABELS["$key"]="${BASH_REMATCH[2]}"
    fi
    s="${s#*"${BASH_REMATCH[0]}"}"
  done
}

declare -A P_LABELS=() P_ANNS=()
P_UNSCHED=""
p_label() { P_LABELS["$1"]="$2"; }
p_ann() { P_ANNS["$1"]="$2"; }
p_json_map() {   # name of an associative array -> JSON object body
  local -n map="$1"
  local k out="" v
  for k in "${!map[@]}"; do
    v="${map[$k]}"
    if [[ "$v" == "$NULL" ]]; then v=null; else v="$(json_str "$v")"; fi
    out+="${out:+,}$(json_str "$k"):$v"
  done
  printf '%s' "$out"
}
p_commit() {   # send the accumulated patch as one JSON merge patch
  refuse_in_dry_run "patch node"
  local meta="" body
  if ((${#P_LABELS[@]})); then meta+="\"labels\":{$(p_json_map P_LABELS)}"; fi
  if ((${#P_ANNS[@]})); then meta+="${meta:+,}\"annotations\":{$(p_json_map P_ANNS)}"; fi
  body="{\"metadata\":{$meta}"
  if [[ -n "$P_UNSCHED" ]]; then body+=",\"spec\":{\"unschedulable\":$P_UNSCHED}"; fi
  body+="}"
  P_LABELS=() P_ANNS=() P_UNSCHED=""
  kube patch node "$NODE_NAME" --type=merge -p "$body" >/dev/null
}

# Stage a state transition (state, reason, detail) into the pending patch.
p_state() {
  local state="$1" reason="${2:-}" detail="${3:-}"
  p_label "$STATE_LABEL" "$state"
  p_label "$REASON_LABEL" "${reason:-$NULL}"
  p_ann "$DETAIL_ANN" "$(one_line "${detail:-$state}")"
}
# Commit a transition, mirror it to the host marker file, log it. CUR_STATE is set before the patch so that a
# signal or error arriving mid-write is handled as if the new state were recorded (the safer assumption).
transition() {
  p_state "$@"
  CUR_STATE="$1"
  p_commit
  marker_write "$1"
  log "state -> $1${2:+ ($2)}${3:+: $3}"
}

emit_event() {   # type reason message; best effort: an Event must never turn success into failure
  refuse_in_dry_run "create event"
  local type="$1" reason="$2" msg ts body
  msg="$(one_line "$3")"
  ts="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  body="{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"generateName\":$(json_str "$NODE_NAME.host-driver-removal."),"
  body+="\"namespace\":$(json_str "$EVENT_NAMESPACE")},\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Node\","
  body+="\"name\":$(json_str "$NODE_NAME"),\"uid\":$(json_str "$NODE_UID")},\"reason\":$(json_str "$reason"),"
  body+="\"message\":$(json_str "$msg"),\"type\":$(json_str "$type"),\"source\":{\"component\":\"host-driver-removal\","
  body+="\"host\":$(json_str "$NODE_NAME")},\"firstTimestamp\":\"$ts\",\"lastTimestamp\":\"$ts\",\"count\":1}"
  if ! printf '%s' "$body" | kube create -f - >/dev/null 2>&1; then
    log "warning: could not create Event $reason"
  fi
}

# ---------------------------------------------------------------------------------------------------------------
# Host marker file: survives reboots and a lost label; written only outside DRY_RUN.
# ---------------------------------------------------------------------------------------------------------------
marker_write() {
  refuse_in_dry_run "write marker"
  local file dir
  file="$(hpath "$MARKER_FILE")"; dir="${file%/*}"
  mkdir -p "$dir"
  printf 'state=%s\nattempt=%s\nboot_id=%s\ndriver_version=%s\nupdated=%s\n' "$1" "${ATTEMPT:-${A_ATTEMPT:-0}}" \
    "${REBOOT_BOOT_ID:-${A_BOOT:-}}" "${DRIVER_VERSION:-}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$file.tmp"
  mv -f "$file.tmp" "$file"
}
marker_get() {
  local file line
  file="$(hpath "$MARKER_FILE")"
  [[ -r "$file" ]] || return 0
  while IFS= read -r line; do
    if [[ "$line" == "$1="* ]]; then printf '%s' "${line#*=}"; return 0; fi
  done <"$file"
}

# ---------------------------------------------------------------------------------------------------------------
# Host detection.
# ---------------------------------------------------------------------------------------------------------------
HOST_KIND="" RUN_INSTALL=false RUN_VERSION="" MODULE_LOADED=false MODULE_VERSION="" PKG_OWNER=""
OPERATOR_DRIVER=false DRIVER_VERSION=""
USERSPACE_FILES=() UNINSTALL_CMD=()

read_module_version() {
  local v="" line
  if [[ -r "$(hpath /sys/module/nvidia/version)" ]]; then
    v="$(<"$(hpath /sys/module/nvidia/version)")"
  elif [[ -r "$(hpath /proc/driver/nvidia/version)" ]]; then
    line="$(head -n1 "$(hpath /proc/driver/nvidia/version)")"
    if [[ "$line" =~ ([0-9]+\.[0-9]+(\.[0-9]+)?) ]]; then v="${BASH_REMATCH[1]}"; fi
  fi
  printf '%s' "${v//[[:space:]]/}"
}

module_loaded() { [[ -d "$(hpath "/sys/module/${1:-nvidia}")" ]]; }

scan_userspace_files() {
  USERSPACE_FILES=()
  local f d
  if [[ -e "$(hpath /usr/bin/nvidia-smi)" ]]; then USERSPACE_FILES+=(/usr/bin/nvidia-smi); fi
  for d in "${LIB_DIRS[@]}"; do
    for f in "$(hpath "$d")"/libnvidia-ml.so*; do USERSPACE_FILES+=("${f#"$HOST_ROOT"}"); done
  done
  return 0
}

detect_run_install() {   # .run traces: the backup log nvidia-uninstall works from, or the uninstaller itself
  RUN_INSTALL=false; RUN_VERSION=""; UNINSTALL_CMD=()
  if [[ -e "$(hpath /var/lib/nvidia/log)" || -e "$(hpath /usr/bin/nvidia-uninstall)" ]]; then RUN_INSTALL=true; fi
  if [[ -r "$(hpath /var/lib/nvidia/log)" ]]; then
    RUN_VERSION="$(head -n1 "$(hpath /var/lib/nvidia/log)" | tr -cd '0-9A-Za-z._-')"
  fi
  if [[ -e "$(hpath /usr/bin/nvidia-uninstall)" ]]; then
    UNINSTALL_CMD=(nvidia-uninstall --silent)
  elif [[ -e "$(hpath /usr/bin/nvidia-installer)" ]]; then
    UNINSTALL_CMD=(nvidia-installer --uninstall --silent)
  fi
}

detect_host() {
  local f out
  PKG_OWNER=""
  detect_run_install
  scan_userspace_files
  # A package owning any driver file means the distro manages it: removing it with nvidia-uninstall would break
  # the package database. dpkg/rpm run on the host; a missing tool simply fails the query.
  for f in "${USERSPACE_FILES[@]}"; do
    if out="$(host dpkg -S "$f" 2>/dev/null)"; then PKG_OWNER="dpkg:${out%%:*}"; break; fi
    if out="$(host rpm -qf "$f" 2>/dev/null)"; then PKG_OWNER="rpm:$out"; break; fi
  done
  if [[ -z "$PKG_OWNER" && -e "$(hpath /usr/lib/nvidia/alternate-install-present)" ]]; then
    PKG_OWNER="alternate-install-present"
  fi
  MODULE_LOADED=false; module_loaded nvidia && MODULE_LOADED=true
  MODULE_VERSION="$(read_module_version)"
  OPERATOR_DRIVER=false
  if [[ -e "$(hpath /run/nvidia/nvidia-driver.pid)" || -e "$(hpath /run/nvidia/driver/usr/bin/nvidia-smi)" ]]; then
    OPERATOR_DRIVER=true
  fi
  DRIVER_VERSION="${RUN_VERSION:-$MODULE_VERSION}"
  if [[ -n "$PKG_OWNER" ]]; then
    if is_true "$RUN_INSTALL"; then HOST_KIND=mixed; else HOST_KIND=package; fi
  elif is_true "$RUN_INSTALL"; then
    HOST_KIND=run
  elif ((${#USERSPACE_FILES[@]})); then
    HOST_KIND=unknown
  elif is_true "$MODULE_LOADED" && ! is_true "$OPERATOR_DRIVER"; then
    HOST_KIND=module-only   # user space gone but the old module is still loaded: unload or reboot
  else
    HOST_KIND=none          # no host driver (possibly the operator's driver is already running)
  fi
  if [[ -n "$RUN_VERSION" && -n "$MODULE_VERSION" && "$RUN_VERSION" != "$MODULE_VERSION" ]]; then
    log "note: loaded module $MODULE_VERSION differs from installed .run driver $RUN_VERSION (half-upgraded host)"
  fi
  log "host: kind=$HOST_KIND run_install=$RUN_INSTALL version=${DRIVER_VERSION:-none} module_loaded=$MODULE_LOADED" \
    "package_owner=${PKG_OWNER:-none} operator_driver=$OPERATOR_DRIVER"
}

host_driver_present() { [[ "$HOST_KIND" != none ]]; }

read_boot_id() {
  local f
  f="$(hpath /proc/sys/kernel/random/boot_id)"
  [[ -r "$f" ]] || return 1
  tr -d '[:space:]' <"$f"
}

# ---------------------------------------------------------------------------------------------------------------
# Rollout lock (coordination.k8s.io/v1 Lease). Acquire = create (fails if it exists) or replace with the
# resourceVersion we read (409 if anyone wrote in between): optimistic concurrency, no double holders. A holder
# whose renewTime + leaseDurationSeconds lies in the past is considered crashed and may be taken over. A Lease
# annotated halted-by=<node> blocks everyone else regardless of expiry (a human must look first).
# ---------------------------------------------------------------------------------------------------------------
LEASE_RV="" LEASE_HOLDER="" LEASE_RENEW="" LEASE_DURATION="" LEASE_HALTED="" LEASE_TRANSITIONS="" LEASE_ACQUIRE=""
LOCK_BLOCK_REASON="" LOCK_OTHER="" LOCK_EXPIRES="" OPERANDS_LEFT=""

lease_read() {
  local tpl out
  tpl='{.metadata.resourceVersion}{"|"}{.spec.holderIdentity}{"|"}{.spec.renewTime}{"|"}'
  tpl+='{.spec.leaseDurationSeconds}{"|"}{.spec.leaseTransitions}{"|"}{.spec.acquireTime}{"|"}'
  tpl+="{.metadata.annotations.$(jp_key "$HALTED_ANN")}"
  out="$(kube -n "$POD_NAMESPACE" get lease "$LOCK_NAME" --ignore-not-found -o "jsonpath=$tpl" 2>&1)" || {
    log "cannot read Lease $POD_NAMESPACE/$LOCK_NAME: $(one_line "$out")"
    return 1
  }
  IFS='|' read -r LEASE_RV LEASE_HOLDER LEASE_RENEW LEASE_DURATION LEASE_TRANSITIONS LEASE_ACQUIRE LEASE_HALTED \
    <<<"$out"
}

lease_write() {   # verb(create|replace) holder halted-by acquire-time transitions
  refuse_in_dry_run "write lease"
  local verb="$1" holder="$2" halted="$3" acquire="$4" transitions="$5" meta spec out
  meta="\"name\":$(json_str "$LOCK_NAME"),\"namespace\":$(json_str "$POD_NAMESPACE")"
  if [[ "$verb" == replace ]]; then meta+=",\"resourceVersion\":$(json_str "$LEASE_RV")"; fi
  if [[ -n "$halted" ]]; then meta+=",\"annotations\":{$(json_str "$HALTED_ANN"):$(json_str "$halted")}"; fi
  spec="\"leaseDurationSeconds\":$LOCK_TTL_SECONDS,\"leaseTransitions\":${transitions:-0}"
  if [[ -n "$holder" ]]; then
    spec+=",\"holderIdentity\":$(json_str "$holder"),\"acquireTime\":$(json_str "$acquire")"
    spec+=",\"renewTime\":$(json_str "$(micro_now)")"
  fi
  out="$(printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{%s},"spec":{%s}}' "$meta" "$spec" |
    kube -n "$POD_NAMESPACE" "$verb" -f - 2>&1)" || {
    log "Lease $verb lost a race or failed: $(one_line "$out")"
    return 1
  }
}

# 0 = we hold the lock now; 1 = held by someone else (LOCK_*); 2 = API error; 3 = lost a write race.
lock_try() {
  lease_read || return 2
  local t expires
  t="$(now)"
  if [[ -z "$LEASE_RV" ]]; then
    lease_write create "$NODE_NAME" "" "$(micro_now)" 0 || return 3
  else
    if [[ -n "$LEASE_HALTED" && "$LEASE_HALTED" != "$NODE_NAME" ]]; then
      LOCK_BLOCK_REASON=rollout-halted LOCK_OTHER="$LEASE_HALTED" LOCK_EXPIRES=never
      return 1
    fi
    if [[ -n "$LEASE_HOLDER" && "$LEASE_HOLDER" != "$NODE_NAME" ]]; then
      expires=$(($(epoch_of "$LEASE_RENEW") + ${LEASE_DURATION:-0}))
      if ((t < expires)); then
        LOCK_BLOCK_REASON=lock-held LOCK_OTHER="$LEASE_HOLDER"
        LOCK_EXPIRES="$(date -u -d "@$expires" +%Y-%m-%dT%H:%M:%SZ)"
        return 1
      fi
      log "lock holder $LEASE_HOLDER expired at $(date -u -d "@$expires" +%Y-%m-%dT%H:%M:%SZ); taking over"
    fi
    if [[ "$LEASE_HOLDER" == "$NODE_NAME" && -n "$LEASE_ACQUIRE" ]]; then
      lease_write replace "$NODE_NAME" "" "$LEASE_ACQUIRE" "${LEASE_TRANSITIONS:-0}" || return 3
    else
      lease_write replace "$NODE_NAME" "" "$(micro_now)" "$((${LEASE_TRANSITIONS:-0} + 1))" || return 3
    fi
  fi
  LOCK_HELD=true
  LAST_RENEW="$t"
  return 0
}

# Bounded wait for the lock; records state pending (once per blocker) while waiting. Returns 1 on timeout.
acquire_lock() {
  local deadline rc announced=""
  deadline=$(($(now) + LOCK_WAIT_TIMEOUT_SECONDS))
  while :; do
    rc=0; lock_try || rc=$?
    case "$rc" in
      0) log "lock $POD_NAMESPACE/$LOCK_NAME acquired"; return 0 ;;
      1)
        if [[ "$announced" != "$LOCK_BLOCK_REASON/$LOCK_OTHER" ]]; then
          transition pending "$LOCK_BLOCK_REASON" \
            "waiting for lock $POD_NAMESPACE/$LOCK_NAME: $LOCK_BLOCK_REASON by $LOCK_OTHER (expires $LOCK_EXPIRES)"
          announced="$LOCK_BLOCK_REASON/$LOCK_OTHER"
        fi
        ;;
      *) log "lock attempt failed (rc=$rc); retrying" ;;
    esac
    if (($(now) >= deadline)); then return 1; fi
    sleep "$POLL_INTERVAL_SECONDS"
  done
}

# Keep the Lease alive inside long waits (every third of the TTL).
lock_renew_if_due() {
  is_true "$LOCK_HELD" || return 0
  if (($(now) - LAST_RENEW >= LOCK_TTL_SECONDS / 3)); then
    local rc=0
    lock_try || rc=$?
    if ((rc == 1)); then log "warning: lock now held by $LOCK_OTHER ($LOCK_BLOCK_REASON); continuing this node"; fi
  fi
  return 0
}

lock_release() {
  local i
  for i in 1 2 3; do
    lease_read || return 0
    [[ "$LEASE_HOLDER" == "$NODE_NAME" ]] || { LOCK_HELD=false; return 0; }
    if lease_write replace "" "" "" "${LEASE_TRANSITIONS:-0}"; then
      LOCK_HELD=false; log "lock released"; return 0
    fi
    : "$i"
  done
  log "warning: could not release lock; it expires after ${LOCK_TTL_SECONDS}s"
}

lock_halt() {
  local i holder
  for i in 1 2 3; do
    lease_read || break
    holder="$NODE_NAME"
    if [[ -n "$LEASE_HOLDER" && "$LEASE_HOLDER" != "$NODE_NAME" ]] &&
      (($(now) < $(epoch_of "$LEASE_RENEW") + ${LEASE_DURATION:-0})); then holder="$LEASE_HOLDER"; fi
    if [[ -z "$LEASE_RV" ]]; then
      lease_write create "$holder" "$NODE_NAME" "$(micro_now)" 0 && { log "rollout halted on Lease"; return 0; }
    else
      lease_write replace "$holder" "$NODE_NAME" "${LEASE_ACQUIRE:-$(micro_now)}" "${LEASE_TRANSITIONS:-0}" &&
        { log "rollout halted on Lease (annotation $HALTED_ANN=$NODE_NAME)"; return 0; }
    fi
    : "$i"
  done
  log "warning: could not halt the rollout on the Lease"
}

# ---------------------------------------------------------------------------------------------------------------
# Operands and pods.
# ---------------------------------------------------------------------------------------------------------------
paused_keys() { local IFS=','; local k; for k in ${A_PAUSED}; do [[ -n "$k" ]] && printf '%s\n' "$k"; done; return 0; }

stage_pause_operands() {   # pause every operand label that is "true"; remember exactly which ones we changed
  local k list="$A_PAUSED"
  for k in "${!OPERAND_LABELS[@]}"; do
    if [[ "${OPERAND_LABELS[$k]}" == true ]]; then
      p_label "$k" "$PAUSED_VALUE"
      [[ ",$list," == *",$k,"* ]] || list+="${list:+,}$k"
    fi
  done
  if [[ -n "$list" ]]; then p_ann "$PAUSED_ANN" "$list"; fi
  A_PAUSED="$list"
}

stage_restore_operands() {   # set back to "true" only what we paused and nobody changed since
  local k
  while IFS= read -r k; do
    [[ -n "$k" ]] || continue
    if [[ "${OPERAND_LABELS[$k]:-}" == "$PAUSED_VALUE" ]]; then p_label "$k" true; fi
  done < <(paused_keys)
  p_ann "$PAUSED_ANN" "$NULL"
}

GPU_PODS=()
list_gpu_pods() {   # pods on this node that use NVIDIA GPUs (resources nvidia.com/gpu*, nvidia.com/mig-*, or DRA
  # claims, conservatively), excluding DaemonSet and static (mirror) pods, which eviction cannot move
  local tpl out ns name owners claims res
  tpl='{range .items[*]}{.metadata.namespace}{"|"}{.metadata.name}{"|"}{.metadata.ownerReferences[*].kind}{"|"}'
  tpl+='{.spec.resourceClaims}{"|"}{.spec.containers[*].resources}{.spec.initContainers[*].resources}{"\n"}{end}'
  out="$(kube get pods --all-namespaces \
    --field-selector "spec.nodeName=$NODE_NAME,status.phase!=Succeeded,status.phase!=Failed" -o "jsonpath=$tpl")"
  GPU_PODS=()
  while IFS='|' read -r ns name owners claims res; do
    [[ -n "$name" ]] || continue
    if [[ " $owners " == *" DaemonSet "* || " $owners " == *" Node "* ]]; then continue; fi
    if [[ "$res" == *nvidia.com/gpu* || "$res" == *nvidia.com/mig-* || -n "$claims" ]]; then
      GPU_PODS+=("$ns/$name")
    fi
  done <<<"$out"
}

evict_pod() {
  refuse_in_dry_run "evict"
  local ns="${1%%/*}" name="${1#*/}" out
  out="$(printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%s,"namespace":%s}}' \
    "$(json_str "$name")" "$(json_str "$ns")" |
    kube create --raw "/api/v1/namespaces/$ns/pods/$name/eviction" -f - 2>&1)" && return 0
  if [[ "$out" == *NotFound* || "$out" == *"not found"* ]]; then return 0; fi
  log "eviction of $1 refused: $(one_line "$out")"
  return 1
}

evict_gpu_pods() {   # evict, re-evict, wait until gone; 1 on timeout
  local deadline p
  deadline=$(($(now) + EVICTION_TIMEOUT_SECONDS))
  while :; do
    list_gpu_pods
    if ((${#GPU_PODS[@]} == 0)); then log "no GPU pods left on the node"; return 0; fi
    log "evicting GPU pods: ${GPU_PODS[*]}"
    for p in "${GPU_PODS[@]}"; do evict_pod "$p" || true; done
    if (($(now) >= deadline)); then return 1; fi
    lock_renew_if_due
    sleep "$POLL_INTERVAL_SECONDS"
  done
}

operand_pods_left() {   # prints pods of paused operands still on the node
  local apps=" " k tpl out name app
  while IFS= read -r k; do
    [[ -n "$k" ]] || continue
    if [[ -n "${OPERAND_APPS[${k#nvidia.com/gpu.deploy.}]:-}" ]]; then
      apps+="${OPERAND_APPS[${k#nvidia.com/gpu.deploy.}]} "
    fi
  done < <(paused_keys)
  [[ "$apps" != " " ]] || return 0
  tpl='{range .items[*]}{.metadata.name}{"|"}{.metadata.labels.app}{"\n"}{end}'
  out="$(kube -n "$OPERATOR_NAMESPACE" get pods --field-selector "spec.nodeName=$NODE_NAME" -o "jsonpath=$tpl")"
  while IFS='|' read -r name app; do
    if [[ -n "$name" && "$apps" == *" $app "* ]]; then printf '%s ' "$name"; fi
  done <<<"$out"
}

wait_operands_gone() {
  local deadline left
  deadline=$(($(now) + OPERAND_WAIT_TIMEOUT_SECONDS))
  while :; do
    left="$(operand_pods_left)"
    if [[ -z "$left" ]]; then return 0; fi
    log "waiting for paused GPU Operator operands to leave: $left"
    if (($(now) >= deadline)); then OPERANDS_LEFT="$left"; return 1; fi
    lock_renew_if_due
    sleep "$POLL_INTERVAL_SECONDS"
  done
}

# ---------------------------------------------------------------------------------------------------------------
# Host mutations.
# ---------------------------------------------------------------------------------------------------------------
stop_host_services() {
  refuse_in_dry_run "stop services"
  local s
  for s in $HOST_GPU_SERVICES; do
    if host_systemctl is-active --quiet "$s" 2>/dev/null; then
      log "stopping host service $s"
      host_systemctl stop "$s" || log "warning: could not stop $s"
    fi
  done
}

unload_modules() {   # best effort, in dependency order; the caller verifies
  refuse_in_dry_run "unload modules"
  local m
  for m in "${MODULES[@]}"; do
    if module_loaded "$m"; then
      if host modprobe -r "$m" 2>/dev/null || host rmmod "$m" 2>/dev/null; then
        log "unloaded $m"
      else
        log "could not unload $m (in use?)"
      fi
    fi
  done
}

loaded_modules() { local m out=""; for m in "${MODULES[@]}"; do module_loaded "$m" && out+="$m "; done; printf '%s' "${out% }"; }

# ---------------------------------------------------------------------------------------------------------------
# Outcomes.
# ---------------------------------------------------------------------------------------------------------------
finish() {
  local code="$1"
  if is_true "$IDLE_AFTER_DONE"; then
    log "done (outcome code $code); idling so the DaemonSet does not restart this pod"
    sleep infinity &
    wait $!
  fi
  exit "$code"
}

# Record a failure. Before the driver was touched: uncordon (if the node was schedulable), restore operands and
# release the lock, so the node is as it was. After: stay cordoned and (by default) halt the rollout.
fail() {   # reason detail...
  local reason="$1" touched=false
  shift
  local detail="$*"
  if [[ -n "$IN_FAIL" ]]; then log "failure while recording failure: $reason: $detail"; exit "$EXIT_FAILED"; fi
  IN_FAIL=1
  trap - ERR
  set +e
  log "FAILED ($reason): $detail"
  if is_true "$DRY_RUN"; then exit "$EXIT_FAILED"; fi
  case "$CUR_STATE" in removing | rebooting | removed) touched=true ;; esac
  if [[ "$CUR_STATE" == draining ]]; then
    read_node   # operand labels as they are now (paused by us)
    stage_restore_operands
    if [[ "$A_INITIAL" == false ]]; then P_UNSCHED=false; fi
    p_ann "$INITIAL_UNSCHED_ANN" "$NULL"
    detail+="; driver untouched, node restored"
  elif is_true "$touched"; then
    detail+="; driver was touched: node stays cordoned"
  fi
  transition failed "$reason" "$detail" || log "warning: could not record failure on the node"
  emit_event Warning HostDriverRemovalFailed "$reason: $detail"
  if is_true "$touched" && is_true "$HALT_ROLLOUT_ON_FAILURE"; then
    lock_halt
  elif is_true "$LOCK_HELD"; then
    lock_release
  fi
  finish "$EXIT_FAILED"
}

# SIGTERM (pod deleted, DaemonSet updated) while draining: the driver is untouched, so put the node back (uncordon
# if it was schedulable, restore operands, release the lock) instead of leaving it cordoned with nobody working on it.
# In later states the node stays as it is and a restarted pod resumes from the recorded state.
# shellcheck disable=SC2329  # invoked from the TERM trap
on_term() {
  trap - TERM INT ERR
  set +e
  log "terminated in state ${CUR_STATE:-<none>}"
  if [[ "$CUR_STATE" == draining ]] && ! is_true "$DRY_RUN"; then
    P_LABELS=() P_ANNS=() P_UNSCHED=""
    read_node
    stage_restore_operands
    if [[ "$A_INITIAL" == false ]]; then P_UNSCHED=false; fi
    p_ann "$INITIAL_UNSCHED_ANN" "$NULL"
    transition pending "" "interrupted while draining; node restored, will retry"
  fi
  case "$CUR_STATE" in
    removing | rebooting | removed) ;;   # keep the lock: this node is mid-removal and will resume
    *) if is_true "$LOCK_HELD" && ! is_true "$DRY_RUN"; then lock_release; fi ;;
  esac
  exit 143
}

# shellcheck disable=SC2329  # invoked from the ERR trap
on_error() {
  local rc="$1" line="$2" cmd="$3"
  if ((BASH_SUBSHELL > 0)); then exit "$rc"; fi   # let the parent shell report it once
  fail script-error "line $line: '$cmd' exited $rc"
}

skip() {
  log "skipping: $1: $2"
  if is_true "$DRY_RUN"; then plan "would mark node skipped ($1): $2"; exit 0; fi
  transition skipped "$1" "$2"
  emit_event Warning HostDriverRemovalSkipped "$1: $2"
  finish 0
}

# ---------------------------------------------------------------------------------------------------------------
# Phases.
# ---------------------------------------------------------------------------------------------------------------
handover_without_driver() {   # nothing on the host to remove: only the operator's label needs fixing
  if [[ -z "$L_DRIVER" || "$L_DRIVER" == "$PRE_INSTALLED" ]]; then p_label "$DRIVER_LABEL" true; fi
  transition handed-over "" "no host driver found; $DRIVER_LABEL=${L_DRIVER:+$L_DRIVER->}true, GPU Operator owns the driver"
  emit_event Normal HostDriverHandedOver "no host NVIDIA driver; GPU Operator driver enabled"
  finish 0
}

begin_attempt() {   # fresh attempt: lock, record schedulability, cordon, pause operands - one patch
  if ! acquire_lock; then
    log "lock not obtained within ${LOCK_WAIT_TIMEOUT_SECONDS}s; exiting $EXIT_RETRY_LATER so the pod retries"
    exit "$EXIT_RETRY_LATER"
  fi
  read_node
  ATTEMPT=$((${A_ATTEMPT:-0} + 1))
  # A retry after a failure that left the node cordoned keeps the schedulability recorded before
  # the first attempt; only a fresh node records its current one.
  if [[ "$A_INITIAL" != true && "$A_INITIAL" != false ]]; then
    if [[ "$NODE_UNSCHED" == true ]]; then A_INITIAL=true; else A_INITIAL=false; fi
  fi
  p_ann "$INITIAL_UNSCHED_ANN" "$A_INITIAL"
  p_ann "$ATTEMPT_ANN" "$ATTEMPT"
  p_ann "$VERSION_ANN" "${DRIVER_VERSION:-unknown}"
  p_ann "$BOOT_ID_ANN" "$NULL"
  stage_pause_operands
  P_UNSCHED=true
  transition draining "" "attempt $ATTEMPT: cordoned (was unschedulable=$A_INITIAL), operands paused: ${A_PAUSED:-none}"
  emit_event Normal HostDriverRemovalStarted "removing host NVIDIA driver ${DRIVER_VERSION:-?} (attempt $ATTEMPT)"
}

drain_phase() {
  if ! wait_operands_gone; then
    fail operand-wait-timeout "operand pods still on the node after ${OPERAND_WAIT_TIMEOUT_SECONDS}s: $OPERANDS_LEFT"
  fi
  if ! evict_gpu_pods; then
    fail eviction-timeout "GPU pods not evicted within ${EVICTION_TIMEOUT_SECONDS}s: ${GPU_PODS[*]}"
  fi
}

verify_files() {
  scan_userspace_files
  local left=("${USERSPACE_FILES[@]}")
  [[ -e "$(hpath /var/lib/nvidia/log)" ]] && left+=(/var/lib/nvidia/log)
  if ((${#left[@]})); then fail files-remain "driver files still present after uninstall: ${left[*]}"; fi
}

removal_phase() {   # from here on the driver is touched: failures keep the node cordoned
  transition removing "" "stopping GPU services, unloading modules, uninstalling ${DRIVER_VERSION:-driver}"
  stop_host_services
  unload_modules
  detect_run_install
  if is_true "$RUN_INSTALL"; then
    if ((${#UNINSTALL_CMD[@]} == 0)); then fail uninstall-failed "no nvidia-uninstall or nvidia-installer on host"; fi
    log "running on host: ${UNINSTALL_CMD[*]}"
    local rc=0 out last
    out="$(host_timeout "$UNINSTALL_TIMEOUT_SECONDS" "${UNINSTALL_CMD[@]}" 2>&1)" || rc=$?
    printf '%s\n' "$out" | tail -n 20
    last="$out"
    if ((${#last} > 300)); then last="${last: -300}"; fi
    if ((rc != 0)); then
      fail uninstall-failed "${UNINSTALL_CMD[0]} exited $rc (124 = timeout); see /var/log/nvidia-uninstall.log:" \
        "$(one_line "$last")"
    fi
  fi
  verify_files
  # nvidia-uninstall ignores rmmod failures and exits 0; check for ourselves and try once more.
  if module_loaded nvidia; then unload_modules; fi
  if module_loaded nvidia; then request_reboot; fi
  handover_after_removal
}

request_reboot() {
  local boot
  boot="$(read_boot_id)" || fail reboot-failed "cannot read host boot id; refusing to reboot without a loop guard"
  REBOOT_BOOT_ID="$boot"
  p_ann "$BOOT_ID_ANN" "$boot"
  transition rebooting modules-busy "modules still loaded after uninstall: $(loaded_modules); one reboot (boot $boot)"
  emit_event Normal HostDriverRemovalReboot "kernel modules busy ($(loaded_modules)); rebooting once"
  if is_true "$ALLOW_REBOOT"; then
    log "rebooting host (boot id $boot)"
    host_systemctl reboot || fail reboot-failed "systemctl reboot failed on the host"
    local deadline
    deadline=$(($(now) + REBOOT_WAIT_SECONDS))
    while (($(now) < deadline)); do sleep "$POLL_INTERVAL_SECONDS"; done
    log "still running ${REBOOT_WAIT_SECONDS}s after requesting the reboot; exiting $EXIT_REBOOT_PENDING"
    exit "$EXIT_REBOOT_PENDING"
  fi
  await_external_reboot
}

await_external_reboot() {
  local sentinel
  sentinel="$(hpath "$REBOOT_SENTINEL")"
  mkdir -p "${sentinel%/*}"
  : >"$sentinel"
  log "ALLOW_REBOOT=false: wrote $REBOOT_SENTINEL; waiting for someone (e.g. kured) to reboot the host"
  finish "$EXIT_REBOOT_PENDING"
}

after_reboot() {   # state rebooting: continue verification, never reboot a second time in this attempt
  local boot recorded
  boot="$(read_boot_id || true)"
  recorded="${A_BOOT:-$(marker_get boot_id)}"
  if [[ -n "$boot" && "$boot" == "$recorded" ]]; then
    is_true "$ALLOW_REBOOT" || await_external_reboot
    # The kubelet may restart this container while the host is still shutting down: give the requested reboot
    # time to happen before calling it failed, and never request a second one.
    log "reboot requested on this boot ($boot) has not happened yet; waiting up to ${REBOOT_WAIT_SECONDS}s"
    local deadline
    deadline=$(($(now) + REBOOT_WAIT_SECONDS))
    while (($(now) < deadline)); do sleep "$POLL_INTERVAL_SECONDS"; done
    fail reboot-not-performed "still on boot $boot ${REBOOT_WAIT_SECONDS}s after restarting; not rebooting again"
  fi
  log "host rebooted (boot $recorded -> $boot); verifying"
  local rc=0
  lock_try || rc=$?
  if ((rc == 1)); then log "warning: lock held by $LOCK_OTHER now; finishing this node anyway (driver touched)"; fi
  verify_files
  if module_loaded nvidia; then
    stop_host_services
    unload_modules
  fi
  if module_loaded nvidia; then
    fail module-stuck "nvidia module still loaded after the reboot ($(loaded_modules) $(read_module_version));" \
      "is nvidia.ko in the initramfs (lsinitramfs/lsinitrd)? no further reboot"
  fi
  handover_after_removal
}

wait_driver_ready() {
  ((DRIVER_READY_TIMEOUT_SECONDS > 0)) || return 0
  local deadline f
  f="$(hpath "$DRIVER_READY_FILE")"
  deadline=$(($(now) + DRIVER_READY_TIMEOUT_SECONDS))
  while :; do
    if [[ -r "$f" ]] && grep -qx 'IS_HOST_DRIVER=false' "$f"; then return 0; fi
    if (($(now) >= deadline)); then return 1; fi
    lock_renew_if_due
    sleep "$POLL_INTERVAL_SECONDS"
  done
}

handover_after_removal() {
  read_node
  # Stale validation results describe the host driver; the validator must not trust them.
  rm -f "$(hpath /run/nvidia/validations)"/{driver-ready,toolkit-ready,plugin-ready,cuda-ready}
  if [[ -z "$L_DRIVER" || "$L_DRIVER" == "$PRE_INSTALLED" || "$L_DRIVER" == "$PAUSED_VALUE" ]]; then
    p_label "$DRIVER_LABEL" true
  else
    log "leaving $DRIVER_LABEL=$L_DRIVER as set by someone else"
  fi
  stage_restore_operands
  transition removed "" "host driver ${DRIVER_VERSION:-} removed and verified; waiting for the GPU Operator driver"
  emit_event Normal HostDriverRemoved "host NVIDIA driver ${DRIVER_VERSION:-} removed; $DRIVER_LABEL=true"
  if ! wait_driver_ready; then
    fail driver-not-ready "GPU Operator driver not ready ($DRIVER_READY_FILE IS_HOST_DRIVER=false) after" \
      "${DRIVER_READY_TIMEOUT_SECONDS}s"
  fi
  # Restore the schedulability from before the attempt explicitly: k8s-driver-manager uncordons a node on its
  # "no driver loaded" path, which must not undo an admin's cordon.
  local uncordon="kept cordoned (was unschedulable before)"
  if [[ "$A_INITIAL" == false ]]; then P_UNSCHED=false; uncordon="uncordoned"; else P_UNSCHED=true; fi
  p_ann "$INITIAL_UNSCHED_ANN" "$NULL"
  p_ann "$BOOT_ID_ANN" "$NULL"
  transition handed-over "" "host driver ${DRIVER_VERSION:-} removed; GPU Operator driver ready; $uncordon"
  lock_release
  emit_event Normal HostDriverHandedOver "GPU Operator driver ready; $uncordon"
  finish 0
}

# ---------------------------------------------------------------------------------------------------------------
# Dry run: report, change nothing.
# ---------------------------------------------------------------------------------------------------------------
dry_run_report() {
  local state="$1" p
  plan "node $NODE_NAME state=${state:-<none>} schedulable=$([[ "$NODE_UNSCHED" == true ]] && echo no || echo yes)"
  plan "host driver: kind=$HOST_KIND version=${DRIVER_VERSION:-none} module_loaded=$MODULE_LOADED" \
    "package_owner=${PKG_OWNER:-none}"
  case "$state" in
    "" | pending) ;;
    *) plan "state is $state: a real run would resume/keep that state; no further plan"; plan "no changes made"; exit 0 ;;
  esac
  case "$HOST_KIND" in
    package | mixed | unknown) plan "would mark node skipped: nothing would be removed" ;;
    none) plan "would set $DRIVER_LABEL=true and state handed-over (no host driver to remove)" ;;
    run | module-only)
      if lease_read && [[ -n "$LEASE_HOLDER" && "$LEASE_HOLDER" != "$NODE_NAME" ]]; then
        plan "would wait for lock $POD_NAMESPACE/$LOCK_NAME (held by $LEASE_HOLDER)"
      else
        plan "would acquire lock $POD_NAMESPACE/$LOCK_NAME"
      fi
      plan "would record spec.unschedulable in $INITIAL_UNSCHED_ANN and cordon the node"
      local k paused=""
      for k in "${!OPERAND_LABELS[@]}"; do [[ "${OPERAND_LABELS[$k]}" == true ]] && paused+="$k "; done
      plan "would pause operand labels: ${paused:-none}"
      list_gpu_pods
      plan "would evict GPU pods (timeout ${EVICTION_TIMEOUT_SECONDS}s): ${GPU_PODS[*]:-none}"
      plan "would stop host services if active: $HOST_GPU_SERVICES"
      plan "would unload kernel modules: $(loaded_modules)"
      if is_true "$RUN_INSTALL"; then plan "would run on host: ${UNINSTALL_CMD[*]:-<no uninstaller found>}"; fi
      plan "would verify nvidia-smi, libnvidia-ml and /sys/module/nvidia are gone; if a module stays loaded:" \
        "$(is_true "$ALLOW_REBOOT" && echo "reboot once" || echo "write $REBOOT_SENTINEL")"
      for p in "${USERSPACE_FILES[@]}"; do plan "  would be removed: $p"; done
      plan "would set $DRIVER_LABEL=true, restore paused operands, wait for driver-ready," \
        "$([[ "$NODE_UNSCHED" == true ]] && echo "keep the node cordoned" || echo "uncordon"), release the lock"
      ;;
  esac
  plan "no changes made"
  exit 0
}

# ---------------------------------------------------------------------------------------------------------------
# Main.
# ---------------------------------------------------------------------------------------------------------------
config_error() { log "configuration error: $*"; exit "$EXIT_CONFIG"; }

validate_config() {
  [[ -n "$NODE_NAME" ]] || config_error "NODE_NAME is required (downward API spec.nodeName)"
  if [[ -z "$POD_NAMESPACE" && -r /var/run/secrets/kubernetes.io/serviceaccount/namespace ]]; then
    POD_NAMESPACE="$(</var/run/secrets/kubernetes.io/serviceaccount/namespace)"
  fi
  [[ -n "$POD_NAMESPACE" ]] || config_error "POD_NAMESPACE is required (downward API metadata.namespace)"
  local v
  for v in LOCK_TTL_SECONDS LOCK_WAIT_TIMEOUT_SECONDS EVICTION_TIMEOUT_SECONDS OPERAND_WAIT_TIMEOUT_SECONDS \
    UNINSTALL_TIMEOUT_SECONDS DRIVER_READY_TIMEOUT_SECONDS REBOOT_WAIT_SECONDS; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || config_error "$v must be a whole number of seconds, got '${!v}'"
  done
  [[ "$POLL_INTERVAL_SECONDS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || config_error "POLL_INTERVAL_SECONDS must be a number"
  set_runner HOST_PREFIX "$HOST_EXEC" || config_error "HOST_EXEC must be chroot, nsenter or direct"
  set_runner SYSTEMCTL_PREFIX "$SYSTEMCTL_EXEC" || config_error "SYSTEMCTL_EXEC must be chroot, nsenter or direct"
  [[ -d "$HOST_ROOT" ]] || config_error "HOST_ROOT $HOST_ROOT is not a directory (mount the host / there)"
}

main() {
  validate_config
  trap on_term TERM INT
  log "starting (dry_run=$DRY_RUN allow_reboot=$ALLOW_REBOOT host_root=$HOST_ROOT host_exec=$HOST_EXEC)"
  read_node
  detect_host
  local state="$L_STATE" marker_state
  marker_state="$(marker_get state)"
  if [[ -z "$state" && ( "$marker_state" == removing || "$marker_state" == rebooting || "$marker_state" == removed ) ]]; then
    log "node labels lost but host marker says $marker_state; resuming from the marker"
    state="$marker_state"
    A_ATTEMPT="$(marker_get attempt)"
  fi
  CUR_STATE="$state"
  case "$state" in   # resuming after the files are gone: keep reporting the version this attempt removes
    removing | rebooting | removed) DRIVER_VERSION="${A_VERSION:-$(marker_get driver_version)}" ;;
  esac

  if is_true "$DRY_RUN"; then dry_run_report "$state"; fi
  trap 'on_error $? $LINENO "$BASH_COMMAND"' ERR

  case "$state" in
    handed-over)
      if host_driver_present; then
        fail driver-reappeared "state is handed-over but a host driver is present again (kind $HOST_KIND)"
      fi
      log "already handed over; nothing to do"
      finish 0
      ;;
    skipped) log "skipped earlier (${L_REASON:-?}); remove label $STATE_LABEL to re-evaluate"; finish 0 ;;
    failed) log "failed earlier (${L_REASON:-?}); fix, then remove label $STATE_LABEL to retry"; finish "$EXIT_FAILED" ;;
    rebooting) after_reboot ;;
    removed) local rc=0; lock_try || rc=$?; handover_after_removal ;;
    removing)
      local rc=0
      lock_try || rc=$?
      if ((rc == 1)); then log "warning: lock held by $LOCK_OTHER; finishing this node anyway (driver touched)"; fi
      removal_phase
      ;;
    draining)
      if ! lock_try; then
        log "resuming a drain without the lock: restoring the node and waiting like a fresh attempt"
        stage_restore_operands
        if [[ "$A_INITIAL" == false ]]; then P_UNSCHED=false; fi
        p_ann "$INITIAL_UNSCHED_ANN" "$NULL"
        transition pending lock-held "drain interrupted and lock lost; node restored"
        begin_attempt
      else
        ATTEMPT="${A_ATTEMPT:-1}"
        stage_pause_operands
        P_UNSCHED=true
        transition draining "" "resumed attempt $ATTEMPT"
      fi
      drain_phase
      removal_phase
      ;;
    "" | pending)
      if is_true "$REQUIRE_OPT_IN_LABEL" && [[ "$L_OPTIN" != "$OPT_IN_VALUE" ]]; then
        log "node lacks $OPT_IN_LABEL=$OPT_IN_VALUE; not touching it"
        finish 0
      fi
      case "$HOST_KIND" in
        package) skip package-managed "driver files owned by a package ($PKG_OWNER); remove it with the package manager" ;;
        mixed) skip mixed-install ".run traces and package-owned files ($PKG_OWNER) both present" ;;
        unknown) skip unknown-install "driver files (${USERSPACE_FILES[*]}) but no .run backup log and no package owner" ;;
        none) handover_without_driver ;;
        run)
          if ((${#UNINSTALL_CMD[@]} == 0)); then
            skip uninstaller-missing "/var/lib/nvidia/log present but no nvidia-uninstall or nvidia-installer"
          fi
          ;;
      esac
      begin_attempt
      drain_phase
      removal_phase
      ;;
    *) fail unknown-state "unknown value '$state' in label $STATE_LABEL" ;;
  esac
}

main "$@"
