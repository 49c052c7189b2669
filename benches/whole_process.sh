#!/usr/bin/env bash
# Whole-process figures for the console: CPU seconds per minute, peak RSS and bytes written to the
# terminal per second, with the simulator in a separate process.
#
#   benches/whole_process.sh [ENGINES] [SECONDS] [COLSxROWS]
#
# The console runs on a pseudo-terminal of COLSxROWS (benches/pty_meter.py, python3), which counts
# every byte it writes and its frames (bursts of output). Builds the release binary first
# (PROFILE=dist measures the shipping build: fat LTO, one codegen unit; CARGO_FLAGS, e.g.
# --no-default-features, builds the measured console differently, in target/variant, while the
# simulator still runs from the default build; KVTOP_BIN=PATH measures that binary and builds
# nothing; SIM_BIN=PATH runs the simulator from another build). Prints one line of figures.
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${1:-8}
seconds=${2:-60}
size=${3:-160x45}

profile=${PROFILE:-release}
if [ -n "${KVTOP_BIN:-}" ]; then
  # A binary built earlier (e.g. a copy of the build before a change): measured as it is,
  # nothing is built; it also runs the simulator, unless SIM_BIN names another build (an old
  # console measured against today's simulator, side by side with today's console).
  sim_bin=${SIM_BIN:-$KVTOP_BIN}
  bin=$KVTOP_BIN
else
  cargo build --profile "$profile" --quiet --bin kvtop
  sim_bin=$PWD/target/$profile/kvtop
  bin=$sim_bin
fi
if [ -n "${CARGO_FLAGS:-}" ]; then
  # shellcheck disable=SC2086 # CARGO_FLAGS is a list of words
  cargo build --profile "$profile" --quiet --bin kvtop --target-dir target/variant $CARGO_FLAGS
  bin=$PWD/target/variant/$profile/kvtop
fi
work=$(mktemp -d)
cleanup() {
  [ -n "${meter_pid:-}" ] && kill "$meter_pid" 2>/dev/null || true
  [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The simulator runs from its own copy, so the console's RSS counts only its own code pages.
cp "$sim_bin" "$work/kvtop-sim"
# shellcheck source=benches/fleet_lib.sh
. benches/fleet_lib.sh
run_sim "$engines" --engines "$engines"
targets=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$work/sim.out" | sed 's/^/--target /' | tr '\n' ' ')

export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
# shellcheck disable=SC2086 # $targets is a list of words
python3 benches/pty_meter.py --size "$size" --stats "$work/tty.stats" --pid-file "$work/pid" \
  -- "$bin" $targets &
meter_pid=$!
for _ in $(seq 50); do
  [ -s "$work/pid" ] && break
  sleep 0.1
done
pid=$(cat "$work/pid")
# Measure the steady state: skip the first seconds (start-up and first full paint).
sleep 5
tty_at() { tail -1 "$work/tty.stats"; }
read -r _ b0 f0 < <(tty_at)
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
sleep "$seconds"
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
read -r _ b1 f1 < <(tty_at)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
tck=$(getconf CLK_TCK)
awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v t="$tck" -v secs="$seconds" -v b="$((b1 - b0))" -v f="$((f1 - f0))" -v hwm="$hwm" -v n="$engines" -v size="$size" 'BEGIN {
  cpu = (u + s) / t
  printf "engines=%d size=%s window=%ds cpu_s_per_min=%.3f peak_rss_mib=%.1f tty_bytes_per_s=%.0f frames_per_s=%.2f bytes_per_frame=%.0f\n", n, size, secs, cpu * 60 / secs, hwm / 1024, b / secs, f / secs, (f > 0 ? b / f : 0)
}'
