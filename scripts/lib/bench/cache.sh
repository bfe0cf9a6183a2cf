# `scripts/bench cache`: shared probe caches. The resnet50 training step with a `cmd:` compiler that sleeps
# $OPPROBE_BENCH_SLEEP seconds (default 0.5) per probe unit: one runner cold, $OPPROBE_BENCH_SHARDS (default 4)
# `--shard` runners at once against one redis-server plus the final report, and a warm run against the server
# (fresh local cache) next to a warm local run. Each runner probes with -j $OPPROBE_BENCH_JOBS (default 1: one
# compile at a time, as a compiler that uses every core would). Sourced by scripts/bench.
BENCH_PACKAGES+=(redis-server)
BENCH_TARGETS+=(opprobe opprobe_fake_compiler)

bench_cache() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" fake="$OPPROBE_BUILD_DIR/tests/fake_compilers/opprobe_fake_compiler"
  local sleep_s="${OPPROBE_BENCH_SLEEP:-0.5}" shards="${OPPROBE_BENCH_SHARDS:-4}" jobs="${OPPROBE_BENCH_JOBS:-1}"
  local trace
  trace="$(bench_resnet50_trace)"  # scripts/lib/bench/warm.sh
  local work
  work="$(mktemp -d /tmp/opprobe-bench-XXXXXX)"
  local port
  port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" --daemonize no \
    --logfile "$work/redis.log" &
  local redis_pid=$!
  trap 'kill '"$redis_pid"' 2>/dev/null; wait '"$redis_pid"' 2>/dev/null; rm -rf "'"$work"'"' RETURN
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  local url="redis://127.0.0.1:$port"
  # A unique template per bench run keeps other caches (and earlier runs) out of the figures.
  local backend="cmd:$fake --sleep=$sleep_s {hlo_txt} --log=$work/probes.log"
  run() { "$bin" analyze "$trace" --backend "$backend" --no-progress -q -j "$jobs" "$@"; }

  local t0 t1 cold shard_time warm_local warm_remote units
  t0=$(now); run --cache "$work/local-one" -o "$work/one.json"; t1=$(now); cold=$(elapsed "$t0" "$t1")
  units=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["unique_probes"])' "$work/one.json")

  t0=$(now)
  local pids=()
  for k in $(seq "$shards"); do
    run --cache "$work/local-shard$k" --cache "$url" --shard "$k/$shards" -o "$work/shard$k.json" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  run --cache "$work/local-final" --cache "$url" -o "$work/final.json"
  t1=$(now); shard_time=$(elapsed "$t0" "$t1")

  # Warm runs take tens of milliseconds: the best of 5 each, in milliseconds; every remote run gets an empty local cache.
  run_ms() {
    local s e
    s=$(now); run "$@"; e=$(now)
    awk -v a="$s" -v b="$e" 'BEGIN { printf "%.1f", (b - a) * 1000 }'
  }
  local i
  warm_local="" warm_remote=""
  for i in 1 2 3 4 5; do
    warm_local=$(min "$warm_local" "$(run_ms --cache "$work/local-one" -o "$work/warm-local.json")")
    rm -rf "$work/local-fresh"
    warm_remote=$(min "$warm_remote" "$(run_ms --cache "$work/local-fresh" --cache "$url" -o "$work/warm-remote.json")")
  done

  local final_runs same
  final_runs=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["probes_run"])' "$work/final.json")
  same=$(/usr/bin/python3 - "$work/one.json" "$work/final.json" "$work/warm-remote.json" <<'PY'
import json, sys
r = [json.load(open(p)) for p in sys.argv[1:]]
for x in r: x.pop("summary")
print("identical" if all(x == r[0] for x in r) else "DIFFERENT")
PY
)
  echo "cache: resnet50 training step, $units unique probe units, cmd: compiler sleeping $sleep_s s per unit, -j $jobs per runner"
  echo "  ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); reports of all runs: $same)"
  printf '  %-52s %8s s\n' "one runner, cold (local cache)" "$cold"
  printf '  %-52s %8s s   %sx faster than one runner (the final report probed %s units)\n' \
    "$shards shards at once on one redis + final report" "$shard_time" "$(ratio "$cold" "$shard_time")" "$final_runs"
  printf '  %-52s %8s ms  (best of 5)\n' "warm, local cache" "$warm_local"
  printf '  %-52s %8s ms  %sx the warm local time (best of 5)\n' "warm, redis only (empty local cache)" "$warm_remote" \
    "$(ratio "$warm_remote" "$warm_local")"
}

