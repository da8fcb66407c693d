# shellcheck shell=bash
# lib.sh: helpers shared by the host-prep step scripts in this folder.
#
# How it ships. Each step script sources this file from its own folder (convenient in a checkout and
# for `shellcheck -x`). components/bare_metal/host_prep_steps.py:script_text() replaces that one `source` line
# with the text of this file, so what the Pulumi component sends over SSH is ONE self-contained
# script: nothing to copy to the host first, and a change here changes every step's command text,
# which is what makes pulumi-command re-run the steps. Keep this file to definitions only.
#
# Output protocol on stdout (parsed by host_prep_steps.parse_facts / parse_errors / parse_changed):
#   key=value          a fact the step read or decided (key: [a-z0-9_.]+)
#   error: <message>   why the step failed (the same message also goes to stderr)
#   changed: a, b      always the LAST line, also after a failure: what this run changed, or
#                      "changed: nothing"
# Progress messages and the output of the tools we call go to stderr, so stdout stays parseable.
#
# Exit status: 0 done; 1 the host is in a state the step cannot accept, or a tool failed;
#              2 an input (environment variable) is invalid; nothing was changed.
#
# Test hooks, not part of the step contract: HOST_ROOT (default /) prefixes every file path the
# steps read or write, and every binary is looked up in PATH, so tests run the scripts against a
# temporary directory with stub binaries first in PATH.
#
# Never `set -x` in these scripts: no input is a secret today, but a trace copies every expanded
# line into the Pulumi log, and a later input might be one.
#
# Host tools the steps use besides the step-specific ones: bash >= 4.4, coreutils (cat, cmp, chmod,
# dirname, mkdir, mktemp, mv, rm, sha256sum), all present on a minimal RHEL 8/9 install.

# hp_init NAME: start a step. Sets HP_STEP, HP_ROOT (HOST_ROOT without a trailing slash, so "/"
# becomes "" and paths read "$HP_ROOT/etc/..."), HP_STATE_DIR, and prints the "changed:" line
# when the script exits, however it exits.
hp_init() {
  HP_STEP=$1
  HP_CHANGED=()
  export LC_ALL=C
  trap hp_on_exit EXIT
  HP_ROOT=${HOST_ROOT:-/}
  if [[ $HP_ROOT != /* ]]; then
    hp_die 2 "HOST_ROOT must be an absolute path (got '$HP_ROOT')"
  fi
  HP_ROOT=${HP_ROOT%/}
  # Markers for work that must be finished even if an earlier run died half-way (for example the
  # blacklist was written but dracut failed): the next run sees the marker and retries.
  HP_STATE_DIR="$HP_ROOT/var/lib/gpu-platform/host-prep"
}

hp_on_exit() {
  local rc=$?
  hp_report_changed
  exit "$rc"
}

hp_report_changed() {
  if ((${#HP_CHANGED[@]} == 0)); then
    printf 'changed: nothing\n'
  else
    local joined
    joined=$(printf '%s, ' "${HP_CHANGED[@]}")
    printf 'changed: %s\n' "${joined%, }"
  fi
}

# hp_changed NAME: record that this run changed something (each name once).
hp_changed() {
  local item
  for item in "${HP_CHANGED[@]}"; do
    if [[ $item == "$1" ]]; then
      return 0
    fi
  done
  HP_CHANGED+=("$1")
}

hp_log() {
  printf '%s: %s\n' "$HP_STEP" "$*" >&2
}

# hp_fact KEY VALUE: one key=value line on stdout (newlines in VALUE become spaces).
hp_fact() {
  local value=${2//$'\n'/ }
  printf '%s=%s\n' "$1" "$value"
}

# hp_error MESSAGE: report a failure on stdout and stderr without exiting.
hp_error() {
  local message=${*//$'\n'/ }
  printf 'error: %s\n' "$message"
  printf '%s: error: %s\n' "$HP_STEP" "$message" >&2
}

# hp_die CODE MESSAGE: report and exit with CODE (1 host state / tool failure, 2 bad input).
hp_die() {
  local code=$1
  shift
  hp_error "$*"
  exit "$code"
}

hp_require_cmd() {
  if ! command -v "$1" >/dev/null 2>&1; then
    hp_die 1 "$1 not found in PATH: $2"
  fi
}

# hp_host_path PATH: the path as the host sees it (HP_ROOT stripped), for messages.
hp_host_path() {
  printf '%s' "${1#"$HP_ROOT"}"
}

hp_trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  s=${s%"${s##*[![:space:]]}"}
  printf '%s' "$s"
}

# hp_check_choice NAME VALUE CHOICE...: exit 2 unless VALUE is one of the choices.
hp_check_choice() {
  local name=$1 value=$2 choice
  shift 2
  for choice in "$@"; do
    if [[ $value == "$choice" ]]; then
      return 0
    fi
  done
  local allowed
  allowed=$(printf '%s, ' "$@")
  hp_die 2 "$name must be one of: ${allowed%, } (got '$value')"
}

# hp_check_version NAME VALUE: empty, or a dotted driver version such as 580.65.06.
hp_check_version() {
  if [[ -n $2 && ! $2 =~ ^[0-9]+(\.[0-9]+){0,3}$ ]]; then
    hp_die 2 "$1 must be a driver version such as 580.65.06 (got '$2')"
  fi
}

hp_check_abs_path() {
  if [[ ! $2 =~ ^/[^[:space:]\'\"]*$ ]]; then
    hp_die 2 "$1 must be an absolute path without spaces or quotes (got '$2')"
  fi
}

# hp_version_cmp A B: prints -1, 0 or 1. Numeric per component, so 580.9 < 580.10 and
# 580.65.06 == 580.65.6 (driver versions have zero-padded components).
hp_version_cmp() {
  local -a a b
  local i n x y
  IFS=. read -ra a <<<"$1"
  IFS=. read -ra b <<<"$2"
  n=${#a[@]}
  if ((${#b[@]} > n)); then
    n=${#b[@]}
  fi
  for ((i = 0; i < n; i++)); do
    x=$((10#${a[i]:-0}))
    y=$((10#${b[i]:-0}))
    if ((x < y)); then
      printf '%s\n' -1
      return 0
    fi
    if ((x > y)); then
      printf '%s\n' 1
      return 0
    fi
  done
  printf '%s\n' 0
}

# hp_last_version TEXT: the last dotted version number in TEXT (empty if none).
hp_last_version() {
  local word found=""
  local -a words=()
  read -ra words -d '' <<<"$1" || true
  for word in "${words[@]}"; do
    if [[ $word =~ ^[0-9]+\.[0-9]+(\.[0-9]+)*$ ]]; then
      found=$word
    fi
  done
  printf '%s' "$found"
}

# hp_install_file PATH CONTENT: make PATH hold exactly CONTENT plus a final newline.
# Returns 0 when it wrote the file, 1 when the file already had that content. Writes a temp file
# in the same folder and renames it, so a reader never sees half a file; the temp name does not
# end in .conf, so modprobe and sysctl never read it.
hp_install_file() {
  local path=$1 content=$2 dir tmp
  dir=$(dirname -- "$path")
  mkdir -p -- "$dir"
  tmp=$(mktemp "$dir/.gpu-platform.XXXXXX")
  printf '%s\n' "$content" >"$tmp"
  if [[ -f $path ]] && cmp -s -- "$tmp" "$path"; then
    rm -f -- "$tmp"
    return 1
  fi
  chmod 0644 -- "$tmp"
  mv -f -- "$tmp" "$path"
  return 0
}

# hp_sums PATH...: sha256 of each file ("absent" for a missing one), space separated.
hp_sums() {
  local path sum
  local -a sums=()
  for path in "$@"; do
    if [[ -f $path ]]; then
      read -r sum _ < <(sha256sum -- "$path")
      sums+=("$sum")
    else
      sums+=(absent)
    fi
  done
  printf '%s\n' "${sums[*]}"
}

hp_pending_set() {
  mkdir -p -- "$HP_STATE_DIR"
  : >"$HP_STATE_DIR/$1.pending"
}

hp_pending_clear() {
  rm -f -- "$HP_STATE_DIR/$1.pending"
}

hp_pending() {
  [[ -e $HP_STATE_DIR/$1.pending ]]
}
