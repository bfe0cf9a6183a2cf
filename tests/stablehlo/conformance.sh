#!/usr/bin/env bash
# The StableHLO conformance test (ctest stablehlo_conformance; tests/stablehlo/README.md):
#   tests/stablehlo/conformance.sh CHECKER [--keep DIR] [--show NAME]
# writes the JAX programs of tests/stablehlo/jax_programs.py with jaxlib (the xla environment: $OPPROBE_XLA_PYTHON,
# else made from requirements/xla.txt) into a temporary folder (or DIR with --keep) and runs CHECKER
# (build/tests/stablehlo/stablehlo_conformance_check) on them against tests/stablehlo/expected_differences.txt.
source "$(dirname "$0")/../../scripts/lib/common.sh"
checker="$1"
shift
keep="" show=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep="$2"; shift 2 ;;
    --show) show=(--show "$2"); shift 2 ;;
    *) echo "conformance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
python="${OPPROBE_XLA_PYTHON:-}"
[ -n "$python" ] || python="$(opprobe_venv xla)"
if [ -n "$keep" ]; then
  dir="$keep"
  mkdir -p "$dir"
else
  dir="$(mktemp -d)"
  trap 'rm -rf "$dir"' EXIT
fi
"$python" "$OPPROBE_ROOT/tests/stablehlo/jax_programs.py" "$dir"
"$checker" "$dir" "$OPPROBE_ROOT/tests/stablehlo/expected_differences.txt" ${show[@]+"${show[@]}"}
