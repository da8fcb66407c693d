# Sourced by the fake host binaries. FAKE_HOST_ROOT is the fake host's /, FAKE_HOST_CTL holds knobs the tests set,
# FAKE_HOST_CALLS gets one line per invocation ("name arg1 arg2 ...") so tests can assert what ran on the "host".
# shellcheck shell=bash
set -euo pipefail
: "${FAKE_HOST_ROOT:?fake host binaries need FAKE_HOST_ROOT}" "${FAKE_HOST_CTL:?}" "${FAKE_HOST_CALLS:?}"
record() { printf '%s\n' "$*" >>"$FAKE_HOST_CALLS"; }
ctl_has() { [[ -f "$FAKE_HOST_CTL/$1" ]] && grep -qxF -- "$2" "$FAKE_HOST_CTL/$1"; }
ctl_get() { if [[ -f "$FAKE_HOST_CTL/$1" ]]; then cat "$FAKE_HOST_CTL/$1"; else printf '%s' "$2"; fi; }
# Unload one module like the kernel would: refuse if the test marked it busy.
unload() {
  if [[ ! -d "$FAKE_HOST_ROOT/sys/module/$1" ]]; then echo "Module $1 is not currently loaded" >&2; return 1; fi
  if ctl_has stuck_modules "$1"; then echo "Module $1 is in use" >&2; return 1; fi
  rm -rf "${FAKE_HOST_ROOT:?}/sys/module/$1"
}
