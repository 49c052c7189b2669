#!/usr/bin/env bash
# kvtop and Prometheus 2.42 scraping the same simulated fleet side by side, in the same run.
#
#   benches/fleet_1000.sh [ENGINES] [SECONDS] [INTERVAL]     # default: 1000 60 1s
#
# `kvtop sim --engines ENGINES` (every engine healthy) runs in its own process. Then, at the same
# time, the console scrapes every engine directly every INTERVAL in a tmux pane of 200x60, and
# Prometheus scrapes the same targets every INTERVAL into its own TSDB in a temporary directory.
# After 20 s of settling both are measured over SECONDS: CPU in cores (utime + stime from
# /proc/PID/stat), peak RSS (VmHWM), and how many targets each had up (the console's header,
# read every 5 s, lowest reading; Prometheus' count(up == 1) at the end). The simulator's CPU is
# shown for reference. Needs tmux, curl and prometheus (PATH or /opt/kvtop-ci/prometheus/usr/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${1:-1000}
seconds=${2:-60}
interval=${3:-1s}

ulimit -n "$(ulimit -Hn)"
export PATH="$PATH:/opt/kvtop-ci/prometheus/usr/bin"
cargo build --release --quiet --bin kvtop
bin=$PWD/target/release/kvtop
work=$(mktemp -d)
sock="kvtop-fleet-bench-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${prom_pid:-}" ] && kill "$prom_pid" 2>/dev/null || true
  [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=benches/fleet_lib.sh
. benches/fleet_lib.sh

# With a --scenario the baseline is healthy: every engine serves (none is down by design).
start_sim "$engines" --engines "$engines" --scenario healthy@0
engine_urls | write_console_config "$interval"
engine_urls | write_prometheus_config "$interval"

start_prometheus
export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
tmux -L "$sock" new-session -d -s bench -x 200 -y 60 "exec $bin --config $work/kvtop.toml"
sleep 1
pid=$(tmux -L "$sock" list-panes -t bench -F '#{pane_pid}')

console_up() {
  tmux -L "$sock" capture-pane -p -t bench | head -1 | grep -o '[0-9]* up' | grep -o '[0-9]*' || echo 0
}

sleep 20 # start-up, first scrapes of every target, Prometheus' first head block
load0=$(load1)
k0=$(cpu_ticks "$pid")
p0=$(cpu_ticks "$prom_pid")
s0=$(cpu_ticks "$sim_pid")
min_up=$engines
elapsed=0
while [ "$elapsed" -lt "$seconds" ]; do
  step=$((seconds - elapsed < 5 ? seconds - elapsed : 5))
  sleep "$step"
  elapsed=$((elapsed + step))
  up=$(console_up)
  [ "$up" -lt "$min_up" ] && min_up=$up
done
k1=$(cpu_ticks "$pid")
p1=$(cpu_ticks "$prom_pid")
s1=$(cpu_ticks "$sim_pid")
load1_end=$(load1)
prom_up=$(prometheus_up)
tck=$(getconf CLK_TCK)
cores() { awk -v d="$1" -v t="$tck" -v s="$seconds" 'BEGIN { printf "%.3f", d / t / s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

echo "engines=$engines interval=$interval window=${seconds}s load1=$load0..$load1_end"
printf '%-12s %8s %14s %10s\n' process cores peak_rss_mib targets_up
printf '%-12s %8s %14s %10s\n' kvtop "$(cores $((k1 - k0)))" "$(mib "$(status_kib "$pid" VmHWM)")" "$min_up/$engines"
printf '%-12s %8s %14s %10s\n' prometheus "$(cores $((p1 - p0)))" "$(mib "$(status_kib "$prom_pid" VmHWM)")" "$prom_up/$engines"
printf '%-12s %8s %14s %10s\n' "(simulator)" "$(cores $((s1 - s0)))" "$(mib "$(status_kib "$sim_pid" VmHWM)")" -
