# `scripts/bench capture`: what `opprobe capture` costs the script it runs (#17.6). Two workloads, each run plain
# and under `opprobe capture` side by side, with Debian's PyTorch 1.13 (/usr/bin/python3) and with PyTorch 2.x (the
# torch2 environment, requirements/torch2.txt):
#   - a loop of tiny ops (scripts/lib/tiny_ops.py: add, mul and relu on 4-element tensors; per call, the best of 5
#     loops of 30000 calls), captured with the fast path (docs/capture.md; built here for both PyTorch versions) and
#     with the Python path alone (OPPROBE_CAPTURE_FASTPATH=0), next to a Python dispatch mode that only calls the op
#     (the least the Python path can cost);
#   - resnet50's training step (scripts/lib/resnet50_train.py: batch 2x3x64x64, SGD; of 8 steps, the fastest after
#     the first in wall time and, as a steadier second reading on a shared machine, in CPU time of the process, and
#     the first step, which is where the capture meets each distinct call for the first time).
# Each pair alternates $OPPROBE_BENCH_ROUNDS times (default 5), the plain run first in odd rounds and the captured
# one first in even rounds, and the best figure of each side counts, since the machine is shared; both sides run the
# same script with the same environment (PyTorch's default number of threads). Prints the ratios and #17.6's
# targets: the tiny-op loop at most 3x, resnet50's step at most 1.15x (in wall time). Sourced by scripts/bench.
BENCH_TARGETS+=(opprobe)

bench_capture() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" rounds="${OPPROBE_BENCH_ROUNDS:-5}"
  local tiny="$OPPROBE_ROOT/scripts/lib/tiny_ops.py" resnet="$OPPROBE_ROOT/scripts/lib/resnet50_train.py"
  local torch2
  torch2="$(opprobe_venv torch2)"
  opprobe_capture_native /usr/bin/python3
  opprobe_capture_native "$torch2"
  local work
  work="$(mktemp -d /tmp/opprobe-bench-capture-XXXXXX)"
  trap 'rm -rf "'"$work"'"' RETURN
  # The value of KEY in the `opprobe-bench k=v ...` line of a run's output.
  field() { sed -n "s/^opprobe-bench .*$1=\([0-9.]*\).*/\1/p" | tail -1; }
  plain() { "$py" "$@"; }
  captured() { "$bin" capture -q -o "$work/trace.json" -- "$py" "$@"; }
  python_path() { OPPROBE_CAPTURE_FASTPATH=0 "$bin" capture -q -o "$work/trace.json" -- "$py" "$@"; }

  echo "capture: the cost of \`opprobe capture\` to the script it runs, best of $rounds rounds"
  echo "  ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg))"
  local py version
  for py in /usr/bin/python3 "$torch2"; do
    version="$("$py" -c 'import torch; print(torch.__version__)')"
    # best[SIDE.FIGURE]: the best of the rounds for SIDE (plain, captured, python_path, noop).
    local -A best=()
    keep() { best[$1]=$(min "${best[$1]:-}" "$2"); }
    local out k side
    for k in $(seq "$rounds"); do
      for side in plain captured; do
        if [ $((k % 2)) -eq 0 ]; then side=$([ "$side" = plain ] && echo captured || echo plain); fi
        keep "$side.tiny" "$("$side" "$tiny" | field us_per_call)"
        out="$("$side" "$resnet" 8)"
        keep "$side.step" "$(field step_s <<<"$out")"
        keep "$side.step_cpu" "$(field step_cpu_s <<<"$out")"
        keep "$side.first" "$(field first_step_s <<<"$out")"
      done
      keep python_path.tiny "$(python_path "$tiny" | field us_per_call)"
      keep noop.tiny "$(plain "$tiny" 30000 5 noop | field us_per_call)"
    done
    local tp="${best[plain.tiny]}" tc="${best[captured.tiny]}" ts="${best[python_path.tiny]}" tn="${best[noop.tiny]}"
    local rp="${best[plain.step]}" rc="${best[captured.step]}" rpc="${best[plain.step_cpu]}"
    local rcc="${best[captured.step_cpu]}" rp1="${best[plain.first]}" rc1="${best[captured.first]}"
    echo "  torch $version ($py)"
    printf '    %-44s plain %8.3f us  captured %8.3f us  %5sx  (target 3x)\n' \
      "tiny-op loop, per call" "$tp" "$tc" "$(ratio "$tc" "$tp")"
    printf '    %-44s plain %8.3f us  captured %8.3f us  %5sx  (a Python mode that only calls the op: %sx)\n' \
      "  the same, Python path alone" "$tp" "$ts" "$(ratio "$ts" "$tp")" "$(ratio "$tn" "$tp")"
    printf '    %-44s plain %8.3f s   captured %8.3f s   %5sx  (target 1.15x)\n' \
      "resnet50 training step (a later step)" "$rp" "$rc" "$(ratio "$rc" "$rp")"
    printf '    %-44s plain %8.3f s   captured %8.3f s   %5sx\n' \
      "  the same, CPU time of the process" "$rpc" "$rcc" "$(ratio "$rcc" "$rpc")"
    printf '    %-44s plain %8.3f s   captured %8.3f s   %5sx\n' \
      "resnet50 training step (the first)" "$rp1" "$rc1" "$(ratio "$rc1" "$rp1")"
  done
}
