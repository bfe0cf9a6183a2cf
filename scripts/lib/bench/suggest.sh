# `scripts/bench suggest`: what `analyze --suggest` adds to an analysis (issue #31.4: at most 1.2x). For the resnet50
# training step's trace (shared with `scripts/bench warm`) and a Hugging Face GPT-2 training step
# (scripts/lib/hf_train.py, captured once into $OPPROBE_BUILD_DIR/bench with the hf environment), on rules:neuron-trn1
# and rules:cpu (which accept all or nearly all of their calls: what --suggest costs a model that runs) and a profile
# without 64-bit integers (scripts/lib/bench/no_s64.json: every index and count refused, so --suggest tries its
# rewrites on dozens of calls), it runs
#   plain     opprobe analyze TRACE --backend B --no-cache -j 1
#   suggest   the same with --suggest
# and prints the median wall time of $OPPROBE_BENCH_REPEAT runs of each, alternately (default 15), the calls suggestions were made for, and
# suggest/plain. Sourced by scripts/bench.
BENCH_TARGETS+=(opprobe)

bench_hf_trace() {
  local trace="$OPPROBE_BUILD_DIR/bench/hf_gpt2_train.json"
  mkdir -p "$OPPROBE_BUILD_DIR/bench"
  if [ ! -s "$trace" ]; then
    echo "bench: capturing the Hugging Face GPT-2 training step once into $trace" >&2
    "$OPPROBE_BUILD_DIR/opprobe" capture -o "$trace" -- "$(opprobe_venv zoo)" "$OPPROBE_ROOT/scripts/lib/hf_train.py" >/dev/null
  fi
  echo "$trace"
}

bench_suggest() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" repeat="${OPPROBE_BENCH_REPEAT:-15}"
  local resnet hf work
  resnet="$(bench_resnet50_trace)"  # scripts/lib/bench/warm.sh
  hf="$(bench_hf_trace)"
  work="$(mktemp -d /tmp/opprobe-bench-suggest-XXXXXX)"
  trap 'rm -rf "'"$work"'"' RETURN
  # The median wall seconds of `repeat` runs of each of two commands, run alternately (a busy machine's drift falls on
  # both): "plain suggest". The commands are given as one argument each, split on spaces.
  suggest_time() {
    /usr/bin/python3 - "$repeat" "$1" "$2" <<'PY'
import statistics, subprocess, sys, time
repeat, cmds = int(sys.argv[1]), [c.split(" ") for c in sys.argv[2:]]
wall = [[], []]
for _ in range(repeat):
    for k, cmd in enumerate(cmds):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall[k].append(time.perf_counter() - t)
print(" ".join(f"{statistics.median(w):.3f}" for w in wall))
PY
  }
  echo "suggest: opprobe analyze TRACE --backend B --no-cache -j 1, without and with --suggest"
  echo "  ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); wall: median of $repeat runs each, alternately; target: suggest <= 1.2x plain)"
  printf '  %-34s %-18s %8s %8s %8s %9s %8s\n' "input" "backend" "calls" "suggested" "plain s" "suggest s" "ratio"
  local label trace backend t_plain t_suggest counts
  for label in resnet50 hf; do
    case "$label" in
      resnet50) trace="$resnet" ;;
      hf) trace="$hf" ;;
    esac
    for backend in rules:neuron-trn1 rules:cpu "rules:$OPPROBE_ROOT/scripts/lib/bench/no_s64.json"; do
      "$bin" analyze "$trace" --backend "$backend" --no-cache -j 1 --no-progress -q --suggest -o "$work/r.json"
      counts=$(/usr/bin/python3 - "$work/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
entries = [e for e in r["unsupported_operators"]["aten"] if "part_of" not in e]
print(r["summary"]["aten_calls"], sum(1 for e in entries if e.get("suggestions")))
PY
)
      read -r t_plain t_suggest < <(suggest_time \
        "$bin analyze $trace --backend $backend --no-cache -j 1 --no-progress -q -o $work/p.json" \
        "$bin analyze $trace --backend $backend --no-cache -j 1 --no-progress -q --suggest -o $work/s.json")
      printf '  %-34s %-18s %8s %8s %8s %9s %7sx\n' "$label training step" "${backend##*/}" ${counts} "$t_plain" \
        "$t_suggest" "$(ratio "$t_suggest" "$t_plain")"
    done
  done
}
