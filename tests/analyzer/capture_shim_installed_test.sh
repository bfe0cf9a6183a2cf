#!/bin/sh
# The installed layout (`cmake --install`): the binary in <prefix>/bin finds the capture shim in
# <prefix>/share/opprobe/capture, and the shim imports its shared modules (capture_recorder.py, top_level.py, ...)
# from that folder alone: capture a sample script with the installed copy, far from the source tree.
# Usage: capture_shim_installed_test.sh BUILD_DIR SOURCE_DIR (ctest `capture_shim_installed`).
set -eu
build=$1
src=$2
prefix=$(mktemp -d /tmp/opprobe-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cp "$src/samples/scripts/unsupported.py" "$prefix/model.py"
cd "$prefix"
env -u OPPROBE_CAPTURE_SHIM PYTHONPATH= "$prefix/bin/opprobe" capture -o "$prefix/trace.json" -- /usr/bin/python3 model.py
grep -q '"op":"aten::mul"' "$prefix/trace.json" || { echo "no aten::mul call in the installed capture's trace" >&2; exit 1; }
echo "installed capture shim: ok"
