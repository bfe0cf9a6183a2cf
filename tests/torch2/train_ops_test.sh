#!/bin/sh
# A PyTorch 2.x training step's new aten ops all lower: captures tests/torch2/scripts/train_ops.py (foreach
# and fused optimizers, clip_grad_norm_, CPU flash attention under bf16 autocast) with the torch2 python
# and analyzes it with the interp backend. Usage: train_ops_test.sh OPPROBE_BIN PYTHON
set -eu
bin="$1"; python="$2"
work="$(mktemp -d /tmp/opprobe-train-ops-XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$bin" analyze --no-cache --no-progress -q --backend interp --save-trace "$work/trace.json" -o "$work/report.json" \
  -- "$python" tests/torch2/scripts/train_ops.py
/usr/bin/python3 - "$work/trace.json" "$work/report.json" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
ops = {c["op"] for c in trace["calls"]}
want = {"aten::_fused_adam_", "aten::_fused_adamw_", "aten::_fused_sgd_", "aten::_foreach_norm",
        "aten::_foreach_lerp_", "aten::_foreach_add_", "aten::_foreach_addcdiv_",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "aten::_to_copy", "aten::_unsafe_view"}
missing = sorted(want - ops)
assert not missing, "the step did not dispatch %s (torch %s)" % (missing, trace["torch_version"])
s = report["summary"]
failed = [e["kind"] + ": " + e.get("reason", "") for e in report["unsupported_operators"]["aten"]]
assert s["lowering_failures"] == 0 and report["support_percentage"] == "100.00%", failed
print("torch %s: %d distinct calls, all lowered and evaluated" % (trace["torch_version"], s["aten_nodes"]))
PY
