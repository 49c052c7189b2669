#!/usr/bin/env bash
# Whole-process figures for the console reading a fleet through Prometheus: the simulator
# serves ENGINES engines (and a dcgm-exporter per 8), a real Prometheus scrapes them every
# SCRAPE seconds, and kvtop (--prometheus, no direct targets) polls Prometheus every INTERVAL.
# Prints kvtop's CPU seconds per minute and peak RSS, Prometheus' CPU, and the queries per
# interval kvtop sent (from Prometheus' own query counter).
#
#   benches/prometheus_whole_process.sh [ENGINES] [SECONDS] [INTERVAL] [SCRAPE]
#
# With RECORD=1 the console also records (--record) and the recording's growth over the window
# is printed as MB per hour.
#
# Needs tmux, prometheus (PATH or /opt/kvtop-ci/prometheus/usr/bin) and an open-file limit
# above ENGINES × 1.2 (raised here with ulimit -n). Uses the release binary (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${1:-1000}
seconds=${2:-60}
interval=${3:-1s}
scrape=${4:-15s}

ulimit -n "$(ulimit -Hn)"
export PATH="$PATH:/opt/kvtop-ci/prometheus/usr/bin"
[ -x target/release/kvtop ] || cargo build --release --quiet --bin kvtop
bin=$PWD/target/release/kvtop
work=$(mktemp -d)
sock="kvtop-prom-bench-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${prom_pid:-}" ] && kill "$prom_pid" 2>/dev/null || true
  [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" sim --engines "$engines" >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
expected=$((engines + (engines + 7) / 8))
for _ in $(seq 300); do
  [ "$(grep -c 'http://127.0.0.1' "$work/sim.out" || true)" -ge "$expected" ] && break
  sleep 0.1
done

# One target per engine labelled with its pod; the exporters as they are.
{
  echo "global: {scrape_interval: $scrape, scrape_timeout: $scrape}"
  echo "scrape_configs:"
  echo "  - job_name: vllm"
  echo "    static_configs:"
  grep -E '^vllm-' "$work/sim.out" | grep -v 'down:' | while read -r name _; do
    url=$(grep -E "^$name " "$work/sim.out" | grep -o 'http://[^ ]*')
    hp=${url#http://}; hp=${hp%/metrics}
    echo "      - {targets: ['$hp'], labels: {pod: '$name', namespace: llm}}"
  done
  echo "  - job_name: dcgm"
  echo "    static_configs:"
  grep -E '^dcgm-exporter-' "$work/sim.out" | grep -o 'http://[^ ]*' | while read -r url; do
    hp=${url#http://}; hp=${hp%/metrics}
    echo "      - {targets: ['$hp']}"
  done
} >"$work/prometheus.yml"

prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address=127.0.0.1:0 >/dev/null 2>"$work/prom.log" &
prom_pid=$!
for _ in $(seq 100); do
  grep -q 'Listening on' "$work/prom.log" && break
  sleep 0.1
done
port=$(grep -o 'Listening on" address=127.0.0.1:[0-9]*' "$work/prom.log" | sed 's/.*://' || true)
if [ -z "$port" ]; then
  echo "prometheus did not start:" >&2
  tail -5 "$work/prom.log" >&2
  head -20 "$work/prometheus.yml" >&2
  exit 1
fi
url="http://127.0.0.1:$port"
# Two scrapes of everything before kvtop starts (rates need two samples).
scrape_s=${scrape%s}
sleep $((6 + 2 * scrape_s))

export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
cat >"$work/kvtop.toml" <<EOT
[scrape]
interval = "$interval"
[prometheus]
url = "$url"
timeout = "5s"
EOT
record=()
[ "${RECORD:-0}" = 1 ] && record=(--record "$work/rec.kvr")
tmux -L "$sock" new-session -d -s bench -x 160 -y 45 "exec $bin --config $work/kvtop.toml ${record[*]}"
size() { stat -c %s "$work/rec.kvr" 2>/dev/null || echo 0; }
sleep 1
pid=$(tmux -L "$sock" list-panes -t bench -F '#{pane_pid}')
queries() {
  curl -s "$url/metrics" | awk '/^prometheus_engine_query_duration_seconds_count\{slice="inner_eval"\}/ {print $2}'
}
sleep 10 # backfill and the first cycles
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
read -r pu0 ps0 < <(awk '{print $14, $15}' "/proc/$prom_pid/stat")
q0=$(queries)
b0=$(size)
sleep "$seconds"
b1=$(size)
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
read -r pu1 ps1 < <(awk '{print $14, $15}' "/proc/$prom_pid/stat")
q1=$(queries)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
rows=$(tmux -L "$sock" capture-pane -p -t bench | head -1)
tck=$(getconf CLK_TCK)
awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v pu="$((pu1 - pu0))" -v ps="$((ps1 - ps0))" \
  -v t="$tck" -v secs="$seconds" -v hwm="$hwm" -v n="$engines" -v q0="$q0" -v q1="$q1" \
  -v iv="$interval" -v sc="$scrape" 'BEGIN {
  printf "engines=%d interval=%s scrape=%s window=%ds kvtop_cpu_s_per_min=%.2f kvtop_peak_rss_mib=%.1f prometheus_cpu_s_per_min=%.2f queries_per_s=%.1f\n",
    n, iv, sc, secs, (u + s) / t * 60 / secs, hwm / 1024, (pu + ps) / t * 60 / secs, (q1 - q0) / secs
}'
echo "header: $rows"
if [ "${RECORD:-0}" = 1 ]; then
  awk -v b="$((b1 - b0))" -v secs="$seconds" -v n="$engines" 'BEGIN {
    printf "recording: %.1f MB per hour (%.1f B per engine-second)\n", b * 3600 / secs / 1e6, b / secs / n
  }'
fi
