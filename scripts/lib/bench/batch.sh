# `scripts/bench batch`: probing every unique unit of the resnet50 training step against compiling that whole step
# once, with the same compiler (issue #26.6: at most 1.5x), for tpu:v5e, gpu:h100 and xla:cpu. For each target:
#   whole      tests/bench/compile_whole.cpp: start the backend, load the step as torch_xla compiles it (the same
#              script, scripts/lib/resnet50_train.py, run on torch_xla's device with OPPROBE_BENCH_XLA=1; its graph
#              saved once with XLA_SAVE_TENSORS_FILE into $OPPROBE_BUILD_DIR/bench), compile it whole, exit
#   batched    opprobe analyze TRACE --backend TARGET --no-cache (the backend's own --probe-batch) on the step's
#              units: the trace's random ops (aten::normal_, uniform_, rand, randint: the weights' initialisation
#              and the made-up batch, which torch_xla's step does not hold) left out with --ignore-op
#   one each   the same with --probe-batch 1 (one compile per unit)
#   script     batched, every unit of the script (the initialisation's too)
# and prints the wall seconds of each process (start, loading and lowering included), the compiles the batched run
# needed, and batched/whole and one-each/whole. Sourced by scripts/bench.
BENCH_TARGETS+=(opprobe opprobe_compile_whole opprobe-pjrt-worker)

bench_batch() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" whole="$OPPROBE_BUILD_DIR/tests/bench/opprobe_compile_whole"
  local trace step
  trace="$(bench_resnet50_trace)"  # scripts/lib/bench/warm.sh
  step="$OPPROBE_BUILD_DIR/bench/resnet50_step.hlo"
  opprobe_chip_plugins  # common.sh
  [ -n "${OPPROBE_XLA_PYTHON:-}" ] || { OPPROBE_XLA_PYTHON="$(opprobe_venv xla)"; export OPPROBE_XLA_PYTHON; }
  export OPPROBE_PJRT_WORKER="$OPPROBE_BUILD_DIR/opprobe-pjrt-worker"
  if [ ! -s "$step" ]; then
    echo "bench: saving torch_xla's graph of the resnet50 training step once into $step" >&2
    rm -f "$step".tmp*
    # torch_xla appends the process ordinal to the file's name: one process, `.0`.
    OPPROBE_BENCH_XLA=1 PJRT_DEVICE=CPU XLA_SAVE_TENSORS_FILE="$step.tmp" XLA_SAVE_TENSORS_FMT=hlo \
      "$(opprobe_venv torch_xla)" "$OPPROBE_ROOT/scripts/lib/resnet50_train.py" >/dev/null
    mv "$step.tmp.0" "$step"
  fi
  local work
  work="$(mktemp -d /tmp/opprobe-bench-batch-XXXXXX)"
  trap 'rm -rf "'"$work"'"' RETURN
  local step_only=(--ignore-op aten::normal_ --ignore-op aten::uniform_ --ignore-op aten::rand --ignore-op aten::randint)
  echo "batch: the resnet50 training step (scripts/lib/resnet50_train.py), wall seconds per process, $(nproc) cores"
  printf '  %-9s %8s %9s %9s %6s %9s %14s %15s %9s\n' target whole_s batched_s one_each units compiles \
    batched/whole one_each/whole script_s
  local target t0 t1 whole_s batched_s one_s script_s units compiles
  for target in tpu:v5e gpu:h100 xla:cpu; do
    t0=$(now); "$whole" "$target" "$step" > "$work/whole.txt"; t1=$(now); whole_s=$(elapsed "$t0" "$t1")
    t0=$(now); "$bin" analyze "$trace" "${step_only[@]}" --backend "$target" --no-cache --no-progress -q \
      -o "$work/batched.json"; t1=$(now); batched_s=$(elapsed "$t0" "$t1")
    t0=$(now); "$bin" analyze "$trace" "${step_only[@]}" --backend "$target" --no-cache --no-progress -q \
      --probe-batch 1 -o "$work/one.json"; t1=$(now); one_s=$(elapsed "$t0" "$t1")
    t0=$(now); "$bin" analyze "$trace" --backend "$target" --no-cache --no-progress -q -o "$work/script.json"
    t1=$(now); script_s=$(elapsed "$t0" "$t1")
    read -r units compiles < <(/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
b = s.get("batching", {})
print(s["unique_probes"], s["unique_probes"] - b.get("units", 0) + b.get("compiles", 0))' "$work/batched.json")
    printf '  %-9s %8s %9s %9s %6s %9s %14s %15s %9s   (%s)\n' "$target" "$whole_s" "$batched_s" "$one_s" "$units" \
      "$compiles" "$(ratio "$batched_s" "$whole_s")" "$(ratio "$one_s" "$whole_s")" "$script_s" "$(cat "$work/whole.txt")"
  done
}
