# `scripts/bench evaluator`: opprobe's HLO interpreter against PyTorch (Debian's 1.13, /usr/bin/python3), both on
# one thread, on the workloads of issue #17: max_pool2d_with_indices (the variadic reduce-window it lowers to),
# f32 GEMM and a 3x3 convolution. Each workload is the aten op lowered by opprobe's built-in lowering table and
# evaluated by hlo::Evaluate (tests/bench/eval_workloads.cpp, opprobe_eval_bench) next to the same op in
# PyTorch (tests/bench/evaluator_torch.py), one workload after the other, and the line gives the ratio with the
# issue's target. Times are process CPU seconds, the best of repeated runs (at least $OPPROBE_BENCH_MIN_TIME s
# of them, default 1), so that other processes on a shared machine shift them less than wall time.
# $OPPROBE_BENCH_EVAL_WORKLOADS replaces the list (opprobe_eval_bench's spelling). The lowered modules are
# written to $OPPROBE_BUILD_DIR/bench/evaluator/. Sourced by scripts/bench.
BENCH_TARGETS+=(opprobe_eval_bench)

bench_evaluator() {
  local bin="$OPPROBE_BUILD_DIR/tests/bench/opprobe_eval_bench" py=/usr/bin/python3
  local torch_timer="$OPPROBE_ROOT/tests/bench/evaluator_torch.py" min_time="${OPPROBE_BENCH_MIN_TIME:-1}"
  local out_dir="$OPPROBE_BUILD_DIR/bench/evaluator"
  local workloads
  read -r -a workloads <<<"${OPPROBE_BENCH_EVAL_WORKLOADS:-max_pool2d_with_indices:2,64,32,32 \
max_pool2d_with_indices:8,64,224,224 max_pool2d_with_indices_backward:8,64,112,112 mm:512,512,512 \
mm:1024,1024,1024 conv2d:8,64,56,56,64}"
  mkdir -p "$out_dir"
  local blas torch_version
  blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown)"
  torch_version="$("$py" -c 'import torch; print(torch.__version__)')"
  echo "evaluator: opprobe's interpreter (hlo::Evaluate of the lowered aten op) vs PyTorch $torch_version, one thread"
  echo "  (process CPU seconds, best of runs; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //');" \
    "load average $(cut -d' ' -f1 /proc/loadavg); torch.mm's BLAS: $blas)"
  printf '  %-46s %10s %10s  %-8s %9s  %s\n' workload opprobe PyTorch "(impl)" ratio target
  local w kind ours line impl theirs target want verdict
  for w in "${workloads[@]}"; do
    kind="${w%%:*}"
    local torch_lines
    torch_lines="$("$py" "$torch_timer" --min-time "$min_time" "$w")"
    ours="$("$bin" --min-time "$min_time" --emit-hlo "$out_dir" "$w" | cut -d' ' -f2)"
    # The implementation the issue's target is set against, and the target.
    case "$kind" in
      max_pool2d_with_indices) want=aten target=20 ;;
      mm) want=onednn target=2 ;;
      conv2d) want=aten target=2 ;;
      *) want="" target="" ;;
    esac
    local first=1
    while read -r line; do
      impl="$(cut -d' ' -f2 <<<"$line")"
      theirs="$(cut -d' ' -f3 <<<"$line")"
      local r
      r="$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2fx", a / b }')"
      verdict="-"
      if [ "$impl" = "$want" ]; then
        verdict="$(awk -v a="$ours" -v b="$theirs" -v t="$target" 'BEGIN { printf "<= %gx: %s", t, (a / b <= t ? "met" : "NOT met") }')"
      fi
      if [ $first -eq 1 ]; then
        printf '  %-46s %10.4f %10.4f  %-8s %9s  %s\n' "${w/:/ }" "$ours" "$theirs" "($impl)" "$r" "$verdict"
        first=0
      else
        printf '  %-46s %10s %10.4f  %-8s %9s  %s\n' "" "" "$theirs" "($impl)" "$r" "$verdict"
      fi
    done <<<"$torch_lines"
  done
  echo "  (the lowered modules: $out_dir/)"
}
