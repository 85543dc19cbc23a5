#!/usr/bin/env bash
# Copies the layouts Bazel built into out/images/<name> (hard links: layers are hundreds of MB), where
# `hotfloat image inspect|check|up|miner` look for them.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p out/images
bin=$(bazel info bazel-bin 2>/dev/null)
for image in compiler worker validator; do
    src="$bin/images/$image"
    [ -d "$src" ] || continue
    rm -rf "out/images/$image"
    cp -al "$src" "out/images/$image" 2>/dev/null || cp -a "$src" "out/images/$image"
done
