# `scripts/bench trace`: analyzing and loading large traces (issue #17.2). The workloads are generated from the
# resnet18 training-step capture (samples/traces/resnet18_train.json, 375 calls): trace_N.json holds N distinct call
# records, the sample's calls over and over with the source line moved on by 1000 per copy (so no two records are
# the same; their argument signatures repeat, as in a long training run); trace_N_same.json holds N records that are
# copies of the sample's calls as they are (few distinct records in a large file). For each file it times, side by
# side: `opprobe analyze --backend rules:cpu --no-cache` (CPU seconds and peak RSS, /usr/bin/time), the trace loader
# alone (tests/bench/opprobe_trace_load: the file into an analyzer::Graph), and Python's json.load of the same file;
# it prints the ratios and the targets of the issue for the largest distinct workload: analyze under 10 s of CPU and
# under 2x the file's size in peak memory, loading at least 5x faster than json.load. $OPPROBE_BENCH_TRACE_SIZES
# (default "10000 100000 1000000") picks the record counts; the files are kept in $OPPROBE_BUILD_DIR/bench.
# Sourced by scripts/bench.
BENCH_PACKAGES+=(time)
BENCH_TARGETS+=(opprobe opprobe_trace_load)

# Writes the workload `out` with `records` records from `sample`; `distinct` 1 moves lines on per copy, 0 repeats.
bench_trace_generate() {
  local sample="$1" records="$2" distinct="$3" out="$4"
  /usr/bin/python3 - "$sample" "$records" "$distinct" "$out" <<'PY'
import json, os, sys
sample, records, distinct, out = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
doc = json.load(open(sample))
marker = 987654321
templates = []  # each call as its JSON text split around its source line
for call in doc["calls"]:
    call = dict(call)
    line = call["loc"]["line"]
    call["loc"] = dict(call["loc"], line=marker)
    before, after = json.dumps(call, separators=(",", ":")).split(str(marker))
    templates.append((before, line, after))
tmp = out + ".tmp"
with open(tmp, "w") as f:
    f.write('{\n "format": "opprobe-trace",\n "version": 1,\n "torch_version": %s,\n "script": "bench_trace.py",\n'
            ' "status": "ok",\n "exit_status": 0,\n "total_calls": %d,\n "calls": [\n'
            % (json.dumps(doc.get("torch_version", "")), records))
    n = len(templates)
    for i in range(records):
        before, line, after = templates[i % n]
        if distinct:
            line += 1000 * (i // n)
        f.write("  %s%d%s%s\n" % (before, line, after, "," if i + 1 < records else ""))
    f.write(" ]\n}\n")
os.replace(tmp, out)
PY
}

# "CPU-seconds peak-RSS-MiB" of a command (stdout discarded); fails when the command does.
bench_trace_measure() {
  local out
  out="$(mktemp)"
  if ! /usr/bin/time -f "%U %S %M" -o "$out" "$@" >/dev/null; then
    echo "bench trace: failed: $*" >&2
    cat "$out" >&2
    rm -f "$out"
    return 1
  fi
  awk '{ printf "%.2f %.0f\n", $1 + $2, $3 / 1024 }' "$out"
  rm -f "$out"
}

bench_trace() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" load="$OPPROBE_BUILD_DIR/tests/bench/opprobe_trace_load"
  local sample="$OPPROBE_ROOT/samples/traces/resnet18_train.json"
  local sizes="${OPPROBE_BENCH_TRACE_SIZES:-10000 100000 1000000}"
  local dir="$OPPROBE_BUILD_DIR/bench"
  mkdir -p "$dir"
  echo "trace: analyze --backend rules:cpu --no-cache, the loader alone, and Python's json.load, on the same files"
  echo "  ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average" \
    "$(cut -d' ' -f1 /proc/loadavg); CPU = user + system seconds; RSS = peak resident set)"
  printf '  %-22s %9s | %10s %10s %8s | %9s %9s %9s\n' "workload" "file MiB" "analyze s" "RSS MiB" "RSS/file" \
    "load s" "json.load" "speed-up"
  local n kind file largest="" a_cpu a_rss l_cpu p_cpu mib
  for n in $sizes; do
    for kind in distinct same; do
      file="$dir/trace_${n}.json"
      [ "$kind" = same ] && file="$dir/trace_${n}_same.json"
      if [ ! -s "$file" ] || [ "$file" -ot "$sample" ]; then
        bench_trace_generate "$sample" "$n" "$([ "$kind" = distinct ] && echo 1 || echo 0)" "$file"
      fi
      mib=$(awk -v b="$(stat -c %s "$file")" 'BEGIN { printf "%.1f", b / 1048576 }')
      read -r a_cpu a_rss < <(bench_trace_measure "$bin" analyze "$file" --backend rules:cpu --no-cache --no-progress)
      read -r l_cpu _ < <(bench_trace_measure "$load" "$file")
      read -r p_cpu _ < <(bench_trace_measure /usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$file")
      printf '  %-22s %9s | %10s %10s %7sx | %9s %9s %8sx\n' "$n records, $kind" "$mib" "$a_cpu" "$a_rss" \
        "$(awk -v r="$a_rss" -v m="$mib" 'BEGIN { printf "%.2f", r / m }')" "$l_cpu" "$p_cpu" \
        "$(awk -v p="$p_cpu" -v l="$l_cpu" 'BEGIN { printf "%.1f", (l > 0 ? p / l : 0) }')"
      [ "$kind" = distinct ] && largest="$n $mib $a_cpu $a_rss $l_cpu $p_cpu"
    done
  done
  read -r n mib a_cpu a_rss l_cpu p_cpu <<<"$largest"
  echo "  targets ($n distinct records, issue #17.2):"
  printf '    analyze CPU        %8s s    (target: under 10 s)        %s\n' "$a_cpu" \
    "$(awk -v c="$a_cpu" 'BEGIN { print (c < 10 ? "met" : "NOT MET") }')"
  printf '    analyze peak RSS   %8s MiB  (target: under 2x the file, %s MiB)  %s\n' "$a_rss" \
    "$(awk -v m="$mib" 'BEGIN { printf "%.0f", 2 * m }')" \
    "$(awk -v r="$a_rss" -v m="$mib" 'BEGIN { print (r < 2 * m ? "met" : "NOT MET") }')"
  printf '    loading speed-up   %8sx    (target: at least 5x json.load)  %s\n' \
    "$(awk -v p="$p_cpu" -v l="$l_cpu" 'BEGIN { printf "%.1f", (l > 0 ? p / l : 0) }')" \
    "$(awk -v p="$p_cpu" -v l="$l_cpu" 'BEGIN { print (l > 0 && p / l >= 5 ? "met" : "NOT MET") }')"
}
