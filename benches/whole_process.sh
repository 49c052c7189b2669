#!/usr/bin/env bash
# Whole-process figures for the console: CPU seconds per minute, peak RSS and bytes written to the
# terminal per second, with the simulator in a separate process.
#
#   benches/whole_process.sh [ENGINES] [SECONDS] [COLSxROWS]
#
# Needs tmux. Builds the release binary first. Prints one line of figures.
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${1:-8}
seconds=${2:-60}
size=${3:-160x45}
cols=${size%x*}
rows=${size#*x}

cargo build --release --quiet
bin=$PWD/target/release/kvtop
work=$(mktemp -d)
sock="kvtop-bench-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" sim --engines "$engines" >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
for _ in $(seq 50); do
  [ "$(grep -c 'http://127.0.0.1' "$work/sim.out" || true)" -ge "$engines" ] && break
  sleep 0.1
done
targets=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$work/sim.out" | sed 's/^/--target /' | tr '\n' ' ')

export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
tmux -L "$sock" new-session -d -s bench -x "$cols" -y "$rows" "exec $bin $targets"
tmux -L "$sock" pipe-pane -o -t bench "cat >> $work/tty.bytes"
sleep 1
pid=$(tmux -L "$sock" list-panes -t bench -F '#{pane_pid}')
# Measure the steady state: skip the first seconds (start-up and first full paint).
sleep 4
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
b0=$(stat -c %s "$work/tty.bytes" 2>/dev/null || echo 0)
sleep "$seconds"
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
b1=$(stat -c %s "$work/tty.bytes")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
tck=$(getconf CLK_TCK)
awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v t="$tck" -v secs="$seconds" -v b="$((b1 - b0))" -v hwm="$hwm" -v n="$engines" -v size="$size" 'BEGIN {
  cpu = (u + s) / t
  printf "engines=%d size=%s window=%ds cpu_s_per_min=%.3f peak_rss_mib=%.1f tty_bytes_per_s=%.0f\n", n, size, secs, cpu * 60 / secs, hwm / 1024, b / secs
}'
