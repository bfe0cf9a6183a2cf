# `scripts/bench fake`: `opprobe capture --fake` of a 7e9-parameter decoder's training step (issue #30.6), against a
# real capture of the same code at tiny width (tests/torch2/scripts/decoder_step.py `7b` and `7b-shape`: 32 layers
# each, as many calls), with PyTorch 2.x (the torch2 environment). Prints each capture's wall seconds and peak
# resident memory (/usr/bin/time) and the ratio of the times (#30.6's target: at most 1.5x); then the whole
# `analyze --fake --fit --backend tpu:v5e` of the 7B step (capture, lowering, probing, building the step as one program
# and compiling it with libtpu; target: under 2 minutes and 4 GB), and the same split fsdp=8 over a v5p 2x2x2 slice.
# Sourced by scripts/bench.
BENCH_TARGETS+=(opprobe)

bench_fake() {
  local bin="$OPPROBE_BUILD_DIR/opprobe" script="$OPPROBE_ROOT/tests/torch2/scripts/decoder_step.py" torch2
  torch2="$(opprobe_venv torch2)"
  local work
  work="$(mktemp -d /tmp/opprobe-bench-fake-XXXXXX)"
  trap 'rm -rf "'"$work"'"' RETURN
  echo "fake: one training step of decoder_step.py (32 layers) captured, $(nproc) cores"
  printf '  %-34s %8s %9s %8s\n' capture wall_s peak_mb calls
  # One capture: label, then `opprobe capture`'s options, then the script's size; its seconds into $work/LABEL.s.
  capture_row() {
    local label="$1" size="${*: -1}" t m calls
    /usr/bin/time -f '%e %M' -o "$work/time" "$bin" capture -q "${@:2:$#-2}" -o "$work/trace.json" -- "$torch2" \
      "$script" "$size" >/dev/null
    read -r t m < "$work/time"
    calls="$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_calls"])' "$work/trace.json")"
    printf '  %-34s %8s %9s %8s\n' "$label" "$t" "$((m / 1024))" "$calls"
    echo "$t" > "$work/$size.s"
  }
  capture_row "7b-shape (tiny width), real" 7b-shape
  capture_row "7b (6.7e9 parameters), --fake" --fake 7b
  echo "  --fake 7b / real 7b-shape: $(ratio "$(cat "$work/7b.s")" "$(cat "$work/7b-shape.s")") (target: at most 1.5)"
  opprobe_chip_plugins  # common.sh
  printf '  %-44s %8s %9s  %s\n' "analyze --fake --fit (7b)" wall_s peak_mb verdict
  local target t m
  for target in "tpu:v5e" "tpu:v5p:2x2x2 --parallel fsdp=8"; do
    # shellcheck disable=SC2086  # the target's words are separate options
    /usr/bin/time -f '%e %M' -o "$work/time" "$bin" analyze --fake --fit --no-cache --no-progress -q --backend $target \
      -o "$work/fit.json" -- "$torch2" "$script" 7b >/dev/null
    read -r t m < "$work/time"
    printf '  %-44s %8s %9s  %s\n' "$target" "$t" "$((m / 1024))" "$(/usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["program"]
print("%s, needs %.2f GiB of %.2f GiB: fits=%s" % (p["outcome"], p["required_bytes"] / 2**30,
                                                  p["device_memory_bytes"] / 2**30, p["fits"]))' "$work/fit.json")"
  done
}
