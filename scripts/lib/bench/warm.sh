# `scripts/bench warm`: what a warm re-analysis costs next to loading the input alone (issue #17.4: at most 1.2x).
# For one input of each kind - the resnet50 training step's trace (captured once, shared with `scripts/bench cache`),
# tests/fixtures/pt2/resnet50.pt2 and ../shared/corpus/hlo/torch_xla_fsdp_mnist_bf16.hlo_dump.txt - it runs
#   parse-only  tests/bench/parse_only.cpp: start, detect the input, load it as `opprobe analyze` does, free, exit
#   no cache    opprobe analyze INPUT --backend rules:cpu --no-cache
#   cold        the same with an empty --cache folder
#   warm        the same again on that folder (every unit a cache hit; checked)
# and prints wall time (median of $OPPROBE_BENCH_REPEAT runs, default 5) and instructions counted by callgrind
# (one run each; steady where times on a shared machine are not: there the Ir ratio is the figure), with
# warm/parse for both. Every run uses -j 1. OPPROBE_BENCH_CALLGRIND=0 skips the (slow) instruction counts.
# Sourced by scripts/bench.
BENCH_PACKAGES+=(valgrind)
BENCH_TARGETS+=(opprobe opprobe_parse_only)

# The resnet50 training step, captured once into $OPPROBE_BUILD_DIR/bench (shared with `scripts/bench cache`).
bench_resnet50_trace() {
  local trace="$OPPROBE_BUILD_DIR/bench/resnet50_train.json"
  mkdir -p "$OPPROBE_BUILD_DIR/bench"
  if [ ! -s "$trace" ]; then
    echo "bench: capturing the resnet50 training step once into $trace" >&2
    "$OPPROBE_BUILD_DIR/opprobe" capture -o "$trace" -- /usr/bin/python3 "$OPPROBE_ROOT/scripts/lib/resnet50_train.py" >/dev/null
  fi
  echo "$trace"
}

bench_warm() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" parse="$OPPROBE_BUILD_DIR/tests/bench/opprobe_parse_only"
  local repeat="${OPPROBE_BENCH_REPEAT:-5}" use_cg="${OPPROBE_BENCH_CALLGRIND:-1}"
  local trace
  trace="$(bench_resnet50_trace)"
  local work
  work="$(mktemp -d /tmp/opprobe-bench-warm-XXXXXX)"
  trap 'rm -rf "'"$work"'"' RETURN

  # The median wall seconds of `repeat` runs of "$@". $work/cold is emptied before each run, so a run on it is a
  # cold run every time.
  warm_time() {
    /usr/bin/python3 - "$repeat" "$work/cold" "$@" <<'PY'
import shutil, statistics, subprocess, sys, time
repeat, cold, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
wall = []
for _ in range(repeat):
    shutil.rmtree(cold, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall.append(time.perf_counter() - t)
print(f"{statistics.median(wall):.3f}")
PY
  }
  # Millions of instructions of one run of "$@" under callgrind.
  warm_instr() {
    [ "$use_cg" = 1 ] || { echo "-"; return; }
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
      awk '/Collected :/ { printf "%.1f", $NF / 1e6 }'
  }
  local -a args=(--backend rules:cpu --no-progress -q --fail-under 0 -j 1 -o "$work/r.json")

  echo "warm: opprobe analyze INPUT --backend rules:cpu with a warm local cache, against loading INPUT alone"
  echo "  ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg);"
  echo "   wall: median of $repeat runs; Ir: millions of instructions, callgrind, one run; target: warm <= 1.2x parse-only)"
  printf '  %-30s %5s %-6s %10s %10s %10s %10s %11s\n' "input" "units" "" "parse-only" "no cache" "cold" "warm" \
    "warm/parse"
  local kind input label units
  for kind in trace pt2 hlo; do
    case "$kind" in
      trace) input="$trace" label="trace: resnet50 training step" ;;
      pt2) input="$OPPROBE_ROOT/tests/fixtures/pt2/resnet50.pt2" label="pt2: resnet50.pt2" ;;
      hlo) input="$OPPROBE_ROOT/../shared/corpus/hlo/torch_xla_fsdp_mnist_bf16.hlo_dump.txt"
           label="hlo: fsdp_mnist_bf16 dump" ;;
    esac
    # The warm runs must be what they claim: every unit a hit, the same report as the cold run.
    rm -rf "$work/warm"
    "$bin" analyze "$input" "${args[@]}" --cache "$work/warm" && cp "$work/r.json" "$work/cold.json"
    "$bin" analyze "$input" "${args[@]}" --cache "$work/warm"
    units=$(/usr/bin/python3 - "$work/cold.json" "$work/r.json" <<'PY'
import json, sys
c, w = (json.load(open(p)) for p in sys.argv[1:])
s = w["summary"]
assert s["cache_hits"] == s["unique_probes"] and s["probes_run"] == 0, s
c.pop("summary"), w.pop("summary")
assert c == w, "the warm report differs from the cold one"
print(s["unique_probes"])
PY
) || { echo "bench warm: the warm run of $input is not a full cache hit with the cold run's report" >&2; return 1; }
    local t_parse t_none t_cold t_warm i_parse i_none i_cold i_warm
    t_parse=$(warm_time "$parse" "$input")
    t_none=$(warm_time "$bin" analyze "$input" "${args[@]}" --no-cache)
    t_cold=$(warm_time "$bin" analyze "$input" "${args[@]}" --cache "$work/cold")
    t_warm=$(warm_time "$bin" analyze "$input" "${args[@]}" --cache "$work/warm")
    i_parse=$(warm_instr "$parse" "$input")
    i_none=$(warm_instr "$bin" analyze "$input" "${args[@]}" --no-cache)
    rm -rf "$work/cold"
    i_cold=$(warm_instr "$bin" analyze "$input" "${args[@]}" --cache "$work/cold")
    i_warm=$(warm_instr "$bin" analyze "$input" "${args[@]}" --cache "$work/warm")
    printf '  %-30s %5s %-6s %10s %10s %10s %10s %10sx\n' "$label" "$units" "wall s" "$t_parse" "$t_none" "$t_cold" \
      "$t_warm" "$(ratio "$t_warm" "$t_parse")"
    if [ "$i_parse" != "-" ]; then
      printf '  %-30s %5s %-6s %10s %10s %10s %10s %10sx\n' "" "" "Ir M" "$i_parse" "$i_none" "$i_cold" "$i_warm" \
        "$(ratio "$i_warm" "$i_parse")"
    fi
  done
}
