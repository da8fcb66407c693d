#!/usr/bin/env bash
# Install promtool (Debian package `prometheus`, promtool only is used) for the alert-rule tests.
# Idempotent: does nothing when promtool is already on PATH. Needs root (or sudo) for apt-get.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
    echo "install-promtool: $(promtool --version 2>&1 | head -n 1), nothing to do"
    exit 0
fi
as_root=()
if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-promtool: promtool is missing; install the Debian package prometheus (apt-get install prometheus)" >&2
        exit 1
    fi
    as_root=(sudo -n)
fi
"${as_root[@]}" apt-get update -qq
# The package's service is not needed (and does not start in a container without systemd).
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends prometheus
promtool --version 2>&1 | head -n 1
