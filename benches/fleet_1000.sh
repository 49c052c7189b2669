#!/usr/bin/env bash
# kvtop and Prometheus 2.42 scraping the same simulated fleet side by side, in the same run.
#
#   benches/fleet_1000.sh [ENGINES] [SECONDS] [INTERVAL]     # default: 1000 60 1s
#
# `kvtop sim --engines ENGINES` (every engine healthy) runs in its own process. Then, at the same
# time, the console scrapes every engine directly every INTERVAL in a tmux pane of 200x60, and
# Prometheus scrapes the same targets every INTERVAL into its own TSDB in a temporary directory.
# After 20 s of settling both are measured over SECONDS: CPU in cores (utime + stime from
# /proc/PID/stat), peak RSS (VmHWM), and how many targets each had up on average (the console's
# header read every 5 s; Prometheus' avg_over_time of its targets' `up`), from which follows the
# CPU per 1,000 successful scrapes: on a machine too busy for the simulator to answer every
# scrape within the interval, that is the figure to compare. The simulator's CPU is shown for
# reference. Needs tmux, curl and prometheus (PATH or /opt/kvtop-ci/prometheus/usr/bin).
# PROMETHEUS=0 measures the console alone, with both cores left to it and the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${1:-1000}
seconds=${2:-60}
interval=${3:-1s}

ulimit -n "$(ulimit -Hn)"
export PATH="$PATH:/opt/kvtop-ci/prometheus/usr/bin"
# KVTOP_BIN=PATH measures that build (e.g. the shipped one) instead of building the release one;
# SIM_BIN=PATH runs the simulator from another build (an old console against today's simulator).
# BESIDE=PATH runs that build as a second console in the same run, against the same simulator and
# on its own state directory: two builds compared under the same conditions (this machine's
# speed drifts by 20 % between runs a minute apart; see benches/README.md, 29 November (9)). Run
# it again with the two builds swapped.
if [ -n "${KVTOP_BIN:-}" ]; then
  bin=$(realpath "$KVTOP_BIN")
else
  cargo build --release --quiet --bin kvtop
  bin=$PWD/target/release/kvtop
fi
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
cp "${SIM_BIN:-$bin}" "$work/kvtop-sim"
run_sim "$engines" --engines "$engines" --scenario healthy@0
engine_urls | write_console_config "$interval"
with_prometheus=${PROMETHEUS:-1}
[ "$with_prometheus" = 1 ] && engine_urls | write_prometheus_config "$interval"

[ "$with_prometheus" = 1 ] && start_prometheus
export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
tmux -L "$sock" new-session -d -s bench -x 200 -y 60 "exec $bin --config $work/kvtop.toml"
sleep 1
pid=$(tmux -L "$sock" list-panes -t bench -F '#{pane_pid}')
beside=${BESIDE:+$(realpath "$BESIDE")}
if [ -n "$beside" ]; then
  tmux -L "$sock" new-session -d -s beside -x 200 -y 60 \
    "exec env XDG_STATE_HOME=$work/state-beside XDG_CONFIG_HOME=$work/config-beside $beside --config $work/kvtop.toml"
  sleep 1
  beside_pid=$(tmux -L "$sock" list-panes -t beside -F '#{pane_pid}')
fi

console_up() {
  tmux -L "$sock" capture-pane -p -t bench | head -1 | grep -o '[0-9]* up' | grep -o '[0-9]*' || echo 0
}

sleep 20 # start-up, first scrapes of every target, Prometheus' first head block
load0=$(load1)
k0=$(cpu_ticks "$pid")
[ -n "$beside" ] && b0=$(cpu_ticks "$beside_pid")
[ "$with_prometheus" = 1 ] && p0=$(cpu_ticks "$prom_pid")
s0=$(cpu_ticks "$sim_pid")
up_sum=0
up_reads=0
elapsed=0
while [ "$elapsed" -lt "$seconds" ]; do
  step=$((seconds - elapsed < 5 ? seconds - elapsed : 5))
  sleep "$step"
  elapsed=$((elapsed + step))
  up_sum=$((up_sum + $(console_up)))
  up_reads=$((up_reads + 1))
done
k1=$(cpu_ticks "$pid")
[ -n "$beside" ] && b1=$(cpu_ticks "$beside_pid")
[ "$with_prometheus" = 1 ] && p1=$(cpu_ticks "$prom_pid")
s1=$(cpu_ticks "$sim_pid")
load1_end=$(load1)
[ "$with_prometheus" = 1 ] && prom_up=$(prometheus_value "sum(avg_over_time(up[${seconds}s]))")
kv_up=$(awk -v s="$up_sum" -v n="$up_reads" 'BEGIN { printf "%.0f", s / n }')
tck=$(getconf CLK_TCK)
iv_s=$(awk -v i="$interval" 'BEGIN { v = i + 0; if (i ~ /ms$/) v /= 1000; print v }')
cores() { awk -v d="$1" -v t="$tck" -v s="$seconds" 'BEGIN { printf "%.3f", d / t / s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# CPU milliseconds per 1,000 successful scrapes: ticks over (average up × scrapes per target).
per_k() { awk -v d="$1" -v t="$tck" -v up="$2" -v s="$seconds" -v iv="$iv_s" 'BEGIN {
  n = up * s / iv; if (n > 0) printf "%.0f", d / t * 1000 / n * 1000; else print "-" }'; }

echo "engines=$engines interval=$interval window=${seconds}s load1=$load0..$load1_end"
printf '%-12s %8s %14s %12s %22s\n' process cores peak_rss_mib avg_up cpu_ms_per_1k_scrapes
printf '%-12s %8s %14s %12s %22s\n' kvtop "$(cores $((k1 - k0)))" "$(mib "$(status_kib "$pid" VmHWM)")" \
  "$kv_up/$engines" "$(per_k $((k1 - k0)) "$kv_up")"
if [ -n "$beside" ]; then
  printf '%-12s %8s %14s\n' "beside" "$(cores $((b1 - b0)))" "$(mib "$(status_kib "$beside_pid" VmHWM)")"
fi
if [ "$with_prometheus" = 1 ]; then
  printf '%-12s %8s %14s %12s %22s\n' prometheus "$(cores $((p1 - p0)))" "$(mib "$(status_kib "$prom_pid" VmHWM)")" \
    "$(printf %.0f "$prom_up")/$engines" "$(per_k $((p1 - p0)) "$prom_up")"
fi
printf '%-12s %8s %14s %12s %22s\n' "(simulator)" "$(cores $((s1 - s0)))" "$(mib "$(status_kib "$sim_pid" VmHWM)")" - -
