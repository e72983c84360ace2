#!/usr/bin/env bash
# Tools the test suite needs besides the CUDA compiler, from Debian: chromium for the HTML
# report's browser test (tests/tests/report_html.rs), and bubblewrap, the sandbox of the
# sccache-dist build server that tests/tests/build_sccache_dist.rs starts (without `bwrap` that
# test prints why it skips). Idempotent and quick when installed.
set -euo pipefail
missing=()
if ! command -v chromium >/dev/null 2>&1 && [ -z "${CHROMIUM:-}" ]; then missing+=(chromium); fi
if ! command -v bwrap >/dev/null 2>&1 && [ -z "${OCCUPANCY_BWRAP:-}" ]; then missing+=(bubblewrap); fi
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: ${missing[*]} missing and apt-get is not available: install them, and/or set CHROMIUM=/path/to/chromium, OCCUPANCY_BWRAP=/path/to/bwrap" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
if [ -z "${CHROMIUM:-}" ]; then command -v chromium >/dev/null; fi
if [ -z "${OCCUPANCY_BWRAP:-}" ]; then command -v bwrap >/dev/null; fi
