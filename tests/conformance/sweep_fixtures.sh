#!/usr/bin/env bash
# Issue #12.6 over the inputs the test suite lowers: every sample trace, trace fixture and .pt2 fixture is lowered
# with `opprobe lower`, and no lowering may disagree with the dtype and shape PyTorch recorded ("... produced X but
# PyTorch returned Y"). The OpInfo records are checked by the `conformance` test, the sweep's captures by sweep_*.
# Usage: tests/conformance/sweep_fixtures.sh OPPROBE
set -uo pipefail
bin="$1"
cd "$(dirname "$0")/../.."
status=0
n=0
for f in samples/traces/*.json tests/fixtures/traces/*.json tests/fixtures/pt2/*.pt2; do
  [ -f "$f" ] || continue
  out=$("$bin" lower --style short "$f" 2>/dev/null) || continue  # inputs that are meant to be rejected
  n=$((n + 1))
  if grep -q "but PyTorch returned" <<<"$out"; then
    echo "$f:"
    grep -B1 "but PyTorch returned" <<<"$out"
    status=1
  fi
done
echo "sweep_fixtures: lowered $n inputs, $([ $status = 0 ] && echo no || echo some) shape mismatches"
[ "$n" -gt 0 ] || { echo "sweep_fixtures: no inputs found"; exit 1; }
exit $status
