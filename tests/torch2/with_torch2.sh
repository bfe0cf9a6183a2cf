#!/bin/sh
# Runs a test command with the PyTorch 2.x tier: OPPROBE_TORCH2_PYTHON is the python of the virtual
# environment made from requirements/torch2.txt (scripts/test runs `opprobe_venv torch2` and exports it).
# Every argument `@PYTHON@` is replaced by that python, and OPPROBE_TEST_PYTHON is set to it for the command.
if [ -z "${OPPROBE_TORCH2_PYTHON:-}" ] || [ ! -x "$OPPROBE_TORCH2_PYTHON" ]; then
  echo "OPPROBE_TORCH2_PYTHON is not set to a python with PyTorch 2.x: run scripts/test, or" \
       "export OPPROBE_TORCH2_PYTHON=\$(bash -c 'source scripts/lib/common.sh; opprobe_venv torch2')" >&2
  exit 1
fi
export OPPROBE_TEST_PYTHON="$OPPROBE_TORCH2_PYTHON"
n=$#
while [ "$n" -gt 0 ]; do
  a="$1"; shift
  [ "$a" = "@PYTHON@" ] && a="$OPPROBE_TORCH2_PYTHON"
  set -- "$@" "$a"
  n=$((n - 1))
done
exec "$@"
