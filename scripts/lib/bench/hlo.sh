# `scripts/bench hlo`: HLO text throughput (issue #17.3: parse + analyze at 100 MB/s or more, and at least as fast
# as XLA's own HLO text parser). The workload is generated once into $OPPROBE_BUILD_DIR/bench/big.hlo by
# tests/bench/gen_big_hlo.py: the corpus's BERT training step (torch_xla_neuron_bert_SyncTensorsGraph.1864) with its
# entry computation repeated to $OPPROBE_BENCH_HLO_MB megabytes (default 35: about 170k instructions). On it, each
# the best CPU time (user + system) of $OPPROBE_BENCH_REPEAT runs (default 3):
#   cat          cat FILE > /dev/null (reading the file)
#   xla parse    jaxlib's HLO text parser, jaxlib._hlo.hlo_module_from_text (XLA's HloParser, no verifier), from
#                the xla environment (requirements/xla.txt), timed inside Python around the one call
#   parse-only   tests/bench/parse_only.cpp: the process that loads the file as `opprobe analyze` does, and exits
#   analyze      opprobe analyze FILE --backend rules:cpu --no-cache -j 1 (parse + analyze + report)
# and prints MB/s and the ratios side by side. Sourced by scripts/bench.
BENCH_TARGETS+=(opprobe opprobe_parse_only)

bench_hlo() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" parse="$OPPROBE_BUILD_DIR/tests/bench/opprobe_parse_only"
  local repeat="${OPPROBE_BENCH_REPEAT:-3}" mb="${OPPROBE_BENCH_HLO_MB:-35}"
  local source="$OPPROBE_ROOT/../shared/corpus/hlo/torch_xla_neuron_bert_SyncTensorsGraph.1864.hlo.txt"
  local big="$OPPROBE_BUILD_DIR/bench/big_${mb}mb.hlo"
  mkdir -p "$OPPROBE_BUILD_DIR/bench"
  local gen
  gen=$(/usr/bin/python3 "$OPPROBE_ROOT/tests/bench/gen_big_hlo.py" "$source" "$big" "$mb")
  local py
  py="$(opprobe_venv xla)" || return 1
  local work
  work="$(mktemp -d /tmp/opprobe-bench-hlo-XXXXXX)"
  trap 'rm -rf "'"$work"'"' RETURN

  # The best CPU seconds (user + system) of `repeat` runs of "$@" (its output discarded).
  hlo_cpu() {
    /usr/bin/python3 - "$repeat" "$@" <<'PY'
import os, subprocess, sys
repeat, cmd = int(sys.argv[1]), sys.argv[2:]
best = None
for _ in range(repeat):
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1), os.dup2(fd, 2)
        os.execvp(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench hlo: {' '.join(cmd)} failed")
    t = ru.ru_utime + ru.ru_stime
    best = t if best is None else min(best, t)
print(f"{best:.3f}")
PY
  }
  # XLA's parser: the best CPU seconds of `repeat` calls, measured in the process around the call.
  local t_xla
  t_xla=$("$py" - "$repeat" "$big" <<'PY'
import sys, time
from jaxlib import _hlo
repeat, path = int(sys.argv[1]), sys.argv[2]
text = open(path, encoding="utf-8").read()
best = None
for _ in range(repeat):
    t = time.process_time()
    module = _hlo.hlo_module_from_text(text)
    t = time.process_time() - t
    del module
    best = t if best is None else min(best, t)
print(f"{best:.3f}")
PY
) || { echo "bench hlo: XLA's parser failed on $big" >&2; return 1; }
  local t_cat t_parse t_analyze
  t_cat=$(hlo_cpu cat "$big")
  t_parse=$(hlo_cpu "$parse" "$big")
  t_analyze=$(hlo_cpu "$bin" analyze "$big" --backend rules:cpu --no-cache --no-progress -q --fail-under 0 -j 1 \
    -o "$work/r.json")
  local size
  size=$(stat -c %s "$big")
  mbps() { awk -v s="$size" -v t="$1" 'BEGIN { if (t > 0) printf "%.1f", s / 1e6 / t; else printf "inf" }'; }
  echo "hlo: HLO text throughput ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"
  echo "  load $(cut -d' ' -f1-3 /proc/loadavg); CPU seconds, user + system, best of $repeat)"
  echo "  workload: $gen"
  printf '  %-44s %9s %9s %14s\n' "" "CPU s" "MB/s" "vs XLA parse"
  printf '  %-44s %9s %9s %14s\n' "cat" "$t_cat" "$(mbps "$t_cat")" "-"
  printf '  %-44s %9s %9s %14s\n' "XLA parse (jaxlib hlo_module_from_text)" "$t_xla" "$(mbps "$t_xla")" "1.00x"
  printf '  %-44s %9s %9s %13sx\n' "opprobe parse-only (opprobe_parse_only)" "$t_parse" "$(mbps "$t_parse")" \
    "$(ratio "$t_xla" "$t_parse")"
  printf '  %-44s %9s %9s %13sx\n' "opprobe analyze --backend rules:cpu" "$t_analyze" "$(mbps "$t_analyze")" \
    "$(ratio "$t_xla" "$t_analyze")"
  echo "  (vs XLA parse: how many times faster than XLA's parser; targets: analyze >= 100 MB/s and >= 1.00x)"
}
