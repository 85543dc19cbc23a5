#!/usr/bin/env bash
# Generates the Python gRPC stubs of protos/hotfloat/v1 into one flat package (default services/hotfloat_services/_proto).
# The one protoc invocation that make and Bazel share; stubs are build outputs, never committed.
# Usage: tools/gen_protos.sh [OUT_DIR]   (PYTHON selects the interpreter that has grpcio-tools)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/services/hotfloat_services/_proto}"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$py" -m grpc_tools.protoc -I "$root/protos" --python_out="$tmp" --pyi_out="$tmp" --grpc_python_out="$tmp" \
    "$root"/protos/hotfloat/v1/*.proto
# protoc writes absolute `from hotfloat.v1 import x_pb2`, which would resolve to the hotfloat library package;
# the stubs live in one package of their own, so their imports of each other become relative.
sed -i -e 's/^from hotfloat\.v1 import /from . import /' "$tmp"/hotfloat/v1/*.py "$tmp"/hotfloat/v1/*.pyi
mkdir -p "$out"
rm -f "$out"/*_pb2*.py "$out"/*_pb2*.pyi
cp "$tmp"/hotfloat/v1/* "$out"/
printf '"""Generated gRPC stubs of protos/hotfloat/v1 (tools/gen_protos.sh); never edit or commit."""\n' > "$out/__init__.py"
