#!/usr/bin/env bash
# Installs the Debian packages hotfloat's sandbox and tests need; a no-op when they are present.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
{ command -v prlimit && command -v setpriv; } >/dev/null 2>&1 || need+=(util-linux)
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2 ' || need+=(libseccomp2)  # the seccomp filter (pyseccomp)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "system-deps: installing ${need[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
