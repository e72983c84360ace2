#!/usr/bin/env bash
# Tools the test suite needs besides the CUDA compiler: Debian's chromium for the HTML report's
# browser test (tests/tests/report_html.rs). Idempotent and quick when installed.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM:-}" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: chromium is missing and apt-get is not available: install chromium and/or set CHROMIUM=/path/to/chromium" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
