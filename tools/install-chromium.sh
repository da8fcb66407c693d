#!/usr/bin/env bash
# Install headless Chromium (Debian package `chromium`) for the browser test of the HTML review report
# (tests/diff/test_browser.py). Idempotent: does nothing when chromium is already on PATH. Needs root
# (or sudo) for apt-get.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    echo "install-chromium: $(chromium --version 2>/dev/null | head -n 1), nothing to do"
    exit 0
fi
as_root=()
if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-chromium: chromium is missing; install the Debian package chromium (apt-get install chromium)" >&2
        exit 1
    fi
    as_root=(sudo -n)
fi
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium
chromium --version 2>/dev/null | head -n 1
