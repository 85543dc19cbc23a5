#!/usr/bin/env bash
# Installs the Debian packages hotfloat's sandbox and tests need; a no-op when they are present.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v prlimit >/dev/null 2>&1 || need+=(util-linux)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "system-deps: installing ${need[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
