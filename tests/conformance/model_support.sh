#!/usr/bin/env bash
# Captures one training step (SGD, then Adam) of each listed model with the capture shim, analyzes it
# with the interp backend and every built-in rules profile, and prints the Markdown table kept in
# docs/coverage.md. Usage: tests/conformance/model_support.sh [WORK_DIR]  (traces are reused when present)
# OPPROBE_SWEEP_PYTHON picks the PyTorch (default /usr/bin/python3, torch 1.13; the torch2 tier:
# OPPROBE_SWEEP_PYTHON=$OPPROBE_VENV_ROOT/torch2/bin/python with its own WORK_DIR).
set -euo pipefail
cd "$(dirname "$0")/../.."
work="${1:-${OPPROBE_BUILD_DIR:-build}/model-traces}"
bin="${OPPROBE_BUILD_DIR:-build}/opprobe"
mkdir -p "$work"
models=(resnet50 mobilenet_v3_large efficientnet_b0 vit_b_16 swin_t convnext_tiny densenet121 wav2vec2_base conformer)
backends=(interp rules:cpu rules:gpu rules:tpu rules:neuron-trn1 rules:neuron-trn2)
printf '| model | distinct calls | lowering failures |'
for b in "${backends[@]}"; do printf ' %s |' "$b"; done
printf '\n|---|---|---|'
for b in "${backends[@]}"; do printf -- '---|'; done
printf '\n'
for m in "${models[@]}"; do
  trace="$work/$m.json"
  if [ ! -f "$trace" ]; then
    "$bin" capture -o "$trace" -- "${OPPROBE_SWEEP_PYTHON:-/usr/bin/python3}" tests/conformance/models_train.py "$m" >/dev/null
  fi
  row=""
  for b in "${backends[@]}"; do
    out="$work/$m.${b//[:]/_}.report.json"
    "$bin" analyze --no-cache --no-progress -q --backend "$b" "$trace" -o "$out" || true
    pct=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['support_percentage'])" "$out")
    row="$row $pct |"
  done
  read -r nodes failures < <(/usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['summary']; print(s['aten_nodes'], s['lowering_failures'])" "$work/$m.interp.report.json")
  printf '| %s | %s | %s |%s\n' "$m" "$nodes" "$failures" "$row"
done
