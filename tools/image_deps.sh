#!/usr/bin/env bash
# Installs the heavy image tooling (Bazel 4 + its offline rule packages, mmdebstrap, runc) only for the targets and
# tests that build or run images, so a plain `make setup` stays quick; a no-op when everything is present.
set -euo pipefail
need=()
command -v bazel >/dev/null 2>&1 || need+=(bazel-bootstrap)
[ -d /usr/share/bazel/rules/java ] || need+=(bazel-rules-java)
[ -d /usr/share/bazel/tools/platforms ] || need+=(bazel-platforms)
[ -d /usr/share/bazel/tools/skylib ] || need+=(bazel-skylib)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "image-deps: installing ${need[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
