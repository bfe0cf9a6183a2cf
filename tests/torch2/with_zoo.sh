#!/bin/sh
# Runs a test command with the model zoos' environment (requirements/zoo.txt, layered on torch2: transformers, timm,
# diffusers): OPPROBE_ZOO_PYTHON is its python (scripts/test runs `opprobe_venv zoo` and exports it). Every argument
# `@ZOO_PYTHON@` is replaced by that python.
if [ -z "${OPPROBE_ZOO_PYTHON:-}" ] || [ ! -x "$OPPROBE_ZOO_PYTHON" ]; then
  echo "OPPROBE_ZOO_PYTHON is not set to the model zoos' python: run scripts/test, or" \
       "export OPPROBE_ZOO_PYTHON=\$(bash -c 'source scripts/lib/common.sh; opprobe_venv zoo')" >&2
  exit 1
fi
n=$#
while [ "$n" -gt 0 ]; do
  a="$1"; shift
  [ "$a" = "@ZOO_PYTHON@" ] && a="$OPPROBE_ZOO_PYTHON"
  set -- "$@" "$a"
  n=$((n - 1))
done
exec "$@"
