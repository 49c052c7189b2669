#!/usr/bin/env bash
# Prometheus replay of one hour for ENGINES engines (issue 15's goal: 100 engines in <= 10 s):
# a TSDB backfilled with promtool from the simulator's metric set (benches/om_from_sim.py, one
# sample every 15 s), a real Prometheus on it, and the wall time, CPU and peak RSS of
# `kvtop check --prometheus URL --from START --to START+1h --step 15s -o json`. Uses the kvtop
# binary already built (KVTOP_BIN, default target/release/kvtop) and the Prometheus on PATH
# (/opt/kvtop-ci/prometheus/usr/bin in CI); builds nothing.
#
#   benches/prometheus_replay.sh [ENGINES] [RUNS]
#   KEEP=DIR benches/prometheus_replay.sh …   # the TSDB built once in DIR and read again after
#                                             # (to compare binaries on the same data)
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${1:-100}
runs=${2:-3}
bin=${KVTOP_BIN:-target/release/kvtop}
export PATH=/opt/kvtop-ci/prometheus/usr/bin:$PATH
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
export HOME=$work XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state XDG_DATA_HOME=$work/data
unset KVTOP_CONFIG

tsdb=${KEEP:-$work}/tsdb
if [ -n "${KEEP:-}" ] && [ -f "$KEEP/start" ] && [ -d "$tsdb" ]; then
  start=$(cat "$KEEP/start")
  echo "TSDB kept in $KEEP (from $(date -u -d "@$start" +%H:%M:%SZ))" >&2
else
  "$bin" sim --engines "$engines" >"$work/sim.txt" 2>&1 &
  pids+=($!)
  until grep -q 'Ctrl-C' "$work/sim.txt"; do sleep 0.2; done
  now=$(date +%s)
  start=$(( (now - 7200) / 60 * 60 ))
  python3 benches/om_from_sim.py "$work/sim.txt" "$start" 3600 15 "$work/data.om"
  kill "${pids[0]}"
  echo "OpenMetrics: $(du -h "$work/data.om" | cut -f1)" >&2
  mkdir -p "$(dirname "$tsdb")"
  promtool tsdb create-blocks-from openmetrics "$work/data.om" "$tsdb" >/dev/null
  rm "$work/data.om"
  [ -n "${KEEP:-}" ] && echo "$start" >"$KEEP/start"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 15s\n  query_log_file: %s\n' "$work/query.log" >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$tsdb" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" >"$work/prom.log" 2>&1 &
pids+=($!)
until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; do sleep 0.2; done

from=$(date -u -d "@$start" +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u -d "@$((start + 3600))" +%Y-%m-%dT%H:%M:%SZ)
printf '%-4s %-8s %-8s %-8s %-8s %s\n' run wall_s user_s sys_s rss_mib "cycles engines_up"
for run in $(seq "$runs"); do
  /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" \
    "$bin" check --prometheus "http://127.0.0.1:$port" --from "$from" --to "$to" --step 15s \
    -o json >"$work/out.json" 2>"$work/err.txt" || true
  # The last line: /usr/bin/time says first when the check exited non-zero (findings).
  read -r wall user sys rss < <(tail -1 "$work/time.txt")
  summary=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); o=d["observed"]; print(o["cycles"], o["up"])' "$work/out.json")
  printf '%-4s %-8s %-8s %-8s %-8s %s\n' "$run" "$wall" "$user" "$sys" "$((rss / 1024))" "$summary"
done

# Where Prometheus spent the time: the slowest range queries of the last run (its query log).
python3 - "$work/query.log" <<'PY'
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
total = sum(e["stats"]["timings"]["execTotalTime"] for e in entries)
print(f"{len(entries)} queries over the runs, {total:.1f} s of Prometheus execution; slowest:")
for e in sorted(entries, key=lambda e: -e["stats"]["timings"]["execTotalTime"])[:6]:
    t = e["stats"]["timings"]
    print(f'  {t["execTotalTime"]:7.2f} s (queue {t["execQueueTime"]:.2f})  {e["params"]["query"][:110]}')
PY
