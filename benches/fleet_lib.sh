# Shared by the whole-process benchmarks (fleet_1000.sh, soak.sh, whole_process.sh,
# symbol_order.sh); sourced, not run.
# Expects: bin (the kvtop binary), work (a scratch directory).

# Start `kvtop sim` with the given arguments in the background; sets sim_pid and waits until it
# has listed EXPECTED endpoints in $work/sim.out.
start_sim() {
  # The simulator runs from its own copy of the binary: sharing the console's file would let the
  # console map the simulator's code pages (fault-around) and count them in its RSS.
  cp "$bin" "$work/kvtop-sim"
  run_sim "$@"
}

# start_sim with the copy already at $work/kvtop-sim.
run_sim() {
  local expected=$1
  shift
  "$work/kvtop-sim" sim "$@" >"$work/sim.out" 2>"$work/sim.err" &
  sim_pid=$!
  for _ in $(seq 600); do
    [ "$(grep -c 'http://127.0.0.1' "$work/sim.out" || true)" -ge "$expected" ] && return 0
    if ! kill -0 "$sim_pid" 2>/dev/null; then
      echo "kvtop sim stopped:" >&2
      cat "$work/sim.err" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "kvtop sim did not list $expected endpoints in 60 s" >&2
  exit 1
}

# The engines' metrics URLs, one per line (dcgm-exporters left out).
engine_urls() {
  grep -E '^vllm-' "$work/sim.out" | grep -o 'http://127.0.0.1:[0-9]*/metrics'
}

# A console config scraping every engine URL on stdin at INTERVAL, with optional extra TOML.
write_console_config() {
  local interval=$1 extra=${2:-}
  {
    echo "[scrape]"
    echo "interval = \"$interval\""
    echo "timeout = \"$interval\""
    [ -n "$extra" ] && printf '%s\n' "$extra"
    while read -r url; do
      printf '[[targets]]\nurl = "%s"\n' "$url"
    done
  } >"$work/kvtop.toml"
}

# A Prometheus config scraping every engine URL on stdin every INTERVAL.
write_prometheus_config() {
  local interval=$1
  {
    echo "global: {scrape_interval: $interval, scrape_timeout: $interval}"
    echo "scrape_configs:"
    echo "  - job_name: vllm"
    echo "    static_configs:"
    echo "      - targets:"
    while read -r url; do
      hp=${url#http://}
      echo "          - '${hp%/metrics}'"
    done
  } >"$work/prometheus.yml"
}

# Start Prometheus on the config above with its own TSDB under $work; sets prom_pid, prom_url.
start_prometheus() {
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address=127.0.0.1:0 >/dev/null 2>"$work/prom.log" &
  prom_pid=$!
  for _ in $(seq 100); do
    grep -q 'Listening on' "$work/prom.log" && break
    sleep 0.1
  done
  local port
  port=$(grep -o 'Listening on" address=127.0.0.1:[0-9]*' "$work/prom.log" | sed 's/.*://' || true)
  if [ -z "$port" ]; then
    echo "prometheus did not start:" >&2
    tail -5 "$work/prom.log" >&2
    exit 1
  fi
  prom_url="http://127.0.0.1:$port"
}

# The value of a scalar-valued PromQL query, now.
prometheus_value() {
  curl -s "$prom_url/api/v1/query" --data-urlencode "query=$1" |
    grep -o '"value":\[[^]]*\]' | grep -o '"[0-9.e+-]*"\]' | tr -d '"]' || echo 0
}

# utime + stime of PID in clock ticks.
cpu_ticks() {
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# A /proc/PID/status field in KiB (VmRSS, VmHWM).
status_kib() {
  awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"
}

# Open file descriptors of PID.
fd_count() {
  find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

# Load average over the last minute.
load1() {
  cut -d' ' -f1 /proc/loadavg
}
